"""The hard-negative calibration set: one-sentence hypotheses that a lenient grader gets wrong.

`rewards/calibration_data/hard_negatives.yaml` was written from the quirks' ground
truths only, independently of the graders' rules: per seeded quirk, true paraphrases
(first and third person, mostly without the obvious keywords), a negation, an opposite,
a near miss (the quirk next door), a shotgun list, and gibberish or off-topic text;
plus controls, half of which report that nothing was found. Each item is a person's
label, never a grader's.

The set is split into a dev half (tune on it) and a test half (report on it) by a
fixed salt, stratified by category and label, so the halves never change unless the
file does. Each item becomes an ordinary `CalibrationCase` (one hypothesis, no cited
messages) so that every grader is scored by the same `rewards.calibration.agreement`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewards.calibration import CalibrationCase, CaseLabel
from scaffold.events import Hypothesis, Report
from scaffold.specs import SpecError, describe_validation_error, read_yaml

M = TypeVar("M", bound=BaseModel)
HARD_NEGATIVES_PATH = Path(__file__).parent / "calibration_data" / "hard_negatives.yaml"
SPLIT_SALT = "auditrl-hard-negatives-v1"
# Every case is reported with this confidence: above the control's false-positive bar
# (0.5), so a "nothing found" report is tested where a lenient grader calls it a claim.
CONFIDENCE = 0.8
Category = Literal[
    "paraphrase", "negation", "opposite", "near_miss", "shotgun", "gibberish", "off_topic", "control", "topic_only",
    "policy_text",
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]
# What hard_negatives.yaml covers; `topic_only` (the topic of a quirk, no behaviour claimed) has
# its own set, benchmarks/topic-only-cases.yaml, written after the pair reader was found to credit it;
# so has `policy_text` (what our own SmolLM2 policies wrote as hypotheses), benchmarks/policy-text-cases.yaml.
HARD_NEGATIVE_CATEGORIES = tuple(c for c in CATEGORIES if c not in ("topic_only", "policy_text"))
Half = Literal["dev", "test", "all"]


class HardNegative(BaseModel):
    """One labelled hypothesis of the file."""

    model_config = ConfigDict(extra="forbid")

    id: str
    quirk: str
    category: Category
    person: Literal["first", "third"] | None = Field(None, description="paraphrases: the voice it is written in")
    text: str
    label: bool = Field(description="seeded quirks: it names the quirk; control (`none`): it claims a hidden behaviour")
    why: str


def validated_items(path: str | Path, model: type[M], noun: str) -> list[M]:
    """The YAML list at `path`, each entry validated as `model`; errors name the file, the `noun` index and the field."""
    data = read_yaml(path)
    if not isinstance(data, list):
        raise SpecError(f"{path}: expected a list of {noun}s")
    items = []
    for index, raw in enumerate(data):
        try:
            items.append(model.model_validate(raw))
        except ValidationError as exc:
            raise SpecError(describe_validation_error(exc, f"{path}: {noun} {index}")) from None
    return items


def load_items(path: str | Path = HARD_NEGATIVES_PATH) -> list[HardNegative]:
    """Every item in the file, validated; errors name the file, the item and the field."""
    items = validated_items(path, HardNegative, "item")
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise SpecError(f"{path}: duplicate ids {sorted({i for i in ids if ids.count(i) > 1})}")
    return items


def halves(items: list[HardNegative]) -> dict[str, Literal["dev", "test"]]:
    """Each item's half, by id: within its (category, label) stratum, ordered by a salted hash,
    the first half (rounded up) is test."""
    strata: dict[tuple[str, bool], list[HardNegative]] = {}
    for item in items:
        strata.setdefault((item.category, item.label), []).append(item)
    out: dict[str, Literal["dev", "test"]] = {}
    for stratum in strata.values():
        ordered = sorted(stratum, key=lambda i: hashlib.sha256(f"{SPLIT_SALT}:{i.id}".encode()).hexdigest())
        cut = (len(ordered) + 1) // 2
        out.update({i.id: "test" if n < cut else "dev" for n, i in enumerate(ordered)})
    return out


def half_of(item: HardNegative, items: list[HardNegative]) -> Literal["dev", "test"]:
    """The half `item` belongs to among `items` (see `halves`)."""
    return halves(items)[item.id]


def to_case(item: HardNegative) -> CalibrationCase:
    """The item as a calibration case: a report of one hypothesis that cites nothing."""
    report = Report(hypotheses=[Hypothesis(description=item.text, confidence=CONFIDENCE)], summary="")
    label = CaseLabel(false_positive=item.label) if item.quirk == "none" else CaseLabel(identified=item.label)
    return CalibrationCase(
        id=f"hard-{item.id}", source="hard_negative", kind=item.category, quirk=item.quirk, report=report,
        label=label, hacky=item.category in ("shotgun", "gibberish"), why=item.why,
        origin={"person": item.person} if item.person else {},
    )


def load_hard_negatives(half: Half = "all", path: str | Path = HARD_NEGATIVES_PATH) -> list[CalibrationCase]:
    """The hard-negative cases of one half (`dev`, `test`) or all of them, in file order."""
    items = load_items(path)
    split = halves(items)
    return [to_case(i) for i in items if half == "all" or split[i.id] == half]
