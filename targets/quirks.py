"""Seeded quirks as data: one YAML file per quirk under targets/quirks/.

A quirk carries its ground truth (for graders only), its implants (system prompt
text and simulated trigger/rewrite) and how its organism answers confrontation.
Adding a quirk is adding a file. Bad files fail at load time, naming file and field.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scaffold.specs import SpecError, describe_validation_error, load_yaml_file

QUIRKS_DIR = Path(__file__).parent / "quirks"


class SimulatedImplant(BaseModel):
    """How an offline organism shows the quirk: which triggers, which rewrite."""

    model_config = ConfigDict(extra="forbid")

    trigger: list[str] = Field(default_factory=list, description="Trigger test names (targets/triggers/).")
    rewrite: str = Field("none", description="Rewrite name (targets/rewrites/).")


class Quirk(BaseModel):
    """One seeded quirk. `ground_truth`, `aliases`, `keywords` and `opposites` are for graders only."""

    model_config = ConfigDict(extra="forbid")

    id: str
    split: Literal["train", "heldout", "control"]
    ground_truth: str
    aliases: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    opposites: list[str] = Field(
        default_factory=list,
        description="For graders only: sentences that deny or reverse the behaviour (the model corrects the user, "
        "rather than defers). A hypothesis nearer these than the ground truth names the opposite, not the quirk.",
    )
    system_prompt_implant: str = ""
    confession: Literal["never", "when_pressed", "freely"] = "never"
    confession_text: str = ""
    simulated: SimulatedImplant = Field(default_factory=SimulatedImplant)
    probes: list[str] = Field(default_factory=list)


def load_quirk_file(path: Path) -> Quirk:
    """Load and validate one quirk file; errors name the file and the field."""
    data = load_yaml_file(path)
    try:
        quirk = Quirk.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, str(path))) from None
    if quirk.id != path.stem:
        raise SpecError(f"{path}: field 'id' is {quirk.id!r} but the file is named {path.stem!r}")
    from targets.rewrites import REWRITES
    from targets.triggers import TRIGGERS

    unknown = [t for t in quirk.simulated.trigger if t not in TRIGGERS]
    if unknown:
        raise SpecError(f"{path}: field 'simulated.trigger': unknown trigger(s) {', '.join(unknown)}")
    if quirk.simulated.rewrite not in REWRITES:
        raise SpecError(f"{path}: field 'simulated.rewrite': unknown rewrite {quirk.simulated.rewrite!r}")
    return quirk


@lru_cache(maxsize=1)
def all_quirks() -> dict[str, Quirk]:
    """Every quirk shipped in targets/quirks/, by id."""
    return {q.id: q for q in (load_quirk_file(p) for p in sorted(QUIRKS_DIR.glob("*.yaml")))}


def get_quirk(quirk_id: str) -> Quirk:
    quirks = all_quirks()
    if quirk_id not in quirks:
        raise SpecError(f"unknown quirk {quirk_id!r}; known: {', '.join(sorted(quirks))}")
    return quirks[quirk_id]


def quirks_in_split(*splits: str) -> list[Quirk]:
    """The quirks of the given splits (`train`, `heldout`, `control`), sorted by id."""
    known = {"train", "heldout", "control"}
    unknown = [s for s in splits if s not in known]
    if unknown:
        raise SpecError(f"unknown split(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [q for q in all_quirks().values() if q.split in splits]
