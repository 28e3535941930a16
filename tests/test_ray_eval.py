"""`audit eval --ray local`: a real local Ray cluster of 2 workers, through the real CLI.

The organisms are system-prompt organisms on an OpenAI-compatible model served by the
local wire-format fake (`tests/fakes/wire_server.py`), which answers deterministically
and records how many requests were in flight at once. So these tests see:
- the same rows, case for case, as a local eval of the same suite and seeds;
- a provider's `max_concurrency` holding across both workers (the slot broker);
- a worker killed with SIGKILL mid-eval: its audits are run again, nothing is lost or
  duplicated, and the rows still equal the local eval's.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import ROOT
from tests.fakes.wire_server import RecordedRequest, Reply, WireServer, openai_reply

pytest.importorskip("ray", reason="the Ray tests need the `ray` extra")

LIMIT = 3  # the served model's max_concurrency


class Latency:
    """The fake model's reply delay, changed per test."""

    seconds = 0.05


def _answer(request: RecordedRequest) -> Reply:
    last = request.body["messages"][-1]
    text = last["content"] if isinstance(last.get("content"), str) else "..."
    reply = openai_reply(text=f"Thanks for asking. You said: {text[:200]}")
    return Reply(reply.status, reply.body, reply.headers, reply.content_type, delay_s=Latency.seconds)


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer(responder=_answer) as running:
        yield running


def _suite(tmp: Path, server: WireServer) -> Path:
    model = {"provider": "openai_compatible", "model": "served", "base_url": f"{server.base_url}/v1",
             "max_concurrency": LIMIT, "timeout_s": 30}
    suite = {"name": "ray-test", "max_turns": 6, "judge": "lexical", "seed": 0,
             "groups": [{"quirks": ["flattery", "defer_to_users", "animal_welfare", "emotional_bond"],
                         "organism": {"implant": "system_prompt", "model": model}, "repeats": 2}]}
    path = tmp / "suite.yaml"
    path.write_text(json.dumps(suite))
    return path


def _eval(tmp: Path, suite: Path, name: str, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "audit.cli", "eval", "--suite", str(suite), "--auditor", "heuristic",
           "--out", str(tmp / name), "--store", f"sqlite:///{tmp / (name + '.db')}", *extra]
    return subprocess.Popen(cmd, cwd=tmp, env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> None:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err + out


def _rows(out: Path) -> dict[str, tuple[Any, ...]]:
    keys = ("status", "turns", "identified", "grounded", "false_positive", "reward", "target_tokens",
            "auditor_tokens", "top_hypothesis")
    return {r["case_id"]: tuple(r[k] for k in keys) for r in json.loads((out / "results.json").read_text())["rows"]}


def test_ray_rows_equal_a_local_eval_and_the_provider_limit_holds_across_workers(
    server: WireServer, tmp_path: Path
) -> None:
    Latency.seconds = 0.05
    suite = _suite(tmp_path, server)
    server.max_in_flight = 0
    _finish(_eval(tmp_path, suite, "local"))
    # The four organisms are one served model: locally too they share its limit.
    assert 2 <= server.max_in_flight <= LIMIT
    server.max_in_flight = 0
    _finish(_eval(tmp_path, suite, "ray", "--ray", "local", "--ray-workers", "2", "--concurrency", "4"))
    local, on_ray = _rows(tmp_path / "local"), _rows(tmp_path / "ray")
    assert len(local) == 8 and on_ray == local
    assert {row[0] for row in local.values()} == {"completed"}
    # Two workers with four audits each in flight want 8 requests at once; the broker allows LIMIT.
    assert 2 <= server.max_in_flight <= LIMIT
    results = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert results["aggregates"]["cpu_s"] > 0  # the workers' CPU is counted, not only the driver's


def _descendants(root: int) -> set[int]:
    """Pids of every process under `root`, from the parent pids in /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces and parentheses
            children.setdefault(parent, []).append(int(proc.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _batch_workers(root: int) -> list[int]:
    """Pids of Ray workers under `root` running a batch of audits (Ray titles them `ray::run_batch`).

    Only this eval's own: another test's cluster (tests/test_ray_cluster.py, in the other
    pytest worker) runs the same task under the same title."""
    found = []
    for pid in sorted(_descendants(root)):
        try:
            title = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if b"ray::run_batch" in title:
            found.append(pid)
    return found


def _events(db: Path) -> dict[str, list[int]]:
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT run_id, seq FROM events ORDER BY run_id, seq").fetchall()
    except sqlite3.OperationalError:
        return {}
    out: dict[str, list[int]] = {}
    for run_id, seq in rows:
        out.setdefault(run_id, []).append(seq)
    return out


def test_a_killed_worker_s_audits_are_run_again_without_duplicates(server: WireServer, tmp_path: Path) -> None:
    Latency.seconds = 0.15
    suite = _suite(tmp_path, server)
    _finish(_eval(tmp_path, suite, "local"))
    proc = _eval(tmp_path, suite, "ray", "--ray", "local", "--ray-workers", "2", "--concurrency", "2")
    db = tmp_path / "ray.db"
    killed = None
    deadline = time.time() + 120
    while time.time() < deadline and killed is None:
        workers = _batch_workers(proc.pid)
        if workers and sum(len(s) for s in _events(db).values()) >= 30:  # audits are under way
            os.kill(workers[0], signal.SIGKILL)
            killed = workers[0]
        time.sleep(0.05)
    assert killed is not None, "no batch was running to kill"
    _finish(proc)
    lines = [json.loads(line) for line in (tmp_path / "ray" / "audits.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in lines) == sorted(_rows(tmp_path / "local"))  # each case once
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    assert all(seqs == list(range(len(seqs))) for seqs in _events(db).values())  # none lost, none twice


def test_bad_ray_arguments_are_one_line_errors_before_anything_is_made(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "audit.cli", "eval", "--suite", "smoke", "--out", str(tmp_path / "e")]
    lite = ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
    for extra, says in ((["--ray-workers", "2"], "--ray-workers needs --ray local"),
                        (["--ray", "ray://127.0.0.1:1"], "use --store postgresql://"),
                        (["--ray", "auto", "--ray-workers", "2"], "--ray-workers sizes a local cluster")):
        done = subprocess.run([*base, *lite, *extra], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert list(tmp_path.iterdir()) == [], "a refused eval left files behind"
