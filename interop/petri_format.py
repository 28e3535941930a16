"""Petri transcript files (format v3) read and replayed: the views' message lists over time.

A Petri transcript is `{"metadata", "events", "messages", "target_messages"}`. Its
`events` are the record: each `transcript_event` edits one view ("auditor", "target",
"combined") with `add`, `rollback`, `reset` or `json_patch` (RFC 6902 over the view's
message list; Petri 2 writes only patches, with the key `from_` for `from`). Replaying
the edits in order gives every state of every view, which is how rollbacks show: a
target view that loses messages, then gains others.

Everything read is checked as it is read; a file that is not a v3 transcript, or a
malformed one, is a `SpecError` naming the file and the field.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from scaffold.specs import SpecError

SUPPORTED_MAJOR = "v3"  # metadata.version "v3.0" (Petri 2.x); other majors are refused by name
MAX_FILE_BYTES = 64 * 1024 * 1024
VIEWS = ("auditor", "target", "combined")
MAX_VIEW_MESSAGES = 20_000  # a view longer than any real audit's: refused, not replayed


def _fail(path: Path, field: str, why: str) -> SpecError:
    return SpecError(f"{path}: field '{field}': {why}")


@dataclass
class ToolMade:
    """A `tool_creation_event`: the auditor gave the target a synthetic tool."""

    tool: dict[str, Any]
    time: float | None
    index: int  # the event's position in the file, for errors


@dataclass
class PetriTranscript:
    """A checked Petri transcript file."""

    path: Path
    metadata: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def transcript_id(self) -> str:
        return str(self.metadata.get("transcript_id") or self.path.stem)

    @property
    def seed(self) -> str:
        # `description` is the field's name before Petri 2.
        return str(self.metadata.get("seed_instruction") or self.metadata.get("description") or "")

    @property
    def judge_output(self) -> dict[str, Any] | None:
        judged = self.metadata.get("judge_output")
        return judged if isinstance(judged, dict) else None


def parse_time(value: Any) -> float | None:
    """Petri's timestamps ("2026-12-04 08:15:57.443167", ISO, naive = UTC) as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace(" ", "T", 1))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def read_petri(path: Path) -> PetriTranscript:
    """Read and check one file; SpecError (file and field) when it is not a Petri v3 transcript."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; not read")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except RecursionError:
        raise SpecError(f"{path}: nested too deeply to be a transcript") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(path, "(top level)", "expected an object with 'metadata' and 'events'")
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        raise _fail(path, "metadata", "missing or not an object")
    version = metadata.get("version")
    if not isinstance(version, str) or version.split(".")[0] != SUPPORTED_MAJOR:
        raise _fail(path, "metadata.version", f"{version!r} is not a Petri transcript version this reads (v3.x)")
    events = data.get("events")
    if not isinstance(events, list):
        raise _fail(path, "events", "missing or not a list")
    for index, event in enumerate(events):
        where = f"events[{index}]"
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise _fail(path, f"{where}.type", "every event is an object with a 'type'")
        if event["type"] == "transcript_event":
            views = event.get("view")
            views = views if isinstance(views, list) else [views]
            if not views or any(v not in (*VIEWS, "judge", "realism") for v in views):
                raise _fail(path, f"{where}.view", f"{event.get('view')!r} is not a view")
            edit = event.get("edit")
            if not isinstance(edit, dict) or edit.get("operation") not in ("add", "rollback", "reset", "json_patch"):
                raise _fail(path, f"{where}.edit.operation", "expected add, rollback, reset or json_patch")
    judged = metadata.get("judge_output")
    if judged is not None and not isinstance(judged, dict):
        raise _fail(path, "metadata.judge_output", "not an object")
    return PetriTranscript(path=path, metadata=metadata, events=events)


# --- RFC 6902 over a view's message list ----------------------------------------------------
def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise ValueError(f"bad JSON pointer {path!r}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"bad JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(node: list[Any], key: str, *, insert: bool) -> int:
    """A list index as RFC 6901 spells it: digits, no sign or leading zero; `len` only to insert."""
    if insert and key == "-":
        return len(node)
    if not key.isdigit() or (len(key) > 1 and key[0] == "0"):
        raise ValueError(f"bad array index {key!r}")
    index = int(key)
    if index > len(node) or (index == len(node) and not insert):
        raise ValueError(f"index {index} is past the end")
    return index


def _child(node: Any, key: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, key, insert=False)]
    if isinstance(node, dict):
        if key not in node:
            raise ValueError(f"no member {key!r}")
        return node[key]
    raise ValueError(f"{key!r} is inside a value that has no members")


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = _child(node, part)
    return node, parts[-1]


def _add(doc: Any, parts: list[str], value: Any) -> None:
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        parent.insert(_index(parent, key, insert=True), value)
    elif isinstance(parent, dict):
        parent[key] = value
    else:
        raise ValueError(f"{key!r} is inside a value that has no members")


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(_index(parent, key, insert=False))
    _child(parent, key)
    return parent.pop(key)


def _touched(view: list[Any], parts: list[str]) -> int:
    """The first top-level position an op at `parts` can change (a view's messages before it stay)."""
    if not parts:
        return 0
    key = parts[0]
    return len(view) if key == "-" else int(key) if key.isdigit() else 0


def apply_patch(view: list[Any], patch: Any) -> int:
    """Apply the RFC 6902 `patch` (add, remove, replace, move, test) to `view` in place; ValueError if it
    does not apply. Returns the first position it may have changed: messages before it are as they were.

    The whole document is never replaced, and `copy` is refused: Petri never writes it, and repeated
    copies could double a file's size with each op.
    """
    if not isinstance(patch, list):
        raise ValueError("the patch is not a list of operations")
    first = len(view)
    for op in patch:
        if not isinstance(op, dict):
            raise ValueError("an operation is not an object")
        kind, parts = op.get("op"), _pointer(op.get("path"))
        if not parts and kind != "test":
            raise ValueError(f"{kind} of the whole view")
        try:
            if kind == "test":
                node = view
                for part in parts:
                    node = _child(node, part)
                if node != op.get("value"):
                    raise ValueError(f"test failed at {op.get('path')!r}")
                continue
            first = min(first, _touched(view, parts))
            if kind == "add":
                _add(view, parts, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                _remove(view, parts)
            elif kind == "replace":
                parent, key = _parent(view, parts)
                if isinstance(parent, list):
                    parent[_index(parent, key, insert=False)] = copy.deepcopy(op.get("value"))
                else:
                    _child(parent, key)
                    parent[key] = copy.deepcopy(op.get("value"))
            elif kind == "move":
                source = _pointer(op.get("from", op.get("from_")))
                if not source or parts[: len(source)] == source:
                    raise ValueError("a move into itself")
                first = min(first, _touched(view, source))
                _add(view, parts, _remove(view, source))
            else:
                raise ValueError(f"unknown or refused op {kind!r}")
        except (IndexError, KeyError, TypeError) as exc:
            raise ValueError(f"{kind} {op.get('path')!r} does not apply ({type(exc).__name__})") from None
        except ValueError as exc:
            raise ValueError(f"{kind} {op.get('path')!r} does not apply: {exc}") from None
    return first


@dataclass
class ViewEdit:
    """One edit of one view: the view kept its first `kept` messages, lost `dropped` after them, and
    gained `added` (the view's messages from `kept` on, as they are after the edit)."""

    view: str
    name: str  # Petri's step name ("Send Message", "Rollback", …); "" when absent
    kept: int
    dropped: int
    added: list[dict[str, Any]]
    time: float | None
    index: int  # the event's position in the file, for errors


def _edit(view: list[dict[str, Any]], edit: dict[str, Any]) -> int:
    """Apply one edit to `view` in place; returns how many leading messages it left as they were."""
    operation = edit["operation"]
    if operation == "add":
        view.append(copy.deepcopy(edit.get("message")))
        return len(view) - 1
    if operation == "rollback":
        to_id, count = edit.get("to_id"), edit.get("count") or 0
        if to_id is not None:
            ids = [m.get("id") for m in view]
            if to_id not in ids:
                raise ValueError(f"rollback to {to_id!r}, which the view does not hold")
            keep = ids.index(to_id) + 1
        elif isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= len(view):
            keep = len(view) - count
        else:
            raise ValueError(f"rollback count {count!r} is not a number of messages in the view")
        del view[keep:]
        return keep
    if operation == "reset":
        fresh = edit.get("new_messages") or []
        if not isinstance(fresh, list):
            raise ValueError("new_messages is not a list")
        view[:] = copy.deepcopy(fresh)
        return 0
    return apply_patch(view, edit.get("patch") or [])


def replay(transcript: PetriTranscript) -> Iterator[ViewEdit | ToolMade]:
    """Every edit of the auditor and target views and every tool made for the target, in the file's order.

    Views are edited in place and each edit is described by what it kept (`ViewEdit`), so a
    long transcript replays in time proportional to its edits. The combined view is
    replayed, so that a patch that does not apply is caught, but not yielded: it is a mix
    of the other two.
    """
    views: dict[str, list[dict[str, Any]]] = {}
    for index, event in enumerate(transcript.events):
        if event["type"] == "tool_creation_event" and isinstance(event.get("tool"), dict):
            yield ToolMade(event["tool"], parse_time(event.get("timestamp")), index)
        if event["type"] != "transcript_event":
            continue
        names = event["view"] if isinstance(event["view"], list) else [event["view"]]
        for view in dict.fromkeys(names):  # a view named twice is edited once
            messages = views.setdefault(view, [])
            before = len(messages)
            try:
                kept = min(_edit(messages, event["edit"]), before, len(messages))
            except ValueError as exc:
                raise _fail(transcript.path, f"events[{index}].edit", str(exc)) from None
            added = messages[kept:]
            if any(not isinstance(m, dict) or not isinstance(m.get("role"), str) for m in added):
                raise _fail(transcript.path, f"events[{index}].edit", "a message without a 'role'")
            if len(messages) > MAX_VIEW_MESSAGES:
                raise _fail(transcript.path, f"events[{index}].edit", f"more than {MAX_VIEW_MESSAGES} messages")
            if view in ("auditor", "target"):
                yield ViewEdit(view, str(event["edit"].get("name") or ""), kept, before - kept,
                               copy.deepcopy(added), parse_time(event.get("timestamp")), index)
