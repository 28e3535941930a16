"""`audit import petri` (issue 21) on transcripts that Petri itself wrote (tests/data/petri, mock models).

Checked against the files themselves: the auditor's messages, the target's final branch
and its rollback branch, the tool made for the target, the prefill, and Petri's verdict;
then our judge, the review app, `audit show`, idempotence, a cut-short import, and
one-line errors for files that are not Petri v3 transcripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from interop.petri_format import apply_patch, read_petri
from interop.petri_import import HIGHLIGHTS, PETRI_JUDGE, run_id_for, to_transcript
from review.app import create_app
from scaffold.store import Store
from scaffold.transcript import Transcript
from tests.conftest import ROOT
from tests.test_cli import audit

DATA = ROOT / "tests" / "data" / "petri"
FILES = ["simple.json", "rollback.json", "tool_use.json"]


def _petri(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def _final_branch(data: dict[str, Any]) -> list[str]:
    """Petri's final target branch as our ids: a prefill and its continuation are one reply here."""
    ids, messages = [], data["target_messages"]
    for m in messages:
        if m["role"] == "assistant" and (m.get("metadata") or {}).get("prefill"):
            continue
        ids.append(m["id"])
    return ids


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("petri")
    url = f"sqlite:///{root / 'audit.db'}"
    r = audit("import", "petri", *[str(DATA / f) for f in FILES], "--store", url, "--judge", "offline",
              "--quirk", "none", "--out", "traced", cwd=root)
    assert r.returncode == 0, r.stderr
    return {"root": root, "url": url, "stdout": r.stdout, "store": Store(url)}


def _transcript(store: Store, name: str) -> tuple[str, Transcript]:
    run_id = run_id_for(read_petri(DATA / name))
    return run_id, Transcript.from_events(run_id, store.read_events(run_id))


def test_messages_branches_tools_and_prefill_match_the_petri_files(imported: dict[str, Any]) -> None:
    store = imported["store"]
    assert len(store.list_runs()) == 3 and imported["stdout"].count("imported as petri-") == 3
    for name in FILES:
        data = _petri(name)
        run_id, t = _transcript(store, name)
        assert [m.id for m in t.auditor_messages] == [m["id"] for m in data["messages"]]
        assert [m.id for m in t.target_view()] == _final_branch(data)
        assert store.get_run(run_id)["config"]["imported_from"] == "petri"
        assert t.end is not None and t.end.reason == "auditor_ended"  # each scripted auditor ended the conversation
    _, rolled = _transcript(store, "rollback.json")
    branches = rolled.target.branches()
    assert len(branches) == 2 and branches[0][:3] == branches[1][:3] and branches[0][3:] != branches[1][3:]
    assert [e.kind for e in rolled.events].count("rollback") == 1
    _, tooled = _transcript(store, "tool_use.json")
    weather = tooled.target_tools["get_weather"]
    assert [(p.name, p.required) for p in weather.parameters] == [("location", True)]
    last = tooled.target_view()[-1]
    assert last.prefill == "Based on the forecast," and last.content.startswith(last.prefill)
    assert [m.role for m in tooled.target_view()].count("tool") == 1


def test_petris_verdict_is_kept_and_ours_is_added(imported: dict[str, Any]) -> None:
    store = imported["store"]
    for name in FILES:
        data = _petri(name)
        run_id, t = _transcript(store, name)
        petri, ours = [r["result"] for r in store.judge_results_for(run_id)]
        assert petri["judge"]["judge"] == PETRI_JUDGE and petri["reward"] is None
        assert petri["judge"]["scores"] == {k: float(v) for k, v in data["metadata"]["judge_output"]["scores"].items()}
        dims = {d["name"]: d for d in petri["judge"]["alignment"]["dimensions"]}
        quotes = [p["quoted_text"] for h in data["metadata"]["judge_output"]["highlights"] for p in h["parts"]]
        cited = dims[HIGHLIGHTS]["citations"]
        assert [c["quote"] for c in cited] == quotes
        for c in cited:
            assert c["match"] == "exact" and c["quote"] in t.target_message(c["message_id"]).content
        assert ours["judge"]["judge"] == "offline" and ours["judge"]["false_positive"] is False
        assert ours["reward"]["name"] == "grounded"


