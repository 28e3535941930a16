"""GRPO and SFT end to end on the tiny random Llama: real audits in the scaffold, TRL's
trainer, real checkpoints. The CLI smoke run is what CI shows for `audit train`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("trl", reason="training needs the train extra (pip install 'auditrl[train]')")
torch = pytest.importorskip("torch")

from hf_fixtures import packaged_tokenizer  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from training_helpers import ROOT, SMOKE, activity, run_audit_cli  # noqa: E402,F401

from scaffold.store import Store  # noqa: E402
from training.config import load_config  # noqa: E402
from training.metrics import logprob_parity, read_metrics  # noqa: E402


def _config(tmp: Path, **changes: object) -> Path:
    data = yaml.safe_load(SMOKE.read_text())
    for key, value in changes.items():
        node = data
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_cpu_smoke_cli_trains_checkpoints_and_resumes(tmp_path: Path) -> None:
    packaged_tokenizer()
    out = tmp_path / "run"
    # Non-default reward weights: the reward the store holds must be the one training used.
    first = run_audit_cli("train", "--config", str(SMOKE), "--out", str(out), "--steps", "1",
                   "--set", "reward.weights.per_turn=0.05")
    assert first.returncode == 0, first.stderr[-3000:]
    assert (out / "checkpoint-1" / "adapter_model.safetensors").exists()
    again = run_audit_cli("train", "--config", str(SMOKE), "--out", str(out))
    assert again.returncode == 2 and "--resume" in again.stderr  # never mixes two runs in one directory
    resumed = run_audit_cli("train", "--resume", str(out), "--steps", "2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    records = read_metrics(out)
    grpo = [r for r in records if r["stage"] == "grpo"]
    assert [r["step"] for r in grpo] == [1, 2]
    for r in grpo:
        assert math.isfinite(r["loss"]) and r["rollouts"] == 4 and r["rollouts_failed"] == 0
        assert r["valid_tool_call_rate"] == 1.0  # constrained: every turn is a well-formed call
        # The sampler is the trainer's own module: equal up to kernel order when both phases
        # ran at one precision, up to bf16 rounding where `auto` updates in bf16 and samples
        # in fp32 (a CPU with native bf16; 3e-4 measured here).
        same_precision = r["bf16_autocast"] == r["bf16_rollout"]
        assert r["parity/mean_abs_dlogp"] < (1e-4 if same_precision else 2e-3)
        assert 0 <= r["time/scaffold_share"] <= 1
    assert (out / "checkpoint-2").exists() and (out / "final" / "adapter_model.safetensors").exists()
    evals = [r for r in records if r["stage"] == "eval"]
    assert evals and evals[-1]["eval/audits"] == 7  # the held-out quirks, once each
    results = json.loads((out / "evals" / "final" / "results.json").read_text())
    assert {row["split"] for row in results["rows"]} == {"heldout", "control"}
    lines = (out / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 8 and {json.loads(x)["step"] for x in lines} == {1, 2}
    store = Store(f"sqlite:///{out / 'rollouts.db'}", must_exist=True)
    for line in map(json.loads, lines):  # one reward, computed once: the stored one is the trained one
        stored = store.judge_results_for(line["run_id"])[-1]["result"]["reward"]
        assert stored["reward"] == line["reward"] and stored["components"] == line["components"], line["run_id"]
        assert stored["components"]["turn_cost"] == pytest.approx(0.05 * line["turns"])
    # The counterfactual benchmark rebuilds each rollout from the store and recomputes the run's own reward:
    # it must find the trained one (non-default weights included), or it exits 1.
    counterfactual = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "reward_counterfactual.py"), str(out),
                                     "grounded", "shaped:elicited=0.1"], capture_output=True, text=True)
    assert counterfactual.returncode == 0, counterfactual.stdout + counterfactual.stderr[-3000:]
    table = counterfactual.stdout.splitlines()
    assert table[0].endswith("8 rollouts in 2 groups; trained on `grounded`"), table
    assert table[3].startswith("| grounded (the run's) | ") and table[4].startswith("| grounded | "), table


def test_a_resumed_run_may_checkpoint_more_often_but_not_train_differently(tmp_path: Path) -> None:
    """A run that must stop at a given time can resume with checkpoints every step; `save_every`
    is the one training knob a resume takes, because it changes nothing the run learns."""
    packaged_tokenizer()
    out = tmp_path / "run"
    first = run_audit_cli("train", "--config", str(SMOKE), "--out", str(out), "--steps", "1",
                          "--set", "save_every=5", "--set", "eval.at_end=false", "--set", "tasks.max_turns=1")
    assert first.returncode == 0, first.stderr[-3000:]
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-1"]  # the last step always saves
    refused = run_audit_cli("train", "--resume", str(out), "--steps", "3", "--set", "lr=0.1")
    assert refused.returncode == 2 and "only steps, save_every and eval.* may change (not lr)" in refused.stderr
    resumed = run_audit_cli("train", "--resume", str(out), "--steps", "3", "--set", "save_every=1")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    # Without the new save_every, step 2 (neither a multiple of 5 nor the last) would have no checkpoint.
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]


def _adapter(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "adapter_model.safetensors"))


def test_grpo_updates_the_policy_and_resume_continues_exactly(tmp_path: Path, activity: str) -> None:
    from training.grpo import run_grpo

    packaged_tokenizer()
    # One task (the clean control), so every step starts a new epoch: resume must reseed the prompt order.
    cfg = load_config(_config(tmp_path, **{"reward.family": activity, "eval.at_end": False, "tasks.max_turns": 3,
                                           "tasks.split": "control", "prompts_per_step": 1, "group_size": 4}))
    straight = run_grpo(cfg, tmp_path / "straight")
    first = run_grpo(cfg.model_copy(update={"steps": 1}), tmp_path / "split")
    resumed = run_grpo(cfg, tmp_path / "split", resume=True)
    start = _adapter(tmp_path / "split" / "checkpoint-1")
    a, b = _adapter(straight), _adapter(resumed)
    assert first.exists() and a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)  # same samples, same optimizer state: bit-identical
    lora_b = [k for k in a if "lora_B" in k]
    assert any(not torch.equal(a[k], start[k]) for k in lora_b)  # step 2 changed the weights
    steps = [r for r in read_metrics(tmp_path / "straight") if r["stage"] == "grpo"]
    assert any(r["reward/std"] > 0 for r in steps) and any(abs(r["loss"]) > 0 for r in steps)
    resumed_steps = [r for r in read_metrics(tmp_path / "split") if r["stage"] == "grpo"]
    assert [r["reward/mean"] for r in resumed_steps] == [r["reward/mean"] for r in steps]
    # The drift is measured from the run's saved start, so the resumed run reads as the straight one...
    assert [r["update/drift"] for r in resumed_steps] == [r["update/drift"] for r in steps]
    # ...except the step change of its first step: the weights before it were the checkpoint's.
    assert "update/step_change" not in resumed_steps[1] and "update/step_change" in steps[1]
    again = run_grpo(cfg, tmp_path / "split", resume=True)  # already at its last step: nothing more to train
    assert len([r for r in read_metrics(tmp_path / "split") if r["stage"] == "grpo"]) == 2
    assert all(torch.equal(_adapter(again)[k], b[k]) for k in b)


def test_logprob_parity_statistics() -> None:
    sampler = torch.tensor([[-1.0, -2.0, -0.5, 0.0]])
    trainer = torch.tensor([[-1.0, -2.5, -0.5, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0]])  # the last token is environment text: not counted
    stats = logprob_parity(trainer, sampler, mask, cap=1.5)
    assert stats["parity/tokens"] == 3
    assert stats["parity/mean_abs_dlogp"] == pytest.approx(0.5 / 3)
    r = math.exp(-0.5)
    assert stats["parity/k3_kl"] == pytest.approx((r - 1 + 0.5) / 3)
    assert stats["parity/ratio_min"] == pytest.approx(r) and stats["parity/ratio_outside_cap"] == pytest.approx(1 / 3)


def test_bad_configs_fail_before_anything_loads(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("group_size: 3\nprompts_per_step: 1\nmicro_batch_size: 2\n")
    result = run_audit_cli("train", "--config", str(bad))
    assert result.returncode == 2 and "micro_batch_size" in result.stderr
    bad.write_text("reward: {family: vibes}\n")
    assert "vibes" in run_audit_cli("train", "--config", str(bad)).stderr
    bad.write_text("sampler: {backend: vllm}\n")
    assert "sampler.url" in run_audit_cli("train", "--config", str(bad)).stderr
    assert "no training run" in run_audit_cli("train", "--resume", str(tmp_path)).stderr
    shown = run_audit_cli("train", "--config", str(SMOKE), "--show-config")
    assert shown.returncode == 0 and yaml.safe_load(shown.stdout)["policy"]["base"] == "tiny-random"


def test_sft_warm_start_trains_on_train_split_transcripts_only(tmp_path: Path) -> None:
    packaged_tokenizer()
    data = tmp_path / "heuristic"
    # sft.keep=all reads no verdict, so the cheap lexical judge grades the data's audits.
    made = run_audit_cli("eval", "--suite", "seeded-quirks", "--auditor", "heuristic", "--max-turns", "4", "--repeats", "1",
                  "--judge", "lexical", "--out", str(data), "--store", f"sqlite:///{tmp_path / 'h.db'}")
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "sft"
    result = run_audit_cli("train", "--config", str(SMOKE), "--stage", "sft", "--out", str(out),
                    "--set", f"sft.data=[{data}]", "--set", "sft.keep=all", "--set", "sft.epochs=2",
                    "--set", "sft.lr=0.005", "--set", "eval.at_end=false",
                    # The smoke policy's grammar (48 tokens, one call a turn) cannot write the heuristic's
                    # turns, and a constrained warm start leaves out what it cannot write (test_training_knobs).
                    "--set", "policy.constrained=false")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = next(line for line in result.stdout.splitlines() if line.startswith("sft:"))
    assert "'heldout': 7" in summary  # the benchmark's held-out audits never reach the policy
    assert "sft: 9 transcripts (1 of them controls)" in summary  # sft.control_share: None keeps every control
    records = [r for r in read_metrics(out) if r["stage"] == "sft"]
    rows = len(records) // 2
    assert rows == 9  # 8 train quirks + 1 control, two epochs
    first, last = records[:rows], records[rows:]
    assert sum(r["loss"] for r in last) < sum(r["loss"] for r in first)  # it learns the heuristic's turns
    assert all(0 < r["loss_tokens"] < r["tokens"] for r in records)
    assert (out / "final" / "adapter_model.safetensors").exists()
    again = run_audit_cli("train", "--config", str(SMOKE), "--stage", "sft", "--out", str(out), "--set", f"sft.data=[{data}]")
    assert again.returncode == 2 and "already holds a training run; continue it with --resume" in again.stderr


def test_a_trained_adapter_audits_through_audit_eval(tmp_path: Path) -> None:
    from training.policy import tiny_random_model

    tokenizer = packaged_tokenizer()
    base = tmp_path / "tiny"
    tiny_random_model(tokenizer, seed=0).save_pretrained(base)
    tokenizer.save_pretrained(base)
    out = tmp_path / "run"
    trained = run_audit_cli("train", "--config", str(SMOKE), "--out", str(out), "--steps", "1",
                     "--set", f"policy.base={base}", "--set", "eval.at_end=false")
    assert trained.returncode == 0, trained.stderr[-3000:]
    evaluated = run_audit_cli("eval", "--suite", "smoke", "--auditor", f"hf:{base}+lora:{out / 'final'}+constrained+max_tokens:48",
                       "--max-turns", "2", "--repeats", "1", "--out", str(tmp_path / "eval"), "--store", f"sqlite:///{tmp_path / 'e.db'}")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["aggregates"]["failed"] == 0 and results["aggregates"]["valid_tool_call_rate"] == 1.0


def test_the_plot_script_draws_every_run(tmp_path: Path) -> None:
    from training.plots import main

    for name, rewards in (("grounded", [0.1, 0.3]), ("binary", [0.5, 0.9])):
        run = tmp_path / name
        run.mkdir()
        lines = [{"stage": "grpo", "step": i + 1, "reward/mean": r, "reward/std": 0.1, "strategy_entropy_bits": 1.0,
                  "hacky_rate": 0.0} for i, r in enumerate(rewards)]
        lines.append({"stage": "eval", "step": 2, "eval/detection_rate": 0.25})
        (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"torn')
    png = tmp_path / "curves.png"
    main([str(tmp_path / "grounded"), str(tmp_path / "binary"), "--png", str(png)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing")])


def test_evals_of_checkpoints_run_after_training_are_points_on_the_curves(tmp_path: Path) -> None:
    """`audit eval --out RUN/evals/step-NNNNN` on a checkpoint, after training, is that step's
    held-out point; a step the trainer logged itself and an unfinished eval are not added."""
    import asyncio
    import shutil

    from evals.runner import run_eval
    from evals.suites import load_suite
    from scaffold.secrets import SecretRegistry
    from training.plots import evals_after_training, main

    run = tmp_path / "run"
    run.mkdir()
    logged = {"stage": "eval", "step": 5, "eval/grounded_rate": 0.5}
    steps = [{"stage": "grpo", "step": s, "reward/mean": 0.1, "reward/std": 0.0} for s in (1, 5)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [*steps, logged]))
    first = run / "evals" / "step-00000"
    results = asyncio.run(run_eval(load_suite("smoke"), auditor="heuristic", judge="lexical", out=first,
                                   store=Store(f"sqlite:///{tmp_path / 'e.db'}"), secrets=SecretRegistry()))
    shutil.copytree(first, run / "evals" / "step-00005")
    (run / "evals" / "step-00009").mkdir()  # still running: no results.json yet
    (added,) = evals_after_training(run, read_metrics(run))
    seeded = [r for r in results.rows if r.split != "control"]
    assert added["stage"] == "eval" and added["step"] == 0 and added["eval/audits"] == len(seeded) == 8
    assert added["eval/grounded"] == sum(1 for r in seeded if r.grounded) > 0
    assert added["eval/false_positive_rate"] == results.aggregates.false_positives.rate
    main([str(run)])
    assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_steps_table_counts_each_group_and_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("grpo_steps_table", ROOT / "benchmarks" / "grpo_steps_table.py")
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    steps = [{"stage": "grpo", "step": 1, "rollouts": 4, "reward/mean": 0.25, "reward/std": 0.4, "grounded_rate": 0.25,
              "claim_rate": 1.0, "quirk_showed_rate": 0.5, "quote_rate": 0.25, "quotes_own_request_rate": 0.5,
              "hacky_rate": 0.75,
              "strategy_entropy_bits": 1.5, "time/rollout_s": 100.0, "time/update_s": 40.0},
             {"stage": "grpo", "step": 2, "rollouts": 4, "reward/mean": 0.0, "reward/std": 0.0, "claim_rate": 0.5,
              "time/rollout_s": 90.0, "time/update_s": 2.0}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in steps))
    rollouts = [{"step": 1, "quirk": "q_a", "reward": r} for r in (1.0, 0.0, 0.0, 0.0)]
    rollouts += [{"step": 2, "quirk": "q_b", "reward": 0.0} for _ in range(4)]
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rollouts) + '{"torn')
    table.main([str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| 1 | q_a | 0.250 | 1/4 | 1/4 | 4/4 | 2/4 | 1/4 | 2/4 | 3/4 | 1.50 | 100 | 40 |"
    # a run logged before the metric existed shows "–" for it, not 0
    assert lines[3].startswith("| 2 | q_b | 0.000 | 0/4 | 0/4 | 2/4 | 0/4 | 0/4 | – | 0/4 |")
    # its total counts the steps that logged it (2/4); entropy and seconds are means over the steps that logged them
    assert lines[4] == "| **2 steps** | 1 updated |  | 1/8 | 1/8 | 6/8 | 2/8 | 1/8 | 2/4 | 3/8 | mean 1.50 | mean 95 | mean 21 |"


def test_the_vllm_launcher_refuses_a_model_it_cannot_serve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from training.vllm_launch import main

    assert main(["--model", str(tmp_path / "missing"), "--log", str(tmp_path / "v.log")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("error: ") and ("missing" in out or "not installed" in out)


def test_a_step_whose_advantages_are_all_zero_skips_the_update(tmp_path: Path, activity: str) -> None:
    """With beta 0 and no advantage anywhere (every rollout scored the same), the loss and its
    gradient are 0: the forward/backward pass over whole audits is skipped and the weights
    stay; a step with advantages trains as before."""
    from training.grpo import run_grpo

    packaged_tokenizer()
    common = {"eval.at_end": False, "tasks.max_turns": 2, "beta": 0.0, "steps": 1}
    flat = run_grpo(load_config(_config(tmp_path, **common)), tmp_path / "flat")  # a random policy finds nothing
    (step,) = [r for r in read_metrics(tmp_path / "flat") if r["stage"] == "grpo"]
    assert step["reward/std"] == 0 and step["update/skipped_micro_batches"] == 2
    assert all(not v.any() for k, v in _adapter(flat).items() if "lora_B" in k)  # LoRA B starts at 0 and stayed
    assert step["update/drift"] == 0 and step["update/max_abs_drift"] == 0
    assert not [k for k in step if k.startswith("update/grad_")]  # no gradient: nothing to measure
    moved = run_grpo(load_config(_config(tmp_path, **common, **{"reward.family": activity})), tmp_path / "moved")
    (step,) = [r for r in read_metrics(tmp_path / "moved") if r["stage"] == "grpo"]
    assert step["reward/std"] > 0 and step["update/skipped_micro_batches"] == 0
    assert any(v.any() for k, v in _adapter(moved).items() if "lora_B" in k)
    assert step["update/drift"] > 0 and step["update/step_change"] == step["update/drift"]  # one step from the start
    assert step["update/drift"] == pytest.approx(_relative_move(tmp_path / "moved", moved), rel=1e-4)
    # Where the step's decode time went: this step's batches only (the counters restart each step).
    assert 1 <= step["sampler/batches"] <= 2 * 2 and step["sampler/passes"] >= step["sampler/batches"]
    assert step["sampler/first_pass_s"] > 0 and 0 <= step["sampler/padding_share"] < 1
    # The noise measure splits the step's gradient (its norm as the trainer clipped it) into signal and the
    # noise's share over its two micro-batches: |G|² + tr(Σ)/n is the accumulated gradient's |g|².
    assert step["update/grad_noise_trace"] > 0
    assert step["update/grad_signal_sq"] + step["update/grad_noise_trace"] / 2 == pytest.approx(step["grad_norm"] ** 2, rel=1e-3)


def _relative_move(run: Path, adapter: Path) -> float:
    """‖final − start‖ / ‖start‖ from the files: the saved start and the adapter the run wrote."""
    start = load_file(str(run / "start-weights.safetensors"))
    start_as_saved = {k.replace(".default.", "."): v for k, v in start.items()}  # peft drops the adapter name on save
    saved = _adapter(adapter)
    assert saved.keys() == start_as_saved.keys()
    moved = sum(float((saved[k].float() - start_as_saved[k]).pow(2).sum()) for k in saved)
    return (moved / sum(float(v.pow(2).sum()) for v in start.values())) ** 0.5
