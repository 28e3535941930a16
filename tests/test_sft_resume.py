"""The SFT warm start's speed levers and its checkpoints, on the tiny random Llama and real
heuristic audits: an interrupted run resumed from OUT/sft-checkpoint ends bit-identical to
the uninterrupted one; the loss over kept logits is the loss over all of them; `lora.top_layers`
adapts only the top layers and gradients stop below them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs the train extra (pip install 'auditrl[train]')")
torch = pytest.importorskip("torch")

from hf_fixtures import packaged_tokenizer  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from training_helpers import SMOKE, run_audit_cli  # noqa: E402

from scaffold.specs import SpecError  # noqa: E402
from training.config import load_config  # noqa: E402
from training.metrics import read_metrics  # noqa: E402
from training.policy import load_base, lora_config  # noqa: E402
from training.sft import SftRow, run_sft, sft_loss  # noqa: E402


@pytest.fixture(scope="module")
def heuristic_audits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real 2-turn heuristic audits of the seeded quirks, graded by the lexical judge."""
    packaged_tokenizer()
    tmp = tmp_path_factory.mktemp("sft-data")
    data = tmp / "heuristic"
    made = run_audit_cli("eval", "--suite", "seeded-quirks", "--auditor", "heuristic", "--max-turns", "2", "--repeats", "1",
                  "--judge", "lexical", "--out", str(data), "--store", f"sqlite:///{tmp / 'h.db'}")
    assert made.returncode == 0, made.stderr[-2000:]
    return data


def _sft_config(data: Path, **changes: object) -> object:
    return load_config(SMOKE, {"stage": "sft", "sft.data": [str(data)], "sft.keep": "all", "sft.epochs": 2,
                               "sft.lr": 0.005, "sft.save_every": 4, "eval.at_end": False,
                               # the smoke grammar (48 tokens, one call) cannot write the heuristic's turns
                               "policy.constrained": False, **changes})


class _Stop(Exception):
    pass


def test_an_interrupted_sft_run_resumes_to_the_same_adapter(heuristic_audits: Path, tmp_path: Path) -> None:
    config = _sft_config(heuristic_audits)
    straight = run_sft(config, tmp_path / "straight", progress=lambda *_: None)
    losses = [r["loss"] for r in read_metrics(tmp_path / "straight") if r["stage"] == "sft"]
    total = len(losses)
    assert total >= 10  # two epochs over the train and control audits

    def crash_at_7(step: int, _total: int, _line: str) -> None:
        if step == 7:
            raise _Stop  # after step 7's update; the last checkpoint is step 4's
    with pytest.raises(_Stop):
        run_sft(config, tmp_path / "split", progress=crash_at_7)
    assert (tmp_path / "split" / "sft-checkpoint" / "optimizer.pt").exists()
    with pytest.raises(SpecError, match="--resume"):  # never mixes two runs in one directory
        run_sft(config, tmp_path / "split", progress=lambda *_: None)
    resumed = run_sft(config, tmp_path / "split", resume=True, progress=lambda *_: None)

    records = [r for r in read_metrics(tmp_path / "split") if r["stage"] == "sft"]
    assert [r["step"] for r in records] == list(range(1, total + 1))  # steps 5-7 were dropped and replayed once
    assert [r["loss"] for r in records] == losses
    a = load_file(straight / "adapter_model.safetensors")
    b = load_file(resumed / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # same rows, same optimizer state


def test_resuming_over_other_data_is_refused(heuristic_audits: Path, tmp_path: Path) -> None:
    config = _sft_config(heuristic_audits, **{"sft.epochs": 1})
    run_sft(config, tmp_path / "run", progress=lambda *_: None)
    fewer = _sft_config(heuristic_audits, **{"sft.epochs": 1, "sft.max_audits": 2})
    with pytest.raises(SpecError, match="other transcripts"):
        run_sft(fewer, tmp_path / "run", resume=True, progress=lambda *_: None)


def test_the_cli_resumes_an_sft_run(heuristic_audits: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    sets = ["--set", f"sft.data=[{heuristic_audits}]", "--set", "sft.keep=all", "--set", "sft.epochs=1",
            "--set", "eval.at_end=false", "--set", "policy.constrained=false"]
    first = run_audit_cli("train", "--config", str(SMOKE), "--stage", "sft", "--out", str(out), *sets)
    assert first.returncode == 0, first.stderr[-3000:]
    again = run_audit_cli("train", "--resume", str(out))  # finished: nothing left but writing final
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed after step" in again.stdout
    steps = [r["step"] for r in read_metrics(out) if r["stage"] == "sft"]
    assert steps == sorted(set(steps))  # no step written twice


def test_the_loss_over_kept_logits_is_the_loss_over_all() -> None:
    config = load_config(SMOKE)
    model, _ = load_base(config)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (40,), generator=gen).tolist()
    mask = [0] * 12 + [1] * 9 + [0] * 7 + [1] * 12
    row = SftRow(run_id="r", input_ids=ids, loss_mask=mask, turns=2)
    kept = sft_loss(model, row, torch.device("cpu"))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]
    keep = torch.tensor(mask[1:], dtype=torch.bool)
    full = torch.nn.functional.cross_entropy(logits[keep], torch.tensor(ids[1:])[keep])
    assert torch.allclose(kept, full, atol=1e-6)
    assert not torch.allclose(kept, torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:])))


def test_top_layers_adapts_only_the_top_layers_and_backward_stops_below() -> None:
    from peft import get_peft_model

    config = load_config(SMOKE, {"lora.top_layers": 1})
    model, _ = load_base(config)
    layers = model.config.num_hidden_layers
    assert layers >= 2
    model = get_peft_model(model, lora_config(config, model))
    adapted = {name.split(".layers.")[1].split(".")[0] for name, _ in model.named_parameters() if "lora_" in name}
    assert adapted == {str(layers - 1)}
    seen: list[int] = []
    model.base_model.model.model.layers[0].register_full_backward_hook(lambda *_: seen.append(0))
    row = SftRow(run_id="r", input_ids=list(range(5, 25)), loss_mask=[0] * 10 + [1] * 10, turns=1)
    sft_loss(model, row, torch.device("cpu")).backward()
    assert seen == []  # no gradient flowed into the frozen bottom layer
    # (lora_B: at init B is zero, so only its gradient is nonzero)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "lora_B" in n)
    with pytest.raises(SpecError, match="top_layers"):
        too_many = load_config(SMOKE, {"lora.top_layers": layers + 1})
        lora_config(too_many, load_base(too_many)[0])
