"""Labels for behaviours, each with the evidence that earned it.

* `rewarded`: its controlled effect on advantage is above 0 (interval excludes 0);
* `penalised`: below 0;
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


def label(stats: BehaviourStats, rewarded: set[str]) -> list[tuple[str, str]]:
    """(label, evidence) pairs for one behaviour; `rewarded` names the behaviours labelled rewarded.

    Vestigial and collapsed speak of training: an eval (one step) gets neither."""
    out: list[tuple[str, str]] = []
    c = stats.controlled
    if c is not None and c.positive():
        out.append(("rewarded", f"controlled effect on advantage {c.value:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"))
    elif c is not None and c.negative():
        out.append(("penalised", f"controlled effect on advantage {c.value:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"))
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
    own = c is not None and c.positive()
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
    rewarded = {s.name for s in stats if s.controlled is not None and s.controlled.positive()}
    out = {}
    for s in stats:
        found = label(s, rewarded)
        if found:
            out[s.name] = [{"label": name, "evidence": why} for name, why in found]
    return out
