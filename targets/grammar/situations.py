"""Situations of the quirk grammar: when a generated quirk shows, as data.

One YAML file per situation in `targets/grammar/situations/` (add a file to add one):
its kind (a topic, a kind of task, a stated user identity, or a conversation state),
the clause that renders it in a ground truth ("when the user asks it to summarise a
text"), its trigger (a `targets.simulated.PatternTrigger`: `situation: <id>`, read by the
situation reader, for every situation in words; a turn count for a conversation's length),
and its own contract:
probes that are in the situation, bait that shares its words but is not, and which of
the shared neutral prompts (`targets.contract.NEUTRAL`) are in it all the same (a
recipe request is about cooking), so false fires are counted only on the others.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scaffold.specs import SpecError, describe_validation_error, load_yaml_file
from targets.contract import NEUTRAL
from targets.grammar.files import load_models
from targets.simulated import PatternTrigger

SITUATIONS_DIR = Path(__file__).parent / "situations"
SituationKind = Literal["topic", "task", "identity", "state"]


class Situation(BaseModel):
    """One situation in which a generated quirk shows."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="The file's name without .yaml.")
    kind: SituationKind = Field(description="topic, task, identity (a stated user identity) or state (of the conversation).")
    when: str = Field(min_length=8, description="The clause a ground truth starts with, lower case: 'when the user ...'.")
    trigger: list[PatternTrigger] = Field(min_length=1, description="Any of these fires: the situation holds.")
    lead_in: list[str] = Field(default_factory=list, description="User turns played before each probe (states).")
    probes: list[str] = Field(min_length=3, description="Prompts in the situation: the quirk must fire on them.")
    bait: list[str] = Field(min_length=2, description="Prompts with the situation's words, not in it: must not fire.")
    neutral_in_situation: list[str] = Field(
        default_factory=list, description="Shared neutral prompts that are in this situation (they may fire)."
    )
    keywords: list[str] = Field(default_factory=list, description="For graders: words naming the situation.")

    @field_validator("neutral_in_situation")
    @classmethod
    def _known_neutral(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in NEUTRAL]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not one of the shared neutral prompts (targets.contract.NEUTRAL)")
        return value

    @property
    def When(self) -> str:  # noqa: N802 - the capitalised clause, as templates name it
        """The clause capitalised, to open a sentence."""
        return self.when[0].upper() + self.when[1:]


@lru_cache(maxsize=4)
def load_situations(directory: Path = SITUATIONS_DIR) -> dict[str, Situation]:
    """Every situation file in `directory`, by id; errors name the file and the field."""
    return load_models(directory, Situation, "situation")


class SituationPrompts(BaseModel):
    """One situation's user messages written apart from its trigger: in it, and near misses outside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    in_situation: list[str] = Field(min_length=1, description="User messages in the situation: the quirk should fire.")
    near_miss: list[str] = Field(default_factory=list, description="Messages sharing its words, not in it: should not.")


@lru_cache(maxsize=4)
def load_situation_prompts(path: Path) -> dict[str, SituationPrompts]:
    """A prompts file (fresh or tuning prompts: situation id -> in_situation, near_miss) by situation id,
    none when the file is absent; an unknown situation or a malformed entry is a SpecError naming the file."""
    if not path.is_file():
        return {}
    raw = load_yaml_file(path) or {}
    if not isinstance(raw, dict):
        raise SpecError(f"prompts file {path}: expected a mapping of situation id to prompts")
    unknown = sorted(set(raw) - set(load_situations()))
    if unknown:
        raise SpecError(f"prompts file {path}: unknown situations {unknown}")
    try:
        return {sid: SituationPrompts.model_validate(v) for sid, v in raw.items()}
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, f"prompts file {path}")) from None
