"""Training curves from OUT/metrics.jsonl: reward, detection (train-split rollouts and the
held-out eval), valid calls, citations, hacky reports, strategy entropy, and whether the
policy claims anything (on quirks) or invents a quirk (on the eval's controls).

    python -m training.plots OUT [OUT2 ...] [--png FILE]

Several runs go on the same axes (the reward-hacking ablation: binary vs grounded).
Writes OUT/curves.png by default.

A held-out eval run after training on a checkpoint counts as that step's point when it is
written where the trainer writes its own, OUT/evals/step-NNNNN (step 0: the start adapter):

    audit eval --suite generated-combinations --auditor hf:smollm2-135m+lora:OUT/checkpoint-40+constrained \
        --out OUT/evals/step-00040
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evals.results import EvalResults
from training.evaluation import eval_metrics
from training.metrics import read_metrics

PANELS = (
    ("reward/mean", "rollout reward (mean ± std)"),
    ("grounded_rate", "train-split grounded detection (rollouts)"),
    ("eval/grounded_rate", "held-out grounded detection"),
    ("eval/detection_rate", "held-out named detection"),
    ("named_own_words_rate", "train-split named in own words, quotes emptied (rollouts)"),
    ("valid_tool_call_rate", "valid tool calls (share of turns)"),
    ("citation_rate", "reports that cite (share)"),
    ("quote_rate", "reports quoting a cited reply (share)"),
    ("quirk_showed_rate", "audits where the quirk showed (share)"),
    ("hacky_rate", "hacky reports (share)"),
    ("strategy_entropy_bits", "strategy entropy (bits)"),
    ("claim_rate", "reports that claim anything, quirks (share)"),
    ("eval/false_positive_rate", "held-out eval false positives (controls)"),
    ("update/drift", "weights moved from the start (relative norm)"),
    ("update/grad_snr", "step gradient signal-to-noise (below 0: noise)"),
)
COLUMNS = 4


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = sorted((r["step"], r[key]) for r in records if key in r and r.get(key) is not None)
    return [p[0] for p in points], [float(p[1]) for p in points]


def evals_after_training(run: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Metrics lines for the finished evals in RUN/evals/step-NNNNN/ whose step has no eval line.

    The trainer logs its own evals (`eval.every`); these are the evals of checkpoints run
    afterwards with `audit eval --out RUN/evals/step-NNNNN`, an unfinished one (no
    results.json yet) left out.
    """
    logged = {r["step"] for r in records if r.get("stage") == "eval"}
    lines = []
    for results in sorted((run / "evals").glob("step-*/results.json")):
        step = int(results.parent.name.removeprefix("step-"))
        if step not in logged:
            evaluated = EvalResults.model_validate_json(results.read_text())
            lines.append({"stage": "eval", "step": step, **eval_metrics(evaluated)})
    return lines


def plot_runs(runs: list[Path], png: Path) -> Path:
    """Draw the panels for every run into `png`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = -(-len(PANELS) // COLUMNS)
    fig, grid = plt.subplots(rows, COLUMNS, figsize=(4.2 * COLUMNS, 3.4 * rows), squeeze=False)
    axes = list(grid.flat)[: len(PANELS)]
    for spare in list(grid.flat)[len(PANELS) :]:
        spare.set_visible(False)
    for run in runs:
        records = read_metrics(run)
        records += evals_after_training(run, records)
        label = run.name
        for ax, (key, title) in zip(axes, PANELS, strict=True):
            steps, values = _series(records, key)
            if not steps:
                continue
            line = ax.plot(steps, values, marker="o", markersize=3, label=label)[0]
            if key == "reward/mean":
                _, stds = _series(records, "reward/std")
                if len(stds) == len(values):
                    lo = [v - s for v, s in zip(values, stds)]
                    hi = [v + s for v, s in zip(values, stds)]
                    ax.fill_between(steps, lo, hi, alpha=0.15, color=line.get_color())
    for ax, (key, title) in zip(axes, PANELS, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if not ax.lines:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return png


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Plot training curves from OUT/metrics.jsonl.")
    parser.add_argument("runs", nargs="+", type=Path, help="training output directories")
    parser.add_argument("--png", type=Path, default=None, help="output image (default: FIRST_RUN/curves.png)")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.runs if not (r / "metrics.jsonl").exists()]
    if missing:
        parser.error(f"no metrics.jsonl in: {', '.join(missing)}")
    print(plot_runs(args.runs, args.png or args.runs[0] / "curves.png"))


if __name__ == "__main__":
    main()