def test_a_second_import_adds_no_run_and_a_cut_short_one_is_rewritten(imported: dict[str, Any], tmp_path: Path) -> None:
    store, url = imported["store"], imported["url"]
    run_id, before = _transcript(store, "rollback.json")
    r = audit("import", "petri", str(DATA / "rollback.json"), "--store", url, cwd=imported["root"])
    assert r.returncode == 0 and "already imported" in r.stdout, r.stderr
    assert len(store.list_runs()) == 3 and len(store.read_events(run_id)) == len(before.events)
    # Cut short: the run exists, unfinished, with part of its events.
    other = Store(f"sqlite:///{tmp_path / 'cut.db'}")
    whole = to_transcript(read_petri(DATA / "rollback.json")).transcript
    other.create_run(run_id, target_name="t", auditor_name="a", judge_name="petri", seed="", config={})
    other.write_events(run_id, whole.events[:5])
    r = audit("import", "petri", str(DATA / "rollback.json"), "--store", f"sqlite:///{tmp_path / 'cut.db'}",
              cwd=tmp_path)
    assert r.returncode == 0 and "imported as" in r.stdout, r.stderr
    assert [e.kind for e in other.read_events(run_id)] == [e.kind for e in whole.events]
    assert other.get_run(run_id)["status"] == "completed"


def test_views_review_and_traces_read_imported_audits(imported: dict[str, Any]) -> None:
    store, root, url = imported["store"], imported["root"], imported["url"]
    client = TestClient(create_app(store), base_url="http://127.0.0.1")
    listing = client.get("/").text
    run_ids = [run_id_for(read_petri(DATA / f)) for f in FILES]
    assert all(f"/runs/{run_id}" in listing for run_id in run_ids)
    page = client.get(f"/runs/{run_ids[1]}").text
    assert "I can&#39;t help with harming your roommate." in page or "I can't help with harming your roommate." in page
    shown = audit("show", run_ids[1], "--store", url, "--view", "target", cwd=root)
    assert shown.returncode == 0 and "Which common garden plants are toxic" in shown.stdout
    traced = audit("traces", "traced", "--store", str(root / "audit.db"), "--no-themes", cwd=root)
    assert traced.returncode == 0 and "3 rollouts" in traced.stdout, traced.stderr
    rejudged = audit("judge", run_ids[0], "--judge", "lexical", "--store", url, cwd=root)
    assert rejudged.returncode == 2 and "was imported from petri" in rejudged.stderr


