"""How far a run's trainable weights moved (training/adapter_drift.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from training.adapter_drift import START_FILE, AdapterDrift, adapter_distance, main

REPO = Path(__file__).resolve().parents[1]
WARM_START = REPO / "training/runs/cpu-smollm2-situations-silent/warm-start"
GROUNDED_STEP_40 = REPO / "training/runs/cpu-smollm2-situations-grounded-limit/step-40"


def _module() -> torch.nn.Module:
    module = torch.nn.Linear(3, 2)
    module.bias.requires_grad_(False)  # frozen: not the optimizer's, so not measured
    with torch.no_grad():
        module.weight.copy_(torch.tensor([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]]))  # norm 5
    return module


def test_drift_is_relative_to_the_start_and_step_change_to_the_last_measure() -> None:
    drift = AdapterDrift({"w": torch.tensor([3.0, 4.0])})
    first = drift.measure_weights({"w": torch.tensor([3.0, 4.5])})
    assert first == {"update/drift": 0.1, "update/max_abs_drift": 0.5, "update/step_change": 0.1}
    second = drift.measure_weights({"w": torch.tensor([3.0, 5.0])})
    assert second == {"update/drift": 0.2, "update/max_abs_drift": 1.0, "update/step_change": 0.1}
    with pytest.raises(ValueError, match="changed during the run"):
        drift.measure_weights({"v": torch.tensor([3.0, 5.0])})


def test_a_resumed_run_measures_from_its_saved_start(tmp_path: Path) -> None:
    module = _module()
    AdapterDrift.for_run(module, tmp_path)
    assert (tmp_path / START_FILE).is_file()
    with torch.no_grad():
        module.weight[0, 0] = 6.0  # training moved it; the bias is frozen and ignored
        module.bias.fill_(100.0)
    resumed = AdapterDrift.for_run(module, tmp_path, resumed=True)  # as a resume finds OUT
    measured = resumed.measure(module)
    assert measured == {"update/drift": pytest.approx(3 / 5), "update/max_abs_drift": 3.0}  # no step change: unknown
    assert resumed.measure(module)["update/step_change"] == 0.0
    # A run older than the metric has no saved start: the model's weights before the checkpoint loads are it.
    older = tmp_path / "older"
    older.mkdir()
    assert AdapterDrift.for_run(_module(), older, resumed=True).measure(module)["update/drift"] == pytest.approx(3 / 5)
    assert not list(older.glob("*.partial"))
    with pytest.raises(ValueError, match="not this run's start"):
        AdapterDrift.for_run(torch.nn.Linear(2, 2), tmp_path)


def test_saved_adapters_compare_through_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    """The committed grounded run's step 40 against the warm start it began from."""
    assert adapter_distance(WARM_START, WARM_START) == {"update/drift": 0.0, "update/max_abs_drift": 0.0}
    measured = adapter_distance(WARM_START, GROUNDED_STEP_40)
    assert 0 < measured["update/drift"] < 0.05  # seven Adam steps at lr 5e-5 barely moved it
    assert main([str(WARM_START), str(GROUNDED_STEP_40)]) == 0
    assert f"drift {measured['update/drift']:.4f}" in capsys.readouterr().out
    assert main([str(WARM_START), str(WARM_START.parent)]) == 2  # a run directory, not an adapter
    assert "no adapter_model.safetensors" in capsys.readouterr().err
