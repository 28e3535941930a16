"""The gradient noise scale of a step, from its micro-batches (training/gradient_noise.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from training.gradient_noise import GradientNoise, flat_gradients, pooled_noise_scale


def _accumulate(samples: list[torch.Tensor], skipped: int = 0) -> tuple[dict[str, float], torch.Tensor]:
    """Back-propagate one loss per sample through a linear model, as gradient accumulation does
    (each scaled by 1/n), observing after each; `skipped` micro-batches add no gradient."""
    model = torch.nn.Linear(3, 1, bias=False)
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)  # not the optimizer's: not measured
    model.register_parameter("frozen", frozen)
    noise = GradientNoise()
    n = len(samples) + skipped
    for _ in range(skipped):  # an all-zero-advantage micro-batch: no backward pass, the gradient unchanged
        noise.observe(model)
    for sample in samples:
        (model.weight[0] * sample).sum().div(n).backward()  # d/dw = sample / n
        noise.observe(model)
    return noise.summary(), flat_gradients(model)


def test_the_estimate_matches_the_samples_spread_and_mean() -> None:
    samples = [torch.tensor([1.0, 2.0, 0.0]), torch.tensor([3.0, 0.0, -1.0]), torch.tensor([2.0, 1.0, 4.0])]
    measured, gradient = _accumulate(samples)
    stacked = torch.stack(samples)
    mean = stacked.mean(0)
    assert torch.allclose(gradient, mean)  # the accumulated gradient is the samples' mean
    trace = float(stacked.var(0, unbiased=True).sum())
    signal = float(mean.pow(2).sum()) - trace / 3
    assert measured["update/grad_noise_trace"] == pytest.approx(trace)
    assert measured["update/grad_signal_sq"] == pytest.approx(signal)
    assert measured["update/grad_snr"] == pytest.approx(signal / (trace / 3))
    assert measured["update/noise_scale_rows"] == pytest.approx(trace / signal)


def test_cancelling_samples_are_all_noise_and_identical_ones_all_signal() -> None:
    v = torch.tensor([1.0, -2.0, 2.0])
    noise_only, gradient = _accumulate([v, -v])
    assert not gradient.any()
    assert noise_only["update/grad_snr"] == pytest.approx(-1.0)  # below 0: the step's direction is noise
    assert "update/noise_scale_rows" not in noise_only  # no signal: no finite batch would do
    signal_only, _ = _accumulate([v, v])
    assert signal_only["update/grad_noise_trace"] == 0 and "update/grad_snr" not in signal_only
    assert signal_only["update/grad_signal_sq"] == pytest.approx(9.0) and signal_only["update/noise_scale_rows"] == 0


def test_skipped_micro_batches_are_samples_of_zero() -> None:
    v = torch.tensor([2.0, 0.0, 0.0])
    measured, _ = _accumulate([v], skipped=1)  # samples v and 0: mean v/2, variance |v|²/2
    assert measured["update/grad_noise_trace"] == pytest.approx(2.0)
    assert measured["update/grad_signal_sq"] == pytest.approx(1.0 - 2.0 / 2)


def test_a_step_with_no_gradient_or_one_sample_reports_nothing_and_the_next_starts_fresh() -> None:
    assert _accumulate([], skipped=3)[0] == {}
    assert _accumulate([torch.tensor([1.0, 1.0, 1.0])])[0] == {}  # one sample has no spread
    model = torch.nn.Linear(2, 1, bias=False)
    noise = GradientNoise()
    for sample in ([1.0, 0.0], [0.0, 1.0]):
        (model.weight[0] * torch.tensor(sample)).sum().backward()
        noise.observe(model)
    first = noise.summary()
    model.zero_grad(set_to_none=True)  # the optimizer stepped
    for sample in ([1.0, 0.0], [0.0, 1.0]):
        (model.weight[0] * torch.tensor(sample)).sum().backward()
        noise.observe(model)
    assert noise.summary() == first  # not measured against the last step's gradient
    with pytest.raises(ValueError, match="no trainable parameters"):
        flat_gradients(torch.nn.Linear(2, 1).requires_grad_(False))


def test_pooling_sums_traces_and_signals_over_the_steps_that_measured() -> None:
    steps = [
        {"update/grad_noise_trace": 30.0, "update/grad_signal_sq": 1.0},
        {"update/grad_noise_trace": 10.0, "update/grad_signal_sq": -0.5},
        {"update/skipped_micro_batches": 32},  # a skipped step measured nothing
    ]
    assert pooled_noise_scale(steps) == {"steps": 2, "snr_per_row": pytest.approx(0.5 / 40), "noise_scale_rows": pytest.approx(80.0)}
    assert pooled_noise_scale([]) == {"steps": 0}


def test_the_command_pools_a_runs_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from training.gradient_noise import main

    lines = [
        {"stage": "grpo", "step": 1, "update/grad_noise_trace": 30.0, "update/grad_signal_sq": 1.0, "update/grad_snr": 1.07},
        {"stage": "grpo", "step": 2, "update/skipped_micro_batches": 32},
        {"stage": "grpo", "step": 3, "update/grad_noise_trace": 10.0, "update/grad_signal_sq": -0.5, "update/grad_snr": -1.6},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 steps measured; signal-to-noise per rollout 0.0125; rollouts a step needs for signal = noise: 80" in out
    assert "step 3: signal-to-noise -1.6" in out
    assert main([str(tmp_path), "--to", "2"]) == 0 and "rollouts a step needs for signal = noise: 30" in capsys.readouterr().out
    assert main([str(tmp_path), "--from", "2", "--to", "2"]) == 0 and "none of 1 steps" in capsys.readouterr().out
    assert main([str(tmp_path), "--from", "9"]) == 2 and "no GRPO step" in capsys.readouterr().err
