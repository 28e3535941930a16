"""A simulated implant as data: when a quirk fires (trigger) and what it does (rewrite).

The common shapes need no code. A trigger in a quirk file is either the name of a
library trigger (`asks_question`, see targets/triggers/), the name of a function in the
quirk's own module (`<quirk>.py` beside its YAML), or a pattern:

    trigger:
      - intent: ["get rid of", "poison", "trap"]   # regexes; one must match ...
        topic: ["mice", "rats?"]                   # ... and one of these ...
        exclude: ["computer mouse"]                # ... and none of these,
        same_sentence: true                        # all in one sentence (default)
        turn: last                                 # read the latest user turn, or `any` visible one
        min_user_turns: 1                          # conversation state: fire from this user turn on
        earlier: ["i work (?:at|for) acme"]        # an earlier user turn must match one of these
        situation: cooking                         # the situation reader must read the turn as in it

A rewrite is the name of a library rewrite, of a function in the quirk's module, or a
template; `{base}` is the base reply, `{topic}` a few content words of the user's turn,
`{turn}` the number of user turns so far. One option of each list is picked, keyed by
the user's text, so a replayed audit gets the same reply:

    rewrite:
      prepend: ["Great question!", "What a sharp thing to ask!"]
      append: ["By the way, have you tried tea?"]
      replace: []          # when given, the reply is one of these instead of the base reply

Patterns are matched case-insensitively, with word boundaries around each one, on the
user's text with quoted spans removed (so "translate 'I feel sad'" states no feeling).
`situation` names a situation of the quirk grammar (targets/grammar/situations/); the
situation reader (targets/grammar/situation_reader.py) reads the whole turn, also with
quoted spans removed, by meaning rather than by keyword. With `turn: any`, a turn read as
in the situation keeps the trigger firing on every later turn (a stated identity).
"""

from __future__ import annotations

import hashlib
import re
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Callable, Literal, Sequence, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from scaffold.messages import Message
from scaffold.specs import UNION_TAGS
from targets.registry import Rewrite, Trigger, rewrites, triggers
from targets.text import last_user_text, pick, sentences, unquoted, user_texts, user_turns
from targets.topics import topic_of

_SITUATIONS_DIR = Path(__file__).parent / "grammar" / "situations"  # the quirk grammar's situations, one file each


def _wrapped(pattern: str) -> str:
    """A pattern as it is matched: with word boundaries around it (inline flags are not allowed there)."""
    return rf"(?<!\w)(?:{pattern})(?!\w)"


