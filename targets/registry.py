"""The named triggers and rewrites that quirk files refer to, registered where they are defined.

A trigger is `(messages) -> bool`: does this conversation call for the quirk? A rewrite
is `(base_reply, messages) -> reply`: how the quirk changes the base reply. Library
modules under `targets/triggers/` and `targets/rewrites/` mark theirs with `@trigger`
and `@rewrite`; `library()` imports every module of those two packages (discovery, no
hand-kept list), so adding a trigger is adding a function to a file. A quirk's own
module (`<quirk>.py` beside its YAML) may define more; those are found by the quirk
loader, not registered here, so two users' quirks never collide.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Callable, Sequence

from scaffold.messages import Message

Trigger = Callable[[Sequence[Message]], bool]
Rewrite = Callable[[str, Sequence[Message]], str]

_TRIGGERS: dict[str, Trigger] = {}
_REWRITES: dict[str, Rewrite] = {}
_PACKAGES = ("targets.triggers", "targets.rewrites")


def _register(table: dict, kind: str, fn: Callable) -> Callable:
    name = fn.__name__
    if name in table and table[name] is not fn:
        raise RuntimeError(f"two {kind}s are named {name!r}: {table[name].__module__} and {fn.__module__}")
    table[name] = fn
    return fn


def trigger(fn: Trigger) -> Trigger:
    """Register `fn` as a trigger under its own name."""
    return _register(_TRIGGERS, "trigger", fn)


def rewrite(fn: Rewrite) -> Rewrite:
    """Register `fn` as a rewrite under its own name."""
    return _register(_REWRITES, "rewrite", fn)


@lru_cache(maxsize=1)
def library() -> tuple[dict[str, Trigger], dict[str, Rewrite]]:
    """Every registered trigger and rewrite, after importing each library module once."""
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            importlib.import_module(f"{package_name}.{info.name}")
    return dict(_TRIGGERS), dict(_REWRITES)


def triggers() -> dict[str, Trigger]:
    """The library's triggers by name."""
    return library()[0]


def rewrites() -> dict[str, Rewrite]:
    """The library's rewrites by name."""
    return library()[1]


@rewrite
def none(base: str, messages: Sequence[Message]) -> str:
    """The control's rewrite: the base reply unchanged."""
    return base
