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
    doc = [{"id": "a"}, {"id": "b"}]
    appended = apply_patch(doc, [{"op": "add", "path": "/-", "value": {"id": "c"}}])
    assert appended == [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    assert apply_patch(doc, [{"op": "replace", "path": "/0/id", "value": "z"}])[0] == {"id": "z"}
    assert apply_patch(doc, [{"op": "move", "from_": "/0", "path": "/1"}]) == [{"id": "b"}, {"id": "a"}]
    assert apply_patch(doc, [{"op": "copy", "from": "/1", "path": "/0"}])[:2] == [{"id": "b"}, {"id": "a"}]
    assert doc == [{"id": "a"}, {"id": "b"}]  # never in place
    with pytest.raises(ValueError, match="test failed"):
        apply_patch(doc, [{"op": "test", "path": "/0/id", "value": "nope"}])
