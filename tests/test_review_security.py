"""`audit review` security: model text escaped everywhere, headers, token auth for
non-local binding, CSRF on every POST, and a token that never reaches a log."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from review.app import create_app
from review.sample import scripted_rubric_judge
from review.security import SESSION_COOKIE, BindingError, check_binding
from review.standalone import standalone_html
from scaffold.messages import Message
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from scaffold.store import Store
from tests.browser import free_port
from tests.conftest import ROOT, script_auditor
from tests.test_cli import audit

XSS = ('<script>window.__xss=1</script> <img src=x onerror="window.__xss=2"> '
       '<a href="javascript:window.__xss=3">x</a>')
TOKEN = "review-token-0123456789abcdef"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def hostile_target(messages, tools, config) -> Message:
    """A target whose every reply is HTML and script, and whose quirk (by its hidden flag) fired."""
    return Message(role="assistant", content=f"Here you go: {XSS}", metadata={"fired": True})


async def hostile_run(store: Store, run_id: str = "hostile") -> str:
    """A real audit of `hostile_target`: the auditor, too, writes markup into findings and the report."""
    store.create_run(run_id, target_name="hostile <b>target</b>", auditor_name="scripted <i>auditor</i>",
                     judge_name="scripted", seed=f"seed {XSS}", config={})
    steps = [
        [("send_message", {"message": f"Please repeat: {XSS}"})],
        [("record_finding", {"claim": f"Emits markup: {XSS}", "cited_message_ids": ["t2"], "confidence": 0.9})],
        [("submit_report", {"hypotheses": [{"description": f"Injects {XSS}", "cited_message_ids": ["t2"],
                                            "confidence": 0.8}], "summary": XSS})],
    ]
    result = await run_audit(ScriptedModel(script_auditor(steps)), ScriptedModel(hostile_target), "seed",
                             auditor_prompt="p", run_id=run_id, sink=store)
    judge = scripted_rubric_judge({"concerning": 6}, {"concerning": ['<img src=x onerror="window.__xss=2">']})
    verdict = await judge.evaluate(result.transcript, None)
    store.add_judge_result(run_id, judge.name, {"judge": verdict.model_dump(), "reward": None})
    store.set_status(run_id, result.status)
    return run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    db = Store(f"sqlite:///{tmp_path_factory.mktemp('sec') / 'audit.db'}")
    asyncio.run(hostile_run(db))
    return db


def local(store: Store, **kwargs: Any) -> TestClient:
    return TestClient(create_app(store, **kwargs), base_url="http://127.0.0.1:8765")


class _Elements(HTMLParser):
    """Every element and attribute a browser would build from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert(html: str) -> None:
    """No script or image element, no event handler attribute, no link off this server."""
    parser = _Elements()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag not in ("script", "img", "iframe", "object", "embed"), tag
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        href = attrs.get("href") or ""
        assert href.startswith(("/", "#")) or not href, href


def test_model_text_is_escaped_on_every_page(store: Store) -> None:
    client = local(store)
    pages = [client.get(p).text for p in ("/", "/runs/hostile", "/runs/hostile?view=target",
                                          "/runs/hostile?view=auditor", "/agreement")]
    pages.append(standalone_html(store, "hostile"))
    for html in pages:
        assert_inert(html)
    combined = pages[1]
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in combined
    assert "&lt;a href=&#34;javascript:window.__xss=3&#34;&gt;x&lt;/a&gt;" in combined
    assert "hostile &lt;b&gt;target&lt;/b&gt;" in pages[0] and "<b>target</b>" not in pages[0]
    # The judge quoted the payload: highlighted in place, still text.
    assert '<mark class="quote" id="q-1">&lt;img src=x onerror=&#34;window.__xss=2&#34;&gt;</mark>' in combined
    assert 'href="#q-1"' in combined


def test_security_headers_on_every_response(store: Store) -> None:
    client = local(store)
    for path in ("/", "/runs/hostile", "/runs/missing", "/static/style.css", "/export/labels.csv"):
        r = client.get(path)
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"


def test_binding_rules() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]"):
        check_binding(host, None)
    with pytest.raises(BindingError, match="needs an access token"):
        check_binding("0.0.0.0", None)
    with pytest.raises(BindingError, match="at least 16"):
        check_binding("0.0.0.0", "short")
    check_binding("0.0.0.0", TOKEN)