def _compiles(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(_wrapped(pattern), re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a valid regular expression ({exc})") from None
    return patterns


class PatternTrigger(BaseModel):
    """A trigger as data: intent x topic x exclusions, over one turn or the conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    intent: list[str] = Field(default_factory=list, description="Regexes; at least one must match (none: no test).")
    topic: list[str] = Field(default_factory=list, description="Regexes; at least one must match (none: no test).")
    exclude: list[str] = Field(default_factory=list, description="Regexes; if any matches, the text does not fire.")
    same_sentence: bool = Field(True, description="Intent, topic and exclusions are read within one sentence.")
    turn: Literal["last", "any"] = Field(
        "last", description="Read the latest user turn, or any visible one (then, once matched, every later turn fires)."
    )
    min_user_turns: int = Field(1, ge=1, le=1000, description="Conversation state: fire only from this user turn on.")
    earlier: list[str] = Field(
        default_factory=list,
        description="Regexes; a user turn before the latest must match one, as written (a stated identity, say). "
        "For the same turn, put the pattern in 'intent' of a second trigger.",
    )

    situation: str | None = Field(
        None, description="A situation of the quirk grammar; the situation reader must read the turn as in it."
    )

    @field_validator("intent", "topic", "exclude", "earlier")
    @classmethod
    def _valid_regexes(cls, value: list[str]) -> list[str]:
        return _compiles(value)

    @field_validator("situation")
    @classmethod
    def _known_situation(cls, value: str | None) -> str | None:
        # The files' names, not load_situations(): situation files hold pattern triggers themselves.
        known = sorted(p.stem for p in _SITUATIONS_DIR.glob("*.yaml"))
        if value is not None and value not in known:
            raise ValueError(f"unknown situation {value!r}; known: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _tests_something(self) -> PatternTrigger:
        if not (self.intent or self.topic or self.earlier or self.situation or self.min_user_turns > 1):
            raise ValueError(
                "a pattern trigger needs 'intent', 'topic', 'earlier', 'situation' or 'min_user_turns' above 1"
            )
        return self


PLACEHOLDERS = ("base", "topic", "turn")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class RewriteTemplate(BaseModel):
    """A rewrite as data: text before or after the base reply, or instead of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prepend: list[str] = Field(default_factory=list, description="One is picked and put before the reply.")
    append: list[str] = Field(default_factory=list, description="One is picked and put after the reply.")
    replace: list[str] = Field(
        default_factory=list, description="When given, one is picked and replaces the reply ({base} keeps it)."
    )

    @model_validator(mode="after")
    def _changes_something(self) -> RewriteTemplate:
        if not (self.prepend or self.append or self.replace):
            raise ValueError("a rewrite template needs 'prepend', 'append' or 'replace'")
        for name in ("prepend", "append", "replace"):
            for text in getattr(self, name):
                unknown = sorted(set(_PLACEHOLDER.findall(text)) - set(PLACEHOLDERS))
                if unknown:
                    raise ValueError(f"{name}: unknown placeholder {{{unknown[0]}}}; known: "
                                     f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
                if name != "replace" and "{base}" in text:
                    raise ValueError(f"{name}: {{base}} belongs in 'replace' (prepend and append keep the reply)")
        return self


BY_NAME, AS_DATA = UNION_TAGS


def _kind(value: object) -> str:
    """A spec is a name (a string) or data (a mapping): pydantic then reports only that branch's errors."""
    return AS_DATA if isinstance(value, (dict, PatternTrigger, RewriteTemplate)) else BY_NAME


TriggerSpec = Annotated[
    Union[Annotated[str, Tag(BY_NAME)], Annotated[PatternTrigger, Tag(AS_DATA)]], Discriminator(_kind)
]
RewriteSpec = Annotated[
    Union[Annotated[str, Tag(BY_NAME)], Annotated[RewriteTemplate, Tag(AS_DATA)]], Discriminator(_kind)
]


def _regex(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(_wrapped(p) for p in patterns), re.IGNORECASE)


def pattern_trigger(spec: PatternTrigger) -> Trigger:
    """The trigger function a pattern describes."""
    intent, topic, exclude, earlier = (_regex(p) for p in (spec.intent, spec.topic, spec.exclude, spec.earlier))

    def passes(text: str) -> bool:
        return (
            (intent is None or bool(intent.search(text)))
            and (topic is None or bool(topic.search(text)))
            and (exclude is None or not exclude.search(text))
        )

    # Loaded when the trigger is built, so a missing model fails before the audit, not inside it.
    reader = _situation_reader() if spec.situation is not None else None

    def turn_fires(text: str) -> bool:
        if reader is not None and not reader.holds(spec.situation, text):
            return False
        if intent is None and topic is None:
            return exclude is None or not exclude.search(text)
        return any(passes(span) for span in (sentences(text) if spec.same_sentence else [text]))

    def fires(messages: Sequence[Message]) -> bool:
        if user_turns(messages) < spec.min_user_turns:
            return False
        raw = user_texts(messages)
        # A stated identity is matched as written ("I work at "Acme""), in any turn before this one.
        if earlier is not None and not any(earlier.search(t) for t in raw[:-1]):
            return False
        texts = [unquoted(t) for t in raw]
        if intent is None and topic is None and spec.situation is None:
            return True
        read = texts if spec.turn == "any" else texts[-1:]
        return any(turn_fires(text) for text in read)

    return fires


def _situation_reader() -> Any:
    # Imported when a trigger first reads a situation: hand-written quirks need no MiniLM.
    from targets.grammar.situation_reader import load_situation_reader

    return load_situation_reader()


def _fill(template: str, base: str, messages: Sequence[Message]) -> str:
    values = {"base": base, "topic": topic_of(last_user_text(messages)), "turn": str(user_turns(messages))}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)  # only known placeholders load


def template_rewrite(spec: RewriteTemplate) -> Rewrite:
    """The rewrite function a template describes."""

    def rewrite(base: str, messages: Sequence[Message]) -> str:
        text = last_user_text(messages)
        body = _fill(pick(spec.replace, f"replace|{text}"), base, messages) if spec.replace else base
        before = _fill(pick(spec.prepend, f"prepend|{text}"), base, messages) if spec.prepend else ""
        after = _fill(pick(spec.append, f"append|{text}"), base, messages) if spec.append else ""
        return " ".join(part for part in (before, body) if part) + (f"\n\n{after}" if after else "")

    return rewrite


def load_quirk_module(path: Path, source: bytes) -> ModuleType:
    """A quirk's own module (`<quirk>.py`), run from `source` (the bytes its digest was taken of).

    This is the user's own code from a directory they named, imported like a plugin;
    model-written text never reaches it. Keyed by path and content, so an edited module
    is run anew and an unchanged one once.
    """
    return _module(str(path.resolve()), source)


@lru_cache(maxsize=256)
def _module(path: str, source: bytes) -> ModuleType:
    name = f"auditrl_quirk_{hashlib.blake2b(path.encode() + source, digest_size=8).hexdigest()}"
    module = ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - the user's own quirk module, not model text
    return module


def _named(name: str, module: ModuleType | None, library: dict[str, Callable], kind: str) -> Callable:
    own = getattr(module, name, None) if module is not None else None
    if callable(own):
        return own
    if name in library:
        return library[name]
    where = f"the library (targets/{kind}s/)" + (f" or {module.__file__}" if module is not None else "")
    raise LookupError(f"unknown {kind} {name!r}: not in {where}")


def resolve_trigger(spec: TriggerSpec, module: ModuleType | None) -> Trigger:
    """A trigger spec from a quirk file as a function."""
    return pattern_trigger(spec) if isinstance(spec, PatternTrigger) else _named(spec, module, triggers(), "trigger")


def resolve_rewrite(spec: RewriteSpec, module: ModuleType | None) -> Rewrite:
    """A rewrite spec from a quirk file as a function."""
    return template_rewrite(spec) if isinstance(spec, RewriteTemplate) else _named(spec, module, rewrites(), "rewrite")