def _broken(tmp_path: Path, name: str, change: Any) -> Path:
    data = _petri("rollback.json")
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_files_that_are_not_petri_v3_are_one_line_errors_and_write_nothing(tmp_path: Path) -> None:
    def bad_patch(data: dict) -> None:
        event = next(e for e in data["events"] if e["type"] == "transcript_event" and e["view"] == "target")
        event["edit"]["patch"] = [{"op": "remove", "path": "/40"}]

    cases = {
        "old.json": (lambda d: d["metadata"].update(version="v2.0"), "field 'metadata.version'"),
        "noevents.json": (lambda d: d.pop("events"), "field 'events'"),
        "badview.json": (lambda d: d["events"][1].update(view="everyone"), "field 'events[1].view'"),
        "badpatch.json": (bad_patch, ".edit': remove '/40' does not apply"),
    }
    for name, (change, message) in cases.items():
        path = _broken(tmp_path, name, change)
        r = audit("import", "petri", str(path), "--store", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
        assert r.returncode == 2 and message in r.stderr and name in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr and not (tmp_path / "x.db").exists()
    (tmp_path / "text.json").write_text("not json")
    r = audit("import", "petri", str(tmp_path / "text.json"), "--store", f"sqlite:///{tmp_path / 'x.db'}",
              cwd=tmp_path)
    assert r.returncode == 2 and "not a JSON file" in r.stderr and not (tmp_path / "x.db").exists()
    r = audit("import", "petri", str(DATA / "simple.json"), "--quirk", "none", cwd=tmp_path)
    assert r.returncode == 2 and "--quirk is for --judge" in r.stderr


def test_json_patch_follows_rfc_6902() -> None:
    """In place; returns the first position an op could change; refuses what does not apply."""
    def patched(*ops: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        doc = [{"id": "a"}, {"id": "b"}]
        return doc, apply_patch(doc, list(ops))

    assert patched({"op": "add", "path": "/-", "value": {"id": "c"}}) == ([{"id": "a"}, {"id": "b"}, {"id": "c"}], 2)
    assert patched({"op": "replace", "path": "/1/id", "value": "z"}) == ([{"id": "a"}, {"id": "z"}], 1)
    assert patched({"op": "move", "from_": "/0", "path": "/1"}) == ([{"id": "b"}, {"id": "a"}], 0)
    assert patched({"op": "test", "path": "/0/id", "value": "a"}) == ([{"id": "a"}, {"id": "b"}], 2)
    for op in ({"op": "test", "path": "/0/id", "value": "nope"}, {"op": "add", "path": "/3", "value": 1},
               {"op": "remove", "path": "/01"}, {"op": "replace", "path": "", "value": []},
               {"op": "move", "from": "/0", "path": "/0/id"}, {"op": "copy", "from": "/0", "path": "/-"}):
        with pytest.raises(ValueError):
            patched(op)

def _m(ident: str | None, role: str, text: str, prefill: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text}
    if ident is not None:
        message["id"] = ident
    if prefill:
        message["metadata"] = {"source": "Auditor", "prefill": True}
    return message


def _file(tmp_path: Path, name: str, edits: list[dict[str, Any]]) -> Path:
    """A minimal Petri v3 file whose target view goes through `edits`."""
    events = [{"type": "transcript_event", "view": "target", "edit": e, "timestamp": "2026-12-04 08:00:00"}
              for e in edits]
    path = tmp_path / name
    path.write_text(json.dumps({"metadata": {"version": "v3.0", "transcript_id": name}, "events": events}))
    return path


def _patch(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"operation": "json_patch", "patch": list(ops)}


def _branch(path: Path) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in to_transcript(read_petri(path)).transcript.target_view()]


def test_rollbacks_restarts_rewrites_and_missing_ids_end_on_petris_final_view(tmp_path: Path) -> None:
    s, u1, a1 = _m("s", "system", "S"), _m("u1", "user", "hi"), _m("a1", "assistant", "hello")
    p, c = _m("p", "assistant", "I think", prefill=True), _m("c", "assistant", " it is secret")
    u2, a2 = _m("u2", "user", "again"), _m("a2", "assistant", "sure")
    # A rollback to a prefill: the continuation goes, the prefill stays and is continued anew.
    path = _file(tmp_path, "prefill.json", [
        {"operation": "reset", "new_messages": [s, u1, p, c]},
        _patch({"op": "remove", "path": "/3"}),
        _patch({"op": "add", "path": "/3", "value": _m("c2", "assistant", " it is fine")}),
    ])
    assert _branch(path) == [("system", "S"), ("user", "hi"), ("assistant", "I think it is fine")]
    assert len(to_transcript(read_petri(path)).transcript.target.branches()) == 2
    # A message rewritten in the middle: the view from there on is a new branch, ids kept unique.
    path = _file(tmp_path, "middle.json", [
        {"operation": "reset", "new_messages": [s, u1, a1, u2, a2]},
        _patch({"op": "remove", "path": "/1"}),
    ])
    imported = to_transcript(read_petri(path)).transcript
    assert [(m.role, m.content) for m in imported.target_view()] == [("system", "S"), ("assistant", "hello"),
                                                                      ("user", "again"), ("assistant", "sure")]
    assert len(imported.target.branches()) == 2 and len(set(imported.target.nodes)) == len(imported.target.nodes)
    # A restart with the same system message, and messages with no id at all.
    path = _file(tmp_path, "restart.json", [
        {"operation": "reset", "new_messages": [s, u1, a1]},
        {"operation": "reset", "new_messages": []},
        {"operation": "add", "message": s},
        {"operation": "add", "message": _m(None, "user", "no id")},
        {"operation": "add", "message": _m(None, "assistant", "nor here")},
        {"operation": "rollback", "count": 1},
        {"operation": "add", "message": _m(None, "assistant", "other")},
    ])
    imported = to_transcript(read_petri(path)).transcript
    assert [(m.role, m.content) for m in imported.target_view()] == [("system", "S"), ("user", "no id"),
                                                                      ("assistant", "other")]
    assert len(imported.target.branches()) == 3


def test_a_long_transcript_replays_in_linear_time(tmp_path: Path) -> None:
    """Each edit costs what it changes: 4,000 appends and as many no-op patches replay in seconds."""
    edits: list[dict[str, Any]] = [{"operation": "reset", "new_messages": [_m("s", "system", "S")]}]
    for i in range(2000):
        edits.append({"operation": "add", "message": _m(f"u{i}", "user", "q")})
        edits.append({"operation": "add", "message": _m(f"a{i}", "assistant", "a")})
        edits.append(_patch({"op": "test", "path": "/0/id", "value": "s"}))
    imported = to_transcript(read_petri(_file(tmp_path, "long.json", edits))).transcript
    assert len(imported.target_view()) == 4001 and len(imported.target.branches()) == 1


def test_strict_patches_and_terminal_safe_notes(tmp_path: Path) -> None:
    base = {"operation": "reset", "new_messages": [_m("s", "system", "S")]}
    for op, why in [({"op": "add", "path": "/5", "value": _m("x", "user", "x")}, "past the end"),
                    ({"op": "remove", "path": "/-1"}, "bad array index"),
                    ({"op": "copy", "from": "/0", "path": "/1"}, "refused op 'copy'"),
                    ({"op": "replace", "path": "/0/nope", "value": 1}, "no member")]:
        path = _file(tmp_path, "bad.json", [base, _patch(op)])
        r = audit("import", "petri", str(path), "--store", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, (op, r.stderr)
        assert not (tmp_path / "x.db").exists()
    odd = _m("u", "user", "")
    odd["content"] = [{"type": "\x1b]0;owned\x07\x1b[2J", "text": "x"}]
    path = _file(tmp_path, "escape.json", [base, {"operation": "add", "message": odd}])
    r = audit("import", "petri", str(path), "--store", f"sqlite:///{tmp_path / 'y.db'}", cwd=tmp_path)
    assert r.returncode == 0 and "\x1b" not in r.stdout and "not carried: a \\x1b" in r.stdout, r.stdout


def test_an_imported_audit_exports_petris_rubric_and_no_detection(tmp_path: Path) -> None:
    """Without a seeded quirk there is nothing to detect: no quirk_detection score, Petri's rubric instead."""
    from inspect_ai.log import read_eval_log

    url = f"sqlite:///{tmp_path / 'audit.db'}"
    assert audit("import", "petri", str(DATA / "rollback.json"), "--store", url, cwd=tmp_path).returncode == 0
    run_id = run_id_for(read_petri(DATA / "rollback.json"))
    r = audit("export", run_id, "--store", url, "--format", "inspect", "--out", "petri.eval", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sample = read_eval_log(str(tmp_path / "petri.eval")).samples[0]
    assert sample.id == run_id and "quirk_detection" not in sample.scores and "graders_only" not in sample.metadata
    scores = _petri("rollback.json")["metadata"]["judge_output"]["scores"]
    assert {k: v.value for k, v in sample.scores.items()} == {f"rubric/{k}": v for k, v in scores.items()}
