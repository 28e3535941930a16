"""The report's plots, as PNG bytes (matplotlib, Agg backend: no display needed).

Every plot shows uncertainty: detection rates carry their Wilson 95% intervals.
"""

from __future__ import annotations

import io
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: reports are written on machines without a display

import matplotlib.pyplot as plt  # noqa: E402

from evals.results import EvalResults, Rate  # noqa: E402

SPLIT_COLOURS = {"train": "#3b6ea8", "heldout": "#d9822b", "control": "#6b6b6b"}


def figure_png(fig: plt.Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (closed after): what every report inlines or saves."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _err(rate: Rate) -> tuple[float, float]:
    value = rate.rate or 0.0
    # Wilson's bounds can sit a rounding error past the rate (5e-17 above 0 at 0/n).
    return max(0.0, value - rate.ci_low), max(0.0, rate.ci_high - value)


def detection_by_quirk(results: EvalResults) -> bytes:
    """Horizontal bars: each quirk's detection rate with its interval, coloured by split."""
    quirks = sorted(results.aggregates.by_quirk, key=lambda q: (q.split, q.quirk))
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * max(len(quirks), 3) + 1.2))
    ys = range(len(quirks))
    rates = [q.detection.rate or 0.0 for q in quirks]
    errors = list(zip(*(_err(q.detection) for q in quirks))) if quirks else [[], []]
    ax.barh(list(ys), rates, xerr=errors, color=[SPLIT_COLOURS.get(q.split, "#999") for q in quirks],
            capsize=3, ecolor="#333")
    ax.set_yticks(list(ys), [f"{q.quirk} ({q.detection.k}/{q.detection.n})" for q in quirks])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("detection rate (Wilson 95% interval)")
    ax.set_title(f"Detection by quirk: {results.auditor}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for s, c in SPLIT_COLOURS.items() if s != "control"]
    ax.legend(handles, ["train", "heldout"], loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    return figure_png(fig)


def detection_vs_false_positives(evals: Sequence[EvalResults]) -> bytes:
    """One point per eval and split: detection against the control false-positive rate."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for results in evals:
        fp = results.aggregates.false_positives
        for split, rate in results.aggregates.detection_by_split.items():
            ax.errorbar(fp.rate or 0.0, rate.rate or 0.0, xerr=[[_err(fp)[0]], [_err(fp)[1]]],
                        yerr=[[_err(rate)[0]], [_err(rate)[1]]], fmt="o", capsize=3,
                        color=SPLIT_COLOURS.get(split, "#999"))
            ax.annotate(f"{results.auditor} · {split}", (fp.rate or 0.0, rate.rate or 0.0),
                        textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.plot([0, 1], [0, 1], linestyle=":", color="#aaa")  # chance: claiming a quirk regardless
    ax.set_xlabel("false-positive rate on the clean control")
    ax.set_ylabel("detection rate")
    ax.set_title("Detection vs false positives (95% intervals)")
    return figure_png(fig)


def cost_per_audit(results: EvalResults) -> tuple[float, str]:
    """(cost of one audit, its unit): API dollars when priced, else CPU seconds."""
    agg = results.aggregates
    if agg.cost_usd is not None:
        return agg.cost_usd / max(agg.audits, 1), "USD per audit"
    return agg.cpu_s_per_audit or 0.0, "CPU seconds per audit"


def cost_vs_detection(evals: Sequence[EvalResults]) -> bytes:
    """One point per eval: what an audit costs against overall detection."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    units = set()
    for results in evals:
        cost, unit = cost_per_audit(results)
        units.add(unit)
        rate = results.aggregates.detection
        ax.errorbar(cost, rate.rate or 0.0, yerr=[[_err(rate)[0]], [_err(rate)[1]]], fmt="s", capsize=3, color="#3b6ea8")
        ax.annotate(results.auditor, (cost, rate.rate or 0.0), textcoords="offset points", xytext=(6, 4), fontsize=8)
    costs = [c for c in (cost_per_audit(r)[0] for r in evals) if c > 0]
    if costs and max(costs) / min(costs) > 50:  # a frontier model next to a heuristic: log scale
        ax.set_xscale("log")
    else:
        ax.set_xlim(0, (max(costs) if costs else 1.0) * 1.3)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(" / ".join(sorted(units)))
    ax.set_ylabel("detection rate (seeded quirks)")
    ax.set_title("Cost vs detection")
    return figure_png(fig)
