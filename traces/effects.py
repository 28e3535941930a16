"""Each behaviour's frequency over steps and its effect on advantage, with bootstrap intervals.

The effect is measured on the advantage (reward minus its group's mean), so a behaviour
that merely comes with easier quirks earns nothing. Two effects per behaviour:

* **raw**: mean advantage with it minus without it;
* **controlled**: its coefficient in a least-squares fit of the advantage on it and on
  every other *atomic* behaviour whose raw effect is not 0 (its interval excludes 0),
  so that a behaviour riding along with a rewarded one shows no effect of
  its own. Sequences and whole patterns (`seq:`, `pattern:`) are made of tools, so they
  are measured against the candidates but never used as controls: as controls they
  would split one tool's effect among the combinations it appears in.

Per family (or quirk), the raw effect, with intervals Bonferroni-corrected over the
groups, since labels compare them with each other. Intervals are percentile bootstraps
that resample whole groups (a GRPO group's
advantages sum to zero, so resampling single rollouts would make them too narrow);
seeded, so a report reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

BOOTSTRAP = 300
DERIVED = ("seq:", "pattern:")  # behaviours made of others (see the module docstring)
MIN_SUPPORT = 5  # a behaviour is measured when it is present, and absent, in at least this many rollouts


@dataclass
class Effect:
    """A point estimate and its 95% interval."""

    value: float
    low: float
    high: float

    def positive(self) -> bool:
        return self.low > 0

    def negative(self) -> bool:
        return self.high < 0

    def as_dict(self) -> dict[str, float]:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


@dataclass
class BehaviourStats:
    """Everything measured about one behaviour."""

    name: str
    count: int
    share: float
    frequency_by_step: dict[int, float]
    slope: float  # change in frequency per step (least squares); 0 for a single step
    mean_reward_with: float
    mean_reward_without: float
    raw: Effect
    controlled: Effect | None = None
    by_group: dict[str, Effect] = field(default_factory=dict)  # per family (or quirk): raw effect
    cooccurs_with: dict[str, float] = field(default_factory=dict)  # phi with each control


def _boot_indices(clusters: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """BOOTSTRAP resamples of the rows: whole clusters drawn with replacement."""
    labels, inverse = np.unique(clusters, return_inverse=True)
    members = [np.flatnonzero(inverse == k) for k in range(len(labels))]
    draws = rng.integers(0, len(labels), size=(BOOTSTRAP, len(labels)))
    return [np.concatenate([members[k] for k in draw]) for draw in draws]


def raw_effect(
    present: np.ndarray, y: np.ndarray, rng: np.random.Generator, clusters: np.ndarray, alpha: float = 0.05
) -> Effect:
    """Mean of `y` with minus without, and its (1 - alpha) bootstrap interval (resampling `clusters`)."""
    value = float(y[present].mean() - y[~present].mean())
    diffs = []
    for idx in _boot_indices(clusters, rng):
        p, v = present[idx], y[idx]
        if p.any() and (~p).any():
            diffs.append(v[p].mean() - v[~p].mean())
    low, high = np.percentile(diffs, [50 * alpha, 100 - 50 * alpha]) if diffs else (value, value)
    return Effect(value, float(low), float(high))


def controlled_effect(
    x: np.ndarray, column: int, y: np.ndarray, rng: np.random.Generator, clusters: np.ndarray
) -> Effect:
    """The least-squares coefficient of `x[:, column]` (with an intercept), and its bootstrap interval."""
    design = np.column_stack([np.ones(len(y)), x])

    def coefficient(rows: np.ndarray) -> float:
        solution, *_ = np.linalg.lstsq(design[rows], y[rows], rcond=None)
        return float(solution[column + 1])

    value = coefficient(np.arange(len(y)))
    samples = [coefficient(idx) for idx in _boot_indices(clusters, rng)]
    low, high = np.percentile(samples, [2.5, 97.5])
    return Effect(value, float(low), float(high))


def phi(a: np.ndarray, b: np.ndarray) -> float:
    """The correlation of two presence vectors (0 when either is constant)."""
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a.astype(float), b.astype(float))[0, 1])


def frequency_by_step(present: np.ndarray, steps: np.ndarray) -> tuple[dict[int, float], float]:
    """The behaviour's share of each step's rollouts, and the least-squares slope of that share over steps."""
    freq = {int(s): float(present[steps == s].mean()) for s in np.unique(steps)}
    if len(freq) < 2:
        return freq, 0.0
    xs, ys = np.array(list(freq)), np.array(list(freq.values()))
    return freq, float(np.polyfit(xs, ys, 1)[0])


def independent_columns(x: np.ndarray, first: int, others: list[int]) -> list[int]:
    """`[first, *others]` without the columns that are linear combinations of earlier ones (and of the
    intercept): least squares would split an effect among them arbitrarily."""
    kept = [first]
    for k in others:
        trial = np.column_stack([np.ones(len(x)), x[:, kept + [k]].astype(float)])
        if np.linalg.matrix_rank(trial) == trial.shape[1]:
            kept.append(k)
    return kept


def measure(
    names: Sequence[str], present: np.ndarray, advantage: np.ndarray, reward: np.ndarray, steps: np.ndarray,
    groups: Sequence[str], clusters: Sequence[str] | None = None, seed: int = 0,
) -> list[BehaviourStats]:
    """Stats of every behaviour (columns of the boolean matrix `present`) with enough support.

    `groups` are what per-group effects are reported for (families or quirks); `clusters` what
    the bootstrap resamples (GRPO groups; default: every rollout alone)."""
    rng = np.random.default_rng(seed)
    cluster_ids = np.array(clusters) if clusters is not None else np.arange(len(advantage))
    n = len(advantage)
    keep = [j for j in range(len(names)) if MIN_SUPPORT <= present[:, j].sum() <= n - MIN_SUPPORT]
    stats: dict[int, BehaviourStats] = {}
    for j in keep:
        col = present[:, j]
        freq, slope = frequency_by_step(col, steps)
        stats[j] = BehaviourStats(
            name=names[j], count=int(col.sum()), share=float(col.mean()), frequency_by_step=freq, slope=slope,
            mean_reward_with=float(reward[col].mean()), mean_reward_without=float(reward[~col].mean()),
            raw=raw_effect(col, advantage, rng, cluster_ids),
        )
    # Controls: atomic behaviours with a raw effect either way (leaving out a penalised one would
    # credit its absence to whatever replaces it).
    candidates = [j for j in keep if (stats[j].raw.positive() or stats[j].raw.negative())
                  and not names[j].startswith(DERIVED)]
    group_array = np.array(groups)
    # Per-group intervals are compared with each other (benchmark-shaped): Bonferroni over the groups.
    group_alpha = 0.05 / max(1, len(set(groups)))
    for j in keep:
        columns = independent_columns(present, j, [k for k in candidates if k != j])
        stats[j].controlled = controlled_effect(present[:, columns].astype(float), 0, advantage, rng, cluster_ids)
        stats[j].cooccurs_with = {names[k]: round(phi(present[:, j], present[:, k]), 3) for k in candidates if k != j}
        for group in sorted(set(groups)):
            inside = group_array == group
            col = present[inside, j]
            if col.sum() >= MIN_SUPPORT and (~col).sum() >= MIN_SUPPORT:
                stats[j].by_group[group] = raw_effect(col, advantage[inside], rng, cluster_ids[inside], group_alpha)
    return [stats[j] for j in keep]
