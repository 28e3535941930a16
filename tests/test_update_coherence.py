"""benchmarks/update_coherence.py: a run's checkpoint displacements against Adam on noise."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[1]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_coherence", ROOT / "benchmarks" / "update_coherence.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(directory: Path, weights: torch.Tensor) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    save_file({"layer.lora_A.weight": weights[:2].clone(), "layer.lora_B.weight": weights[2:].clone()}, str(directory / "adapter_model.safetensors"))


def test_window_cosines_are_exact() -> None:
    coherence = _module()
    vectors = [torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]), torch.tensor([2.0, 1.0]), torch.tensor([2.0, 1.0])]
    cosines = coherence.window_cosines(vectors)
    assert cosines == {(0, 1): pytest.approx(2**-0.5)}  # the third window did not move: no direction to compare


def test_noise_gives_momentum_cosines_and_signal_raises_them() -> None:
    coherence = _module()
    noise = coherence.adam_null([4, 4], signal=0.0, dim=20_000, trials=2)
    strong = coherence.adam_null([4, 4], signal=3.0, dim=20_000, trials=2)
    assert 0.4 < noise[(0, 1)] < 0.7  # momentum alone correlates the windows of pure noise
    assert strong[(0, 1)] > 0.9  # a shared direction three times the noise: nearly parallel


def test_the_command_compares_a_run_with_the_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coherence = _module()
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(ROOT / "training/runs/cpu-smollm2-situations-lr3e4/grpo-config.yaml", run / "config.yaml")  # 8 micro-batches a step
    skipped = {1: 0, 2: 8, 3: 0, 4: 0}  # step 2 skipped every micro-batch: no update
    (run / "metrics.jsonl").write_text("".join(json.dumps({"stage": "grpo", "step": s, "update/skipped_micro_batches": k}) + "\n" for s, k in skipped.items()))
    _save(tmp_path / "start", torch.tensor([1.0, 1.0, 0.0, 0.0]))
    _save(run / "checkpoint-2", torch.tensor([2.0, 1.0, 0.0, 0.0]))
    _save(run / "checkpoint-4", torch.tensor([3.0, 1.0, 0.0, 0.0]))  # the same direction again
    assert coherence.main([str(tmp_path / "start"), str(run), "--dim", "2000", "--trials", "1"]) == 0
    out = capsys.readouterr().out
    assert "0: steps 1-2 (1 updates); 1: steps 3-4 (2 updates)" in out
    assert "| 0 vs 1 | 1.000 |" in out
    (run / "metrics.jsonl").write_text(json.dumps({"stage": "grpo", "step": 1}) + "\n")
    assert coherence.main([str(tmp_path / "start"), str(run)]) == 2
    assert "no line for steps [2]" in capsys.readouterr().err
    assert coherence.main([str(tmp_path / "missing"), str(tmp_path / "start")]) == 2
    assert "no checkpoint-N" in capsys.readouterr().err
