"""`report.html` of a trace analysis: self-contained (plots inlined as PNG), every text escaped.

Three plots: the labelled behaviours' frequency over training steps, effect sizes with
their 95% intervals (controlled, the labels' basis), and a heat map of each behaviour's
raw effect per family (or quirk). Then a table of every measured behaviour with its
labels, evidence and example run ids.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from evals.plots import figure_png, plt  # evals.plots selects the Agg backend before pyplot loads

TOP = 12  # behaviours per plot: the labelled ones first, then the largest effects


def _png(fig: Any) -> str:
    return base64.b64encode(figure_png(fig, dpi=100)).decode()


def _top(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(data["behaviours"], key=lambda b: not b["labels"])[:TOP]


def _short(name: str, width: int = 48) -> str:
    """A plot label: cut to `width`, with `$` escaped (two would start matplotlib's math text, and a
    model-written template can hold anything)."""
    cut = name if len(name) <= width else name[: width - 1] + "…"
    return cut.replace("$", r"\$")


def frequency_plot(data: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(8, 4))
    for b in _top(data):
        steps = sorted(b["frequency_by_step"], key=int)
        ax.plot([int(s) for s in steps], [b["frequency_by_step"][s] for s in steps], marker=".", label=_short(b["behaviour"], 40))
    ax.set_xlabel("training step")
    ax.set_ylabel("share of the step's rollouts")
    ax.set_ylim(0, 1)
    ax.set_title("Behaviour frequency over training")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _png(fig)


def effect_plot(data: dict[str, Any]) -> str:
    rows = _top(data)
    fig, ax = plt.subplots(figsize=(8, 0.35 * max(len(rows), 3) + 1))
    for y, b in enumerate(rows):
        e = b["controlled_effect"] or b["raw_effect"]
        # Coloured by label, not by this interval alone: a controlled effect whose raw effect
        # disagrees (collinearity with another behaviour) is neither rewarded nor penalised.
        labels = {lab["label"] for lab in b["labels"]}
        colour = "#2a7" if "rewarded" in labels else "#c33" if "penalised" in labels else "#888"
        ax.errorbar(e["value"], y, xerr=[[e["value"] - e["low"]], [e["high"] - e["value"]]], fmt="o", color=colour, capsize=3)
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [_short(b["behaviour"]) for b in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("effect on advantage, others held fixed (95% bootstrap interval); green rewarded, red penalised")
    ax.set_title("Effect sizes")
    return _png(fig)


def heatmap(data: dict[str, Any]) -> str | None:
    rows = [b for b in _top(data) if b["by_group"]]
    groups = sorted({g for b in rows for g in b["by_group"]})
    if not rows or not groups:
        return None
    values = [[b["by_group"].get(g, {}).get("value", float("nan")) for g in groups] for b in rows]
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(groups), 0.35 * len(rows) + 1.5))
    image = ax.imshow(values, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(groups)), groups, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), [_short(b["behaviour"], 40) for b in rows], fontsize=7)
    fig.colorbar(image, ax=ax, label="raw effect on advantage")
    ax.set_title("Effect by family (or quirk)")
    return _png(fig)


def render(data: dict[str, Any]) -> str:
    """The whole page."""
    e = html.escape
    plots = [("Frequency over steps", frequency_plot(data)), ("Effect sizes", effect_plot(data)),
             ("Effect by family", heatmap(data))]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>auditrl traces</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top}.l{font-weight:bold}</style></head><body>",
        f"<h1>Traces of {e(str(data.get('source', '')))}</h1>",
        f"<p>{data['rollouts']} rollouts over {data['steps']} step(s); mean reward {data['mean_reward']}; "
        f"{data['behaviours_measured']} of {data['behaviours_seen']} behaviours measured (present and absent in "
        "at least 5 rollouts each).</p>",
    ]
    for title, png in plots:
        if png:
            parts.append(f"<h2>{e(title)}</h2><img alt='{e(title)}' src='data:image/png;base64,{png}'>")
    parts.append("<h2>Behaviours</h2><table><tr><th>behaviour</th><th>n</th><th>reward with / without</th>"
                 "<th>controlled effect [95%]</th><th>slope/step</th><th>labels and evidence</th><th>examples</th></tr>")
    for b in data["behaviours"]:
        c = b["controlled_effect"] or b["raw_effect"]
        labels = "<br>".join(f"<span class='l'>{e(x['label'])}</span>: {e(x['evidence'])}" for x in b["labels"]) or "-"
        parts.append(
            f"<tr><td>{e(b['behaviour'])}</td><td>{b['count']}</td>"
            f"<td>{b['mean_reward_with']:.3f} / {b['mean_reward_without']:.3f}</td>"
            f"<td>{c['value']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]</td><td>{b['slope_per_step']:+.4f}</td>"
            f"<td>{labels}</td><td>{e(', '.join(b['examples']))}</td></tr>"
        )
    parts.append("</table></body></html>")
    return "\n".join(parts)
