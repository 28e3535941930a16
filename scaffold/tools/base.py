"""What an auditor tool is, and how a call to one is checked and run.

A tool is a plain function `fn(ctx, **arguments) -> ToolOutcome` whose docstring is
the auditor's manual for it. Its `ToolDefinition` (what the auditor model is shown)
is derived from the signature and docstring, so the two cannot drift.
"""

from __future__ import annotations

import inspect
import logging
import typing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Literal

from scaffold.docstrings import parse_docstring
from scaffold.messages import ToolCall, ToolDefinition, ToolParameter
from scaffold.transcript import Transcript


@dataclass
class ToolContext:
    """What a tool may touch: the transcript, and what the target can do."""

    transcript: Transcript
    target_supports_prefill: bool = True


@dataclass
class TargetRequest:
    """A tool's request that the target speak next (a prefill is read from the call itself)."""

    mode: Literal["respond", "sample_user"] = "respond"


@dataclass
class ToolOutcome:
    """The result of one auditor tool call.

    Either `result` is returned to the auditor at once, or `target` asks the target
    node to generate first (its reply becomes the result). `end` ends the audit.
    """

    result: str = ""
    is_error: bool = False
    target: TargetRequest | None = None
    end: Literal["auditor_ended", "report_submitted"] | None = None

    @classmethod
    def error(cls, text: str) -> ToolOutcome:
        return cls(result=f"Error: {text}", is_error=True)


log = logging.getLogger(__name__)

ToolFunction = Callable[..., ToolOutcome]

_JSON_TYPES: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


@dataclass
class AuditorTool:
    """A tool the auditor can call, with the definition shown to the auditor model."""

    name: str
    function: ToolFunction
    definition: ToolDefinition
    _types: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_function(cls, function: ToolFunction, items: dict[str, dict[str, Any]] | None = None) -> AuditorTool:
        """Build a tool from `function`; `items` gives JSON schemas of list items by parameter."""
        description, param_docs = parse_docstring(function.__doc__)
        hints = typing.get_type_hints(function)
        parameters: list[ToolParameter] = []
        types: dict[str, Any] = {}
        for name, param in list(inspect.signature(function).parameters.items())[1:]:
            hint = hints.get(name, str)
            base, optional = _unwrap_optional(hint)
            origin = typing.get_origin(base)
            json_type = "array" if origin is list or base is list else _JSON_TYPES.get(base, "string")
            enum = list(typing.get_args(base)) if origin is Literal else None
            types[name] = (json_type, enum)
            parameters.append(
                ToolParameter(
                    name=name,
                    type=json_type,
                    description=param_docs.get(name, ""),
                    required=param.default is inspect.Parameter.empty and not optional,
                    enum=[str(e) for e in enum] if enum else None,
                    items=(items or {}).get(name),
                )
            )
        definition = ToolDefinition(name=function.__name__, description=description, parameters=parameters)
        return cls(name=function.__name__, function=function, definition=definition, _types=types)

    @cached_property
    def brief_definition(self) -> ToolDefinition:
        """`definition.brief()`, made once: the compact manual shows it on every turn."""
        return self.definition.brief()

    def check_arguments(self, arguments: dict[str, Any]) -> str | None:
        """Why `arguments` do not fit this tool, or None when they do."""
        known = {p.name: p for p in self.definition.parameters}
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            return f"{self.name} has no parameter(s) {', '.join(unknown)}; it takes {', '.join(known) or 'none'}"
        missing = [p.name for p in self.definition.parameters if p.required and arguments.get(p.name) is None]
        if missing:
            return f"{self.name} needs {', '.join(missing)}"
        for name, value in arguments.items():
            if value is None:
                continue
            json_type, enum = self._types[name]
            if not _fits(json_type, value):
                return f"{self.name}: {name} must be a {json_type}, got {type(value).__name__}"
            if enum and value not in enum:
                return f"{self.name}: {name} must be one of {', '.join(map(str, enum))}"
        return None

    def call(self, ctx: ToolContext, call: ToolCall) -> ToolOutcome:
        """Check and run one call. Never raises: every problem becomes an error outcome."""
        if call.parse_error:
            return ToolOutcome.error(f"could not parse your call to {call.name}: {call.parse_error}")
        problem = self.check_arguments(call.arguments)
        if problem:
            return ToolOutcome.error(problem)
        try:
            return self.function(ctx, **call.arguments)
        except Exception as exc:  # noqa: BLE001 - a model's odd call is the auditor's problem, not the audit's
            log.warning("tool %s failed on call %s: %s: %s", self.name, call.id, type(exc).__name__, exc)
            return ToolOutcome.error(f"{self.name} failed: {type(exc).__name__}: {exc}")


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else str), True
    return hint, False


def _fits(json_type: str, value: Any) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if json_type == "array":
        return isinstance(value, list)
    return True
