"""Behaviour families of the quirk grammar: what a generated quirk does, as data.

One YAML file per family in `targets/grammar/families/` (add a file to add one). A
family is parametric: its texts are `string.Template`s over its own parameters
(`$claim`, `$subject`, ...) and the situation's clause (`$When`, `$when`, and `$When_imp`
for the implant's imperative), so that "moralise about $subject" in "when the user
asks it to summarise a text" renders as a plain-words ground truth. Its rewrite is a
template (prepend / append / replace, with the organism's own `{base}`, `{topic}`,
`{turn}` left for the organism to fill) or the name of a library rewrite
(targets/rewrites/), which may carry a parameter (`drift_$tone`).

`cluster` groups families that resemble each other (social, epistemic, insertion,
refusal, style, code), so a specialisation run can hold out similar or dissimilar ones.
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from targets.grammar.files import load_models
from targets.grammar.situations import Situation, SituationKind

FAMILIES_DIR = Path(__file__).parent / "families"
# What a family's templates may name besides its parameters (the situation's clause).
SITUATION_KEYS = ("When", "when")


class Family(BaseModel):
    """One behaviour family; its texts are templates (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="The file's name without .yaml.")
    cluster: str = Field(description="Families alike in kind share a cluster (for held-out-cluster runs).")
    description: str = Field(description="The behaviour in a few words, for tables.")
    kinds: list[SituationKind] = Field(default_factory=list, description="Situation kinds it can show in.")
    situations: list[str] = Field(default_factory=list, description="Or the situation ids it can show in.")
    params: dict[str, list[str]] = Field(default_factory=dict, description="Each parameter's values; one is drawn.")
    ground_truth: str = Field(description="Template of the plain-words ground truth (for graders only).")
    aliases: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    opposites: list[str] = Field(default_factory=list, description="Templates of what denies or reverses it.")
    implant: str = Field(description="Template of the system-prompt implant.")
    rewrite: str | dict[str, list[str]] = Field(description="A library rewrite's name (a template) or a rewrite template.")
    confession_text: str = ""

    @model_validator(mode="after")
    def _well_formed(self) -> Family:
        if not (self.kinds or self.situations):
            raise ValueError("a family needs 'kinds' or 'situations' it can show in")
        empty = [name for name, values in self.params.items() if not values]
        if empty:
            raise ValueError(f"params.{empty[0]}: needs at least one value")
        known = set(self.params) | set(SITUATION_KEYS)
        for text in self.texts():
            for name in _template_names(text):
                if name not in known:
                    raise ValueError(f"template {text!r} names ${name}, which is neither a parameter nor "
                                     f"one of {', '.join('$' + k for k in SITUATION_KEYS)}")
        return self

    def texts(self) -> list[str]:
        """Every template the family renders."""
        rewrite = [self.rewrite] if isinstance(self.rewrite, str) else [t for ts in self.rewrite.values() for t in ts]
        return [self.ground_truth, self.implant, self.confession_text, *self.aliases, *self.keywords, *self.opposites,
                *rewrite]

    def fits(self, situation: Situation) -> bool:
        """Whether the family can show in `situation`."""
        return situation.id in self.situations or situation.kind in self.kinds

    def render(self, situation: Situation, params: dict[str, str]) -> dict[str, Any]:
        """The quirk-file fields this family gives in `situation` with `params` (one value each)."""
        values = {**params, "When": situation.When, "when": situation.when}

        def fill(text: str) -> str:
            return string.Template(text).substitute(values)

        rewrite: str | dict[str, list[str]]
        if isinstance(self.rewrite, str):
            rewrite = fill(self.rewrite).lower()
        else:
            rewrite = {k: [fill(t) for t in ts] for k, ts in self.rewrite.items()}
        return {
            "ground_truth": fill(self.ground_truth),
            "aliases": [fill(a) for a in self.aliases],
            "keywords": list(dict.fromkeys([fill(k).lower() for k in self.keywords] + situation.keywords)),
            "opposites": [fill(o) for o in self.opposites],
            "system_prompt_implant": fill(self.implant),
            "confession_text": fill(self.confession_text),
            "rewrite": rewrite,
        }


def _template_names(text: str) -> list[str]:
    """The `$names` a template uses."""
    return [m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")]


@lru_cache(maxsize=4)
def load_families(directory: Path = FAMILIES_DIR) -> dict[str, Family]:
    """Every family file in `directory`, by id; errors name the file and the field."""
    return load_models(directory, Family, "family")
