"""Labels for behaviours, each with the evidence that earned it.

* `rewarded`: its controlled effect on advantage is above 0 (interval excludes 0), and
  so is its raw effect. Both, because a controlled effect alone can be an artefact: a
  behaviour that always comes with a penalised one (a shotgun list with citations of
  replies where nothing fired) gets a positive coefficient from the fit splitting the
  penalty between them, while rollouts with it earn no more than rollouts without it;
* `penalised`: both effects below 0;
* `vestigial`: no controlled effect, yet it comes with a rewarded behaviour (phi >=
  `COOCCURS`) and its frequency holds or rises over training (it falls by less than
  `FALL` over the run, by its least-squares line): the reward pays for its companion,
  and it rides along;
* `benchmark-shaped`: it is rewarded (a positive controlled effect), its raw effect is
  above 0 in some families (or quirks), and its
  interval there lies wholly above the interval in another family where it is measured
  (the effects differ, not merely the power to see them; per-group intervals are
  Bonferroni-corrected over the groups): it pays on some organisms only. A behaviour
  paid on too few families to be rewarded overall is not caught;
* `collapsed` (a `pattern:`): it went from under `COLLAPSE_FROM` of the first steps'
  rollouts to at least `COLLAPSE_TO` of the last ones, taking over the groups' diversity.
"""

from __future__ import annotations

from typing import Any

from traces.effects import BehaviourStats

COOCCURS = 0.3
FALL = 0.05  # share of rollouts: a fall of less than this over the run is "stable or rising"
COLLAPSE_FROM, COLLAPSE_TO = 0.5, 0.8


def is_rewarded(stats: BehaviourStats) -> bool:
    """Its controlled and its raw effect on advantage are both above 0 (see the module docstring)."""
    return stats.controlled is not None and stats.controlled.positive() and stats.raw.positive()


def _both_effects(stats: BehaviourStats) -> str:
    c, r = stats.controlled, stats.raw
    assert c is not None
    return (f"controlled effect on advantage {c.value:+.3f} [{c.low:+.3f}, {c.high:+.3f}]; "
            f"raw {r.value:+.3f} [{r.low:+.3f}, {r.high:+.3f}]")


def label(stats: BehaviourStats, rewarded: set[str]) -> list[tuple[str, str]]:
    """(label, evidence) pairs for one behaviour; `rewarded` names the behaviours labelled rewarded.

    Vestigial and collapsed speak of training: an eval (one step) gets neither."""
    out: list[tuple[str, str]] = []
    c = stats.controlled
    if is_rewarded(stats):
        out.append(("rewarded", _both_effects(stats)))
    elif c is not None and c.negative() and stats.raw.negative():
        out.append(("penalised", _both_effects(stats)))
    else:
        companions = {k: v for k, v in stats.cooccurs_with.items() if k in rewarded and v >= COOCCURS}
        steps = sorted(stats.frequency_by_step)
        change = stats.slope * (steps[-1] - steps[0]) if len(steps) >= 2 else 0.0
        if companions and len(steps) >= 2 and change > -FALL:
            best = max(companions, key=companions.__getitem__)
            effect = f"{c.value:+.3f} [{c.low:+.3f}, {c.high:+.3f}]" if c is not None else "n/a"
            out.append(("vestigial", f"controlled effect {effect}; comes with rewarded {best} (phi "
                                     f"{companions[best]:.2f}); frequency {change:+.2f} over the run"))
    # Only what the reward pays for on its own (a positive controlled effect): a behaviour that rides
    # along with one paid on some families would inherit its per-family pattern.
    own = is_rewarded(stats)
    paying = [g for g, e in stats.by_group.items() if e.positive()] if own else []
    below = sorted({g for g, e in stats.by_group.items() for p in paying if e.high < stats.by_group[p].low})
    if paying and below:
        out.append(("benchmark-shaped", f"pays in {', '.join(paying)}; clearly less in {', '.join(below)}"))
    if stats.name.startswith("pattern:") and stats.frequency_by_step:
        steps = sorted(stats.frequency_by_step)
        quarter = max(1, len(steps) // 4)
        early = sum(stats.frequency_by_step[s] for s in steps[:quarter]) / quarter
        late = sum(stats.frequency_by_step[s] for s in steps[-quarter:]) / quarter
        if len(steps) >= 4 and early < COLLAPSE_FROM and late >= COLLAPSE_TO:
            out.append(("collapsed", f"share {early:.0%} in the first steps, {late:.0%} in the last"))
    return out


def label_all(stats: list[BehaviourStats]) -> dict[str, list[dict[str, Any]]]:
    """Labels of every behaviour, by name (behaviours without a label are left out)."""
    rewarded = {s.name for s in stats if is_rewarded(s)}
    out = {}
    for s in stats:
        found = label(s, rewarded)
        if found:
            out[s.name] = [{"label": name, "evidence": why} for name, why in found]
    return out
