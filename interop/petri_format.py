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


def _fail(path: Path, field: str, why: str) -> SpecError:
    return SpecError(f"{path}: field '{field}': {why}")


@dataclass
class ViewEdit:
    """One edit of one view, replayed: the view's messages before and after it."""

    view: str
    name: str  # Petri's step name ("Send Message", "Rollback", …); "" when absent
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    time: float | None


@dataclass
class ToolMade:
    """A `tool_creation_event`: the auditor gave the target a synthetic tool."""

    tool: dict[str, Any]
    time: float | None


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
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"bad JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, parts[-1]


def _get(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        parent.insert(len(parent) if key == "-" else int(key), value)
    else:
        parent[key] = value
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(int(key))
    return parent.pop(key)


def apply_patch(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """`doc` after the RFC 6902 `patch` (add, remove, replace, move, copy, test); ValueError if it does not apply."""
    doc = copy.deepcopy(doc)
    for op in patch:
        kind, parts = op.get("op"), _pointer(str(op.get("path", "")))
        source = op.get("from", op.get("from_"))
        try:
            if kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                if not parts:
                    doc = copy.deepcopy(op.get("value"))
                else:
                    parent, key = _parent(doc, parts)
                    parent[int(key) if isinstance(parent, list) else key] = copy.deepcopy(op.get("value"))
            elif kind in ("move", "copy"):
                from_parts = _pointer(str(source))
                value = _remove(doc, from_parts) if kind == "move" else copy.deepcopy(_get(doc, from_parts))
                doc = _add(doc, parts, value)
            elif kind == "test":
                if _get(doc, parts) != op.get("value"):
                    raise ValueError(f"test failed at {op.get('path')!r}")
            else:
                raise ValueError(f"unknown op {kind!r}")
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"{kind} {op.get('path')!r} does not apply ({type(exc).__name__})") from None
    return doc


def _edited(view: list[dict[str, Any]], edit: dict[str, Any]) -> list[dict[str, Any]]:
    operation = edit["operation"]
    if operation == "add":
        return [*view, edit.get("message")]
    if operation == "rollback":
        to_id, count = edit.get("to_id"), int(edit.get("count") or 0)
        if to_id is not None:
            ids = [m.get("id") for m in view]
            return view[: ids.index(to_id) + 1] if to_id in ids else view
        return view[: len(view) - count] if count else view
    if operation == "reset":
        return list(edit.get("new_messages") or [])
    patched = apply_patch(view, list(edit.get("patch") or []))
    if not isinstance(patched, list):
        raise ValueError("the patched view is not a list of messages")
    return patched


def replay(transcript: PetriTranscript) -> Iterator[ViewEdit | ToolMade]:
    """Every edit of the auditor and target views (with the view before and after) and every tool
    made for the target, in the file's order.

    The combined view is replayed, so that a patch that does not apply is caught, but not
    yielded: it is a mix of the other two.
    """
    views: dict[str, list[dict[str, Any]]] = {}
    for index, event in enumerate(transcript.events):
        if event["type"] == "tool_creation_event" and isinstance(event.get("tool"), dict):
            yield ToolMade(event["tool"], parse_time(event.get("timestamp")))
        if event["type"] != "transcript_event":
            continue
        names = event["view"] if isinstance(event["view"], list) else [event["view"]]
        for view in names:
            before = views.get(view, [])
            try:
                after = _edited(before, event["edit"])
            except ValueError as exc:
                raise _fail(transcript.path, f"events[{index}].edit", str(exc)) from None
            if any(not isinstance(m, dict) or not isinstance(m.get("role"), str) for m in after):
                raise _fail(transcript.path, f"events[{index}].edit", "a message without a 'role'")
            views[view] = after
            if view in ("auditor", "target"):
                yield ViewEdit(view, str(event["edit"].get("name") or ""), before, after,
                               parse_time(event.get("timestamp")))

