"""Benchmark suites: which organisms, how often, with which budgets. YAML validated here.

A suite is a list of groups; each group picks quirks and one organism configuration
(implant, base responder, difficulty), with its own number of repeats. A suite pins
what it measures: a group names its quirk ids, or picks by split *and* pins that set
with `digest:` (targets.quirks.quirk_set_digest: the ids and each quirk's content). So
adding a quirk file, here or in a `--quirks DIR`, never changes a committed suite: a
split-picked group whose set changed is refused with the new set's digest, and
results.json records the digest of the quirk set it ran. Expanded, a suite is a list of
`EvalCase`s, one per audit, each with a stable id and its own sampling seed, so that a
resumed eval finds exactly the cases it had and two runs of a suite audit the same
targets with the same seeds.

    name: smoke
    description: Fast, for CI.
    max_turns: 12
    seed: 0
    groups:
      - quirks: [flattery, defer_to_users]
        organism: {implant: simulated, base_responder: fast, difficulty: easy}
        repeats: 1
      - splits: [control]
        digest: 1f0e...        # a group without one is refused with the digest to add
        repeats: 2

Shipped suites live in evals/suites/ (`audit eval suites` lists them); `--suite` also
takes a path to a YAML file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from auditor.prompts import Manual
from scaffold.specs import SpecError, describe_validation_error, load_yaml_file
from scaffold.state import AuditBudget, BudgetShorthands
from targets.grammar.generate import GeneratorOptions, use_generated_set
from targets.quirks import SPLITS, get_quirk, quirk_set_digest, quirks_in_split
from targets.spec import OrganismSpec, TargetSpec

SUITES_DIR = Path(__file__).resolve().parent / "suites"
DEFAULT_SUITE_TURNS = 30


class SuiteGroup(BaseModel):
    """Quirks audited with one organism configuration."""

    model_config = ConfigDict(extra="forbid")

    quirks: list[str] = Field(default_factory=list, description="Quirk ids; or use splits.")
    splits: list[str] = Field(
        default_factory=list, description="Every quirk of these splits (train, heldout, control); needs 'digest'."
    )
    digest: str | None = Field(
        None, description="Pins the quirks a split-picked group measures: their ids and content (quirk_set_digest)."
    )
    organism: dict[str, Any] = Field(
        default_factory=dict, description="OrganismSpec fields except quirk (implant, base_responder, difficulty...)."
    )
    repeats: int | None = Field(None, ge=1, le=1000, description="Audits per quirk (default: the suite's).")
    generated: bool = Field(
        False, description="With 'splits': pick the suite's generated quirks (its `generated:` set), not hand-written ones."
    )
    holdout: list[Literal["family", "combination"]] = Field(
        default_factory=list,
        description="With 'splits: [heldout]' and 'generated': only the quirks held out this way (a family never "
        "trained on, or a train family in a situation it was never trained in); empty: every held-out quirk. A "
        "policy trained on some families is compared on the combinations of those families.",
    )

    @model_validator(mode="after")
    def _picks_something(self) -> SuiteGroup:
        if not self.quirks and not self.splits:
            raise ValueError("a group needs 'quirks' or 'splits'")
        if self.holdout and (not self.generated or "heldout" not in self.splits):
            raise ValueError("'holdout' picks among held-out generated quirks: it needs 'generated: true' and "
                             "'splits: [heldout]'")
        bad = [s for s in self.splits if s not in SPLITS]
        if bad:
            raise ValueError(f"unknown split {bad[0]!r}; known: {', '.join(SPLITS)}")
        if "quirk" in self.organism:
            raise ValueError("'organism' must not set 'quirk': the group's quirks do")
        return self


class Suite(BudgetShorthands):
    """A named benchmark: groups of organisms, repeats, seeds and budgets."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    groups: list[SuiteGroup] = Field(min_length=1)
    repeats: int = Field(1, ge=1, le=1000, description="Default audits per quirk.")
    seed: int = Field(0, ge=0, lt=1 << 20, description="Base sampling seed; repeat r of a quirk samples from its own stream.")
    budget: AuditBudget = Field(
        default_factory=lambda: AuditBudget(max_turns=DEFAULT_SUITE_TURNS),
        description="Every audit's limits (AuditBudget); `max_turns:` and `max_tokens:` may be written at the top.",
    )
    generated: GeneratorOptions | None = Field(
        None, description="Quirks generated from the grammar (targets/grammar/) and read as well; groups pick them "
        "by split with `generated: true`, or by id.",
    )
    judge: str = Field("offline", description="Default judge spec (rewards/judges.py).")
    reward: str = Field("grounded")
    manual: Manual | Literal["auto"] = Field(
        "auto", description="The auditor's manual (full, compact, or auto: compact for local policies)."
    )

    default_turns: ClassVar[int] = DEFAULT_SUITE_TURNS

    @model_validator(mode="after")
    def _generated_groups_have_a_set(self) -> Suite:
        if self.generated is None and any(g.generated for g in self.groups):
            raise ValueError("a group with 'generated: true' needs the suite's 'generated:' set (targets/grammar/)")
        return self

    def with_max_turns(self, max_turns: int) -> Suite:
        """This suite at another turn budget (the rest of the budget kept)."""
        return self.model_copy(update={"budget": self.budget.model_copy(update={"max_turns": max_turns})})