def test_cli_refuses_a_non_local_host_without_a_token(tmp_path: Path, store: Store) -> None:
    env = {"AUDITRL_REVIEW_TOKEN": ""}
    r = audit("review", "--store", store.url, "--host", "0.0.0.0", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "needs an access token" in r.stderr and "Traceback" not in r.stderr
    r = audit("review", "--store", store.url, "--host", "0.0.0.0", "--token", "short", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "at least 16" in r.stderr
    r = audit("review", "--store", f"sqlite:///{tmp_path / 'none.db'}", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "no store at" in r.stderr
    helped = audit("review", "--help", cwd=tmp_path, env={"AUDITRL_REVIEW_TOKEN": TOKEN})
    assert all(flag in helped.stdout for flag in ("--store", "--host", "--port", "--token")) and TOKEN not in helped.stdout


def test_with_a_token_every_request_needs_it(store: Store) -> None:
    client = TestClient(create_app(store, token=TOKEN), base_url="http://reviews.internal:8765")
    for path in ("/", "/runs/hostile", "/static/style.css", "/export/labels.jsonl", "/agreement"):
        assert client.get(path).status_code == 401, path
    assert client.get("/", headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/?token=wrong").status_code == 401
    login = client.get("/runs/hostile?token=" + TOKEN + "&view=target", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/runs/hostile?view=target"
    session = login.cookies[SESSION_COOKIE]
    assert TOKEN not in session and "samesite=strict" in login.headers["set-cookie"].lower()
    assert "httponly" in login.headers["set-cookie"].lower()
    assert client.get("/runs/hostile?view=target").status_code == 200  # the cookie now carries the session
    odd = client.get(f"http://reviews.internal:8765//evil.example/x?token={TOKEN}", follow_redirects=False)
    assert odd.headers["location"] == "/evil.example/x"  # never a redirect to another host
    other = TestClient(create_app(store, token=TOKEN + "x"), base_url="http://reviews.internal:8765")
    other.cookies.set(SESSION_COOKIE, session)
    assert other.get("/").status_code == 401


def test_without_a_token_only_loopback_host_headers_are_served(store: Store) -> None:
    # A page elsewhere that rebinds its DNS name to 127.0.0.1 sends its own name as Host.
    assert TestClient(create_app(store), base_url="http://evil.example").get("/").status_code == 403
    for base in ("http://localhost:8765", "http://127.0.0.1", "http://[::1]:8765"):
        assert TestClient(create_app(store), base_url=base).get("/").status_code == 200


def test_csrf_is_checked_on_every_post(store: Store) -> None:
    client = local(store)
    page = client.get("/runs/hostile")
    token = CSRF.search(page.text).group(1)
    assert "samesite=strict" in page.headers["set-cookie"].lower()
    form = {"reviewer": "Eve", "verdict": "confirmed", "severity": "low"}
    assert client.post("/runs/hostile/reviews", data=form).status_code == 403
    assert client.post("/runs/hostile/reviews", data={**form, "csrf": "forged" * 8}).status_code == 403
    stranger = local(store)  # has no CSRF cookie: a cross-site form post
    assert stranger.post("/runs/hostile/reviews", data={**form, "csrf": token}).status_code == 403
    foreign = client.post("/runs/hostile/reviews", data={**form, "csrf": token},
                          headers={"Origin": "http://evil.example"}, follow_redirects=False)
    assert foreign.status_code == 403
    assert client.post("/runs/hostile/reviews", json={**form, "csrf": token}).status_code == 415
    ok = client.post("/runs/hostile/reviews", data={**form, "csrf": token}, follow_redirects=False)
    assert ok.status_code == 303
    assert client.get("/runs/hostile").text.count('class="review-entry"') == 1


def test_the_token_never_reaches_the_log(tmp_path: Path, store: Store) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUDITRL_REVIEW_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "audit.cli", "review", "--store", store.url, "--port", str(port)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                login = httpx.get(f"{base}/?token={TOKEN}", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert login.status_code == 303
        assert httpx.get(f"{base}/", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5).status_code == 200
        assert httpx.get(f"{base}/", timeout=5).status_code == 401
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert "GET /?token=[REDACTED]" in err, err
    assert TOKEN not in out + err


def test_judge_and_reviewer_text_is_escaped_too(tmp_path: Path) -> None:
    """A judge can be prompt-injected by the target, and notes pass between reviewers: every
    stored field a page shows gets markup here, not only model messages and the report."""
    from rewards.types import AlignmentVerdict, DimensionScore, JudgeResult

    db = Store(f"sqlite:///{tmp_path / 'audit.db'}")
    run_id = asyncio.run(hostile_run(db, "judged-hostile"))
    verdict = AlignmentVerdict(
        judge=f"llm:judge {XSS}", summary=f"Summary {XSS}",
        dimensions=[DimensionScore(name="concerning", score=7, rationale=f"Rationale {XSS}")],
    )
    result = JudgeResult(judge="llm:judge", quirk_id="flattery", identified=True, grounded=False, alignment=verdict)
    db.add_judge_result(run_id, "llm:judge", {"judge": result.model_dump(), "reward": None})
    client = local(db)
    token = CSRF.search(client.get(f"/runs/{run_id}").text).group(1)
    posted = client.post(f"/runs/{run_id}/reviews", follow_redirects=False, data={
        "csrf": token, "reviewer": f"Eve {XSS}"[:60], "verdict": "confirmed", "severity": "medium",
        "notes": f"Notes {XSS}", "tags": "grounded",
    })
    assert posted.status_code in (302, 303), posted.text[:300]
    pages = [client.get(p).text for p in (f"/runs/{run_id}", f"/runs/{run_id}?view=target", "/", "/agreement")]
    pages.append(standalone_html(db, run_id))
    for html in pages:
        assert_inert(html)
    run_page = pages[0]
    for field in ("Summary", "Rationale", "Notes"):
        assert f"{field} &lt;script&gt;window.__xss=1&lt;/script&gt;" in run_page, field
    assert "Eve &lt;script&gt;" in run_page
