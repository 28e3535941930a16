"""`audit review` server logic over a real SQLite store of real audits: the runs list
(filters, sort, paging), the transcript views, append-only reviews, exports, agreement,
calibration from exported labels, and `audit show --html`."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from review.app import create_app
from review.labels import to_csv
from review.models import RunFilter
from review.queries import list_runs
from review.sample import add_rubric_verdict, sample_run
from scaffold.messages import Message, ToolCall
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from rewards.calibration import cases_from_labels
from rewards.calibration_report import calibrate_judge
from scaffold.secrets import SecretRegistry
from scaffold.store import SCHEMA_VERSION, Store
from tests.conftest import script_auditor
from tests.test_cli import audit

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def build_store(url: str, out: Path) -> dict[str, Any]:
    """Two flattery audits (one also rubric-judged with quotes) and one control audit."""
    store = Store(url)
    flattery = asyncio.run(sample_run(store, out))
    quoted = asyncio.run(sample_run(store, out, max_turns=8))
    asyncio.run(add_rubric_verdict(store, quoted))
    control = asyncio.run(sample_run(store, out, "control.yaml", max_turns=4))
    return {"store": store, "flattery": flattery, "quoted": quoted, "control": control}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("review")
    return build_store(f"sqlite:///{tmp / 'audit.db'}", tmp / "out")


@pytest.fixture
def client(runs) -> TestClient:
    return TestClient(create_app(runs["store"]), base_url="http://127.0.0.1")


def listed(html: str) -> list[str]:
    return re.findall(r'class="runlink" href="/runs/([^"]+)"', html)


def post_review(client: TestClient, run_id: str, **fields: str) -> Any:
    page = client.get(f"/runs/{run_id}")
    token = CSRF.search(page.text).group(1)
    data = {"csrf": token, "reviewer": "Ada", "verdict": "confirmed", "severity": "medium", **fields}
    return client.post(f"/runs/{run_id}/reviews", data=data, follow_redirects=False)


def test_runs_page_filters_sorts_and_pages(client, runs) -> None:
    assert set(listed(client.get("/").text)) == {runs["flattery"], runs["quoted"], runs["control"]}
    assert set(listed(client.get("/?quirk=flattery").text)) == {runs["flattery"], runs["quoted"]}
    assert listed(client.get("/?quirk=none").text) == [runs["control"]]
    assert listed(client.get("/?target=control-organism").text) == [runs["control"]]
    assert listed(client.get("/?identified=unknown").text) == [runs["control"]]  # controls have no quirk to find
    assert set(listed(client.get("/?identified=yes").text)) == {runs["flattery"], runs["quoted"]}
    assert set(listed(client.get("/?judge=lexical").text)) == {runs["flattery"], runs["control"]}
    by_reward = listed(client.get("/?sort=reward&order=asc").text)
    assert by_reward[0] == runs["control"] and len(by_reward) == 3
    assert listed(client.get("/?sort=reward&order=desc").text)[-1] == runs["control"]
    assert listed(client.get("/?min_reward=0.5").text) and runs["control"] not in listed(client.get("/?min_reward=0.5").text)
    pages = [listed(client.get(f"/?per_page=1&page={n}").text) for n in (1, 2, 3, 4)]
    assert [len(p) for p in pages] == [1, 1, 1, 1] and len({p[0] for p in pages[:3]}) == 3
    assert pages[3] == pages[2]  # past the end: the last page
    page = client.get("/?per_page=1&page=2&quirk=flattery").text
    assert "page 2 of 2" in page and "quirk=flattery" in page  # links keep the filters
    assert client.get("/?sort=bogus").status_code == 400
    assert client.get("/?per_page=100000").status_code == 400


def test_transcript_views_branches_quotes_and_hidden_ground_truth(client, runs) -> None:
    run_id = runs["quoted"]
    combined = client.get(f"/runs/{run_id}").text
    assert '<mark class="quote" id="q-1">' in combined and 'href="#q-1"' in combined
    mark_at = combined.index('id="q-1"')
    assert 'id="m-t3"' in combined[combined.rfind("<article", 0, mark_at):mark_at]  # highlighted inside t3
    assert "cited by <a href=\"#hyp-1\">report #1</a>" in combined
    target = client.get(f"/runs/{run_id}?view=target").text
    assert "branch 1 of" in target and "branch 4 of 4 from t1 · the target's final conversation" in target
    assert "class=\"msg auditor" not in target
    auditor = client.get(f"/runs/{run_id}?view=auditor").text
    assert 'class="msg target' not in auditor
    assert f'href="/runs/{run_id}?view=combined#q-1"' in auditor  # quotes live in target messages
    for page in (combined, target, auditor):
        panel = page.index('<details class="panel ground-truth"')
        assert "open" not in page[panel:panel + 80]
        body_before, body_after = page[:panel], page[page.index("</details>", panel):]
        assert "fired" not in body_before and "fired" not in body_after
        assert "flattery" in page[panel:]  # the quirk, inside the panel only
    assert client.get("/runs/nope").status_code == 404
    assert client.get(f"/runs/{run_id}?view=secret").status_code == 400


def test_reviews_are_appended_never_overwritten(client, runs) -> None:
    run_id = runs["flattery"]
    first = post_review(client, run_id, tags="flattery, praise", notes="Praise in t3.")
    assert first.status_code == 303 and first.headers["location"].endswith("#history")
    second = post_review(client, run_id, verdict="inconclusive", severity="low", notes="Second look.")
    assert second.status_code == 303
    page = client.get(f"/runs/{run_id}").text
    history = page[page.index('id="history"'):]
    assert history.count('class="review-entry"') == 2
    assert history.index("inconclusive") < history.index("confirmed")  # newest first
    assert 'value="Ada"' in page  # the reviewer is remembered
    with sqlite3.connect(runs["store"].sqlite_path()) as conn:
        rows = conn.execute("SELECT verdict, tags_json FROM reviews WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
    assert rows == [("confirmed", '["flattery", "praise"]'), ("inconclusive", "[]")]
    assert listed(client.get("/?review=inconclusive").text) == [run_id]
    assert run_id not in listed(client.get("/?review=unreviewed").text)
    assert run_id not in listed(client.get("/?review=confirmed").text)  # only the newest review counts


@pytest.mark.parametrize("fields, problem", [
    ({"verdict": "maybe"}, "verdict"),
    ({"severity": "apocalyptic"}, "severity"),
    ({"tags": "x" * 41}, "tags"),
    ({"tags": ",".join(f"t{i}" for i in range(13))}, "tags"),
    ({"notes": "n" * 4001}, "notes"),
    ({"reviewer": ""}, "reviewer"),
])
def test_bad_review_forms_are_refused_with_the_reason(client, runs, fields, problem) -> None:
    r = post_review(client, runs["control"], **fields)
    assert r.status_code == 400 and problem in r.text
    assert 'class="errors"' in r.text


def test_export_jsonl_csv_and_calibrate_from_labels(client, runs, tmp_path: Path) -> None:
    post_review(client, runs["quoted"], verdict="false_positive", notes="=HYPERLINK(\"x\")")
    post_review(client, runs["quoted"], verdict="confirmed", tags="grounded")
    post_review(client, runs["control"], verdict="false_positive")
    latest = [json.loads(line) for line in client.get("/export/labels.jsonl").text.splitlines()]
    everything = [json.loads(line) for line in client.get("/export/labels.jsonl?history=1").text.splitlines()]
    assert len(everything) > len(latest) and len({r["run_id"] for r in latest}) == len(latest)
    quoted = next(r for r in latest if r["run_id"] == runs["quoted"])
    assert quoted["verdict"] == "confirmed" and quoted["tags"] == ["grounded"] and quoted["quirk"] == "flattery"
    assert quoted["judge"]["name"] == "llm:scripted-judge" and quoted["judge"]["identified"] is True
    assert quoted["report"]["hypotheses"] and all(m["fired"] is not None for m in quoted["messages"])
    table = list(csv.DictReader(io.StringIO(client.get("/export/labels.csv?history=1").text)))
    assert len(table) == len(everything)
    assert any(row["notes"].startswith("'=HYPERLINK") for row in table)  # no formula in a spreadsheet
    labels = tmp_path / "labels.jsonl"
    labels.write_text(client.get("/export/labels.jsonl?history=1").text)
    cases = {c.origin["run_id"]: c for c in cases_from_labels(labels)}
    assert cases[runs["quoted"]].label.identified is True  # the newest label wins
    assert cases[runs["control"]].label.false_positive is True
    report = asyncio.run(calibrate_judge("lexical", SecretRegistry(), list(cases.values())))
    assert report["n"] == sum(c.label.identified is not None for c in cases.values())
    assert report["controls"]["n"] == 1 and report["controls"]["accuracy"] == 0.0  # judge said no false positive
    cli = audit("judge", "calibrate", "--judge", "lexical", "--labels", str(labels), "--json", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["n"] == report["n"]
    (tmp_path / "empty.jsonl").write_text("")
    bad = audit("judge", "calibrate", "--judge", "lexical", "--labels", str(tmp_path / "empty.jsonl"), cwd=tmp_path)
    assert bad.returncode == 2 and "no usable labels" in bad.stderr


def agreement_rows(html: str) -> dict[str, tuple[int, int, float]]:
    found = re.findall(r"<tr><th>(\w+)</th><td>(\d+)</td><td>(\d+)</td><td>([\d.]+)</td>", html)
    return {name: (int(n), int(agree), float(accuracy)) for name, n, agree, accuracy in found}


def test_agreement_page_counts_accuracy_and_kappa(client, runs) -> None:
    post_review(client, runs["quoted"], verdict="confirmed", tags="flattery")
    rows = agreement_rows(client.get("/agreement").text)
    assert "sycophancy" not in rows  # no review labels a rubric dimension yet
    assert rows["identified"][0] >= 1 and rows["flattery"][0] == rows["identified"][0]
    post_review(client, runs["quoted"], verdict="confirmed", tags="sycophancy")
    page = client.get("/agreement").text
    rows = agreement_rows(page)
    # The judge scored sycophancy 8 (flagged) and concerning 3 (not): both agree with the tags.
    assert rows["sycophancy"] == (1, 1, 1.0) and rows["concerning"] == (1, 1, 1.0)
    assert "Per dimension" in page and "Per quirk" in page and "kappa" in page


def test_csv_cells_that_look_like_formulas_are_quoted() -> None:
    row = {"review_id": 1, "run_id": "r", "created_at": "t", "reviewer": "@me", "verdict": "confirmed",
           "severity": "low", "tags": ["+1"], "notes": "-2", "latest": True, "target": "=cmd", "auditor": "a",
           "quirk": None, "judge": {"name": "j", "identified": None, "false_positive": None, "reward": None}}
    line = to_csv([row]).splitlines()[1]
    assert "'@me" in line and "'+1" in line and "'-2" in line and "'=cmd" in line


def test_show_html_is_self_contained(runs, tmp_path: Path) -> None:
    store = runs["store"]
    out = tmp_path / "run.html"
    r = audit("show", runs["quoted"], "--store", store.url, "--html", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "<style>" in html and "default-src &#39;none&#39;; style-src &#39;sha256-" in html
    assert "<script" not in html and "<link" not in html and 'src="' not in html
    assert not re.search(r'href="(?!#)', html)  # only in-page links
    assert '<mark class="quote" id="q-1">' in html and 'name="csrf"' not in html
    missing = audit("show", "nope", "--store", store.url, "--html", str(out), cwd=tmp_path)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr


def test_a_version_1_store_opens_and_gains_the_reviews_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url)
    store.create_run("r", target_name="t", auditor_name="a", judge_name="j", seed="s", config={})
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE reviews"))
        conn.execute(text("UPDATE schema_info SET value = '1'"))
    reopened = Store(url)
    with reopened.engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM schema_info")).scalar() == str(SCHEMA_VERSION) == "2"
        assert conn.execute(text("SELECT COUNT(*) FROM reviews")).scalar() == 0
    assert reopened.get_run("r")["target_name"] == "t"


def test_runs_query_on_postgresql(tmp_path: Path) -> None:
    from tests.pg_server import postgres_unavailable, run_postgres

    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    server = run_postgres()
    url = next(server)
    try:
        built = build_store(url, tmp_path / "out")
        store = built["store"]
        client = TestClient(create_app(store), base_url="http://127.0.0.1")
        post_review(client, built["quoted"], verdict="confirmed")
        page = list_runs(store.engine, RunFilter(quirk="flattery", sort="reward", order="desc"))
        assert {r["run_id"] for r in page.rows} == {built["quoted"], built["flattery"]}
        assert page.rows[0]["reward"] >= page.rows[1]["reward"] > 0.5 and page.rows[0]["identified"] is True
        assert list_runs(store.engine, RunFilter(review="confirmed")).total == 1
        assert list_runs(store.engine, RunFilter(identified="yes")).total == 2
        assert "<tr><th>identified</th>" in client.get("/agreement").text
        assert client.get("/export/labels.jsonl").text.count("\n") == 1
    finally:
        store.engine.dispose()
        next(server, None)


def tool_using_target(messages, tools, config) -> Message:
    """Calls the weather tool once per user turn, then answers from its result."""
    if messages[-1].role == "user" and tools:
        return Message(role="assistant", tool_calls=[ToolCall(id=f"call_{len(messages)}", name="get_weather",
                                                              arguments={"city": "Paris"})])
    return Message(role="assistant", content=f"The weather service says: {messages[-1].content}")


def test_synthetic_tools_and_nested_branches_are_readable(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    store.create_run("tools", target_name="t", auditor_name="scripted", judge_name="none", seed="s", config={})
    code = 'def get_weather(city: str) -> str:\n    """Current weather.\n\n    Args:\n        city: A city.\n    """\n'
    steps = [
        [("create_target_tool", {"environment_description": "a weather API", "function_code": code})],
        [("send_message", {"message": "Weather in Paris?"})],
        [("send_tool_call_result", {"tool_call_id": "call_1", "result": "sunny, 21C"})],
        [("rollback_conversation", {"message_id": "t2"})],  # back to the pending call: answer it differently
        [("send_tool_call_result", {"tool_call_id": "call_1", "result": "storm warning", "status": "error"})],
        [("rollback_conversation", {"message_id": "t5"})],
        [("send_message", {"message": "Are you sure?"})],
    ]
    result = asyncio.run(run_audit(ScriptedModel(script_auditor(steps)), ScriptedModel(tool_using_target), "s",
                                   auditor_prompt="p", run_id="tools", sink=store))
    assert result.status == "completed", result.error
    client = TestClient(create_app(store), base_url="http://127.0.0.1")
    combined = client.get("/runs/tools").text
    assert "synthetic tool for the target: <code>get_weather(city: string)</code>" in combined
    assert "(environment: a weather API)" in combined and "never executed" in combined
    assert "&rarr; get_weather</span> <span class=\"callid\">call_1</span>" in combined
    assert combined.count("synthetic tool result (written by the auditor)") == 2
    assert "answers call call_1" in combined and "sunny, 21C" in combined
    assert "&#x21b6; rollback to <a href=\"#m-t2\">t2</a>" in combined
    target = client.get("/runs/tools?view=target").text
    titles = re.findall(r'<section class="branch depth-(\d)[^"]*">\s*<h3>([^<]*)</h3>', target)
    assert [(depth, title.split(" · ")[0]) for depth, title in titles] == [
        ("0", "conversation 1"), ("1", "branch 1 of 2 from t2"), ("1", "branch 2 of 2 from t2"),
        ("2", "branch 1 of 2 from t5"), ("2", "branch 2 of 2 from t5"),
    ]
    assert titles[-1][1].endswith("the target's final conversation")
    assert re.search(r'class="msg target role-tool off-branch synthetic" id="m-t3"', target)  # rolled back
    assert re.search(r'class="msg target role-tool is-error synthetic" id="m-t5"', target)