class EvalCase(BaseModel):
    """One audit of a suite."""

    case_id: str
    quirk: str
    split: str
    repeat: int
    sample_seed: int
    target: TargetSpec
    family: str | None = Field(None, description="Generated quirks: the behaviour family.")
    holdout: str | None = Field(None, description="Generated quirks: train, family or combination (how it is held out).")


def split_quirk_ids(splits: list[str], generated: bool = False) -> list[str]:
    """The ids a split-picked group selects now, in suite order (split by split, by id): the
    generated quirks when `generated`, else the hand-written ones, so that loading a generated
    set never changes which quirks a hand-written suite audits. (Its grading can change: the
    offline grader compares a hypothesis with every loaded quirk; results.json records the
    library's digest, so two such results are told apart.)"""
    return [q.id for split in splits for q in quirks_in_split(split) if (q.generated is not None) == generated]


def _listed(ids: list[str], most: int = 20) -> str:
    """Ids for a one-line error: a generated set's hundred and fifty are cut to the first `most`."""
    return ", ".join(ids) if len(ids) <= most else f"{', '.join(ids[:most])} and {len(ids) - most} more"


def _held_out_as(quirk_id: str, kinds: list[str]) -> bool:
    """Whether a quirk of a split-picked group stays under `holdout`: a held-out generated quirk
    only if it is held out in one of these ways; any other quirk always."""
    quirk = get_quirk(quirk_id)
    return quirk.split != "heldout" or quirk.generated is None or quirk.generated.holdout in kinds


def _quirk_ids(group: SuiteGroup, where: str) -> list[str]:
    ids = list(group.quirks)
    for quirk_id in ids:
        get_quirk(quirk_id)  # unknown ids are a SpecError naming them
    if group.splits:
        picked = [q for q in split_quirk_ids(group.splits, group.generated) if q not in ids]
        if group.holdout:
            picked = [q for q in picked if _held_out_as(q, group.holdout)]
        digest = quirk_set_digest(picked)
        if group.digest is None:
            raise SpecError(
                f"{where}: a group that picks quirks by split must pin them: add 'digest: {digest}' "
                f"(the set now: {_listed(picked)}), or name them in 'quirks'"
            )
        if digest != group.digest:
            raise SpecError(
                f"{where}: the quirks of split(s) {', '.join(group.splits)} are no longer the set this suite pinned "
                f"(digest {group.digest}, now {digest}: {_listed(picked)}); name the quirks, or pin the new set"
            )
        ids += picked
    return ids


def case_seed(suite_seed: int, organism: str, repeat: int) -> int:
    """The sampling seed of one audit: its own stream for every organism and repeat.

    A hash of (suite seed, organism, repeat), 32 bits, times 2**20, so that the per-call
    seeds (seed + step) of two audits do not meet, and below 2**53 (exact in JSON). With
    one seed per repeat for every organism, a peaked stochastic auditor wrote the same
    opening turns to every organism of a repeat, and the audits were not independent.
    """
    digest = hashlib.sha256(f"{suite_seed}:{organism}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") << 20


def expand(suite: Suite, repeats: int | None = None) -> list[EvalCase]:
    """Every audit of `suite`, in a stable order. `repeats` overrides every group's."""
    if suite.generated is not None:
        use_generated_set(suite.generated)  # idempotent: written once into the cache, read once
    cases: list[EvalCase] = []
    seen: set[str] = set()
    for index, group in enumerate(suite.groups):
        try:
            OrganismSpec.model_validate({"quirk": "none", **group.organism})
        except ValidationError as exc:
            raise SpecError(describe_validation_error(exc, f"suite {suite.name}: groups.{index}.organism")) from None
        for quirk_id in _quirk_ids(group, f"suite {suite.name}: groups.{index}"):
            organism = OrganismSpec.model_validate({"quirk": quirk_id, **group.organism})
            label = f"{quirk_id}-{organism.implant}-{organism.base_responder}-{organism.difficulty}"
            quirk = get_quirk(quirk_id)
            origin = quirk.generated
            for r in range(repeats or group.repeats or suite.repeats):
                case_id = f"{label}-r{r}"
                if case_id in seen:
                    raise SpecError(f"suite {suite.name}: two groups make the same audit {case_id}")
                seen.add(case_id)
                target = TargetSpec(name=f"{quirk_id} ({organism.difficulty})", organism=organism)
                cases.append(
                    EvalCase(
                        case_id=case_id,
                        quirk=quirk_id,
                        split=quirk.split,
                        repeat=r,
                        sample_seed=case_seed(suite.seed, label, r),
                        target=target,
                        family=origin.family if origin else None,
                        holdout=(origin.holdout or "train") if origin else None,
                    )
                )
    return cases


def list_suites() -> list[Suite]:
    """The shipped suites, by name."""
    return [load_suite(path) for path in sorted(SUITES_DIR.glob("*.yaml"))]


def load_suite(name_or_path: str | Path) -> Suite:
    """A shipped suite by name, or a suite YAML by path; one-line SpecErrors."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SUITES_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            known = ", ".join(p.stem for p in sorted(SUITES_DIR.glob("*.yaml")))
            raise SpecError(f"suite {name_or_path!r}: unknown; shipped suites: {known} (or give a YAML path)")
    data = load_yaml_file(path)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, str(path))) from None
    expand(suite)  # every quirk id and organism field checked before anything runs
    return suite
