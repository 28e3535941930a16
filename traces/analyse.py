"""One trace analysis, end to end: rollouts in, `traces.json` data out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from traces.behaviours import behaviours, shared_templates
from traces.effects import measure
from traces.labels import label_all
from traces.load import TracedRollout, group_key, load_rollouts
from traces.themes import Theme, probe_themes, theme_behaviours


def analyse_rollouts(rollouts: list[TracedRollout], seed: int = 0, themes: bool = True) -> dict[str, Any]:
    """Behaviours, their stats and labels, and examples of each (run ids), as JSON-ready data.

    `themes` clusters the probes with MiniLM (`traces.themes`); without probes it costs nothing."""
    templates = shared_templates(rollouts)
    found = [behaviours(r, templates) for r in rollouts]
    theme_list: list[Theme] = []
    if themes and any(r.probes for r in rollouts):
        theme_list, probe_theme = probe_themes(rollouts)
        found = [f | t for f, t in zip(found, theme_behaviours(rollouts, probe_theme))]
    names = sorted(set().union(*found))
    present = np.array([[name in f for name in names] for f in found], dtype=bool)
    advantage = np.array([r.advantage for r in rollouts])
    reward = np.array([r.reward for r in rollouts])
    steps = np.array([r.step for r in rollouts])
    groups = [r.family or r.quirk for r in rollouts]
    clusters = ["|".join(map(str, group_key(r))) for r in rollouts]
    stats = measure(names, present, advantage, reward, steps, groups, clusters, seed=seed)
    labels = label_all(stats)
    by_name = {n: j for j, n in enumerate(names)}
    rows = []
    for s in sorted(stats, key=lambda s: -abs(s.controlled.value if s.controlled else s.raw.value)):
        col = present[:, by_name[s.name]]
        ranked = sorted((i for i in np.flatnonzero(col)), key=lambda i: -advantage[i])
        rows.append({
            "behaviour": s.name, "count": s.count, "share": round(s.share, 4),
            "mean_reward_with": round(s.mean_reward_with, 4), "mean_reward_without": round(s.mean_reward_without, 4),
            "raw_effect": s.raw.as_dict(), "controlled_effect": s.controlled.as_dict() if s.controlled else None,
            "slope_per_step": round(s.slope, 5),
            "frequency_by_step": {str(k): round(v, 4) for k, v in s.frequency_by_step.items()},
            "by_group": {g: e.as_dict() for g, e in s.by_group.items()},
            "labels": labels.get(s.name, []),
            "examples": [rollouts[i].run_id for i in ranked[:3]],
        })
    return {
        "rollouts": len(rollouts), "steps": len(set(steps.tolist())), "behaviours_seen": len(names),
        "behaviours_measured": len(rows), "mean_reward": round(float(reward.mean()), 4), "behaviours": rows,
        "themes": [{"label": t.label, "probes": len(t.probes), "example": t.example} for t in theme_list],
        **({"warning": "every advantage is 0 (one rollout per group, or groups that all earned the same): "
                       "no behaviour can show an effect; an eval needs repeats >= 2"}
           if not advantage.any() else {}),
    }


def analyse(path: str | Path, store: str | Path | None = None, seed: int = 0, themes: bool = True) -> dict[str, Any]:
    """Trace analysis of a training run or an eval directory (see `traces.load.load_rollouts`)."""
    result = analyse_rollouts(load_rollouts(path, store), seed=seed, themes=themes)
    return {"source": str(path), **result}
