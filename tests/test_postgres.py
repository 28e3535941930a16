"""The store and LangGraph's checkpoints on a real PostgreSQL server, through the real CLI.

A throwaway server (`tests/pg_server.py`: initdb in a temp dir, loopback only) serves
every test here. The CLI is given plain `postgresql://` URLs, as a user would type them.
- SIGKILL `audit run` mid-audit, then resume it from another directory: the checkpoints
  are in the database, so nothing on the first machine's disk is needed, and the resumed
  audit equals a clean one, event for event.
- `audit eval` on PostgreSQL gives, case for case, the rows it gives on SQLite.
- Four `audit eval` processes writing to one database at once lose and duplicate nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.test_resume import FLATTERY, _cli, _comparable

EVAL = ["eval", "--suite", "smoke", "--auditor", "heuristic", "--judge", "lexical", "--max-turns", "8"]


def _query(url: str, sql: str, *args: object) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def _events(url: str) -> dict[str, list[int]]:
    """Each run's event sequence numbers, in order (none before any process has made the tables)."""
    import psycopg

    out: dict[str, list[int]] = {}
    try:
        rows = _query(url, "SELECT run_id, seq FROM events ORDER BY run_id, seq")
    except psycopg.errors.UndefinedTable:
        return out
    for run_id, seq in rows:
        out.setdefault(run_id, []).append(seq)
    return out


def _audit(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "audit.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


def test_sigkill_then_resume_elsewhere_matches_a_clean_run(pg_url: str, tmp_path: Path) -> None:
    here, there, clean_dir = tmp_path / "here", tmp_path / "there", tmp_path / "clean"
    for d in (here, there, clean_dir):
        d.mkdir()
    args = ["run", "--target", str(FLATTERY), "--max-turns", "12", "--json", "--store", pg_url]
    clean = _cli(args, clean_dir)
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, err
    clean_report = json.loads(out)

    before = set(_events(pg_url))
    victim = _cli(args, here, delay=0.15)
    deadline = time.time() + 60
    run_id = None
    while time.time() < deadline:
        fresh = {r: seqs for r, seqs in _events(pg_url).items() if r not in before}
        if fresh and len(next(iter(fresh.values()))) >= 25:
            run_id = next(iter(fresh))
            break
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert run_id is not None and victim.returncode == -signal.SIGKILL
    killed_at = len(_events(pg_url)[run_id])
    assert _query(pg_url, "SELECT status FROM runs WHERE run_id = %s", run_id) == [("running",)]
    assert _query(pg_url, "SELECT count(*) FROM checkpoints WHERE thread_id = %s", run_id)[0][0] > 0

    # From another directory: the first one's disk plays no part.
    resumed = _cli(["run", "--resume", run_id, "--json", "--store", pg_url], there)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    report = json.loads(out)
    assert report["status"] == "completed" and report["turns"] == clean_report["turns"] == 12
    clean_events = json.loads(Path(clean_report["transcript"]).read_text())["events"]
    resumed_events = json.loads(Path(report["transcript"]).read_text())["events"]
    assert killed_at < len(resumed_events), "the kill came after the audit had finished"
    assert _comparable(resumed_events) == _comparable(clean_events)
    assert _events(pg_url)[run_id] == list(range(len(resumed_events)))  # nothing duplicated, nothing missing
    assert report["judge_result"] == clean_report["judge_result"]
    assert not [p for p in tmp_path.rglob("*.db")], "checkpoints went to a local file, not the database"


def _rows(out: Path) -> dict[str, tuple]:
    rows = json.loads((out / "results.json").read_text())["rows"]
    keys = ("status", "turns", "identified", "grounded", "false_positive", "reward", "target_tokens", "top_hypothesis")
    return {r["case_id"]: tuple(json.dumps(r[k]) for k in keys) for r in rows}


def test_eval_on_postgresql_equals_sqlite_case_for_case(pg_url: str, tmp_path: Path) -> None:
    on_pg = _audit([*EVAL, "--store", pg_url, "--out", str(tmp_path / "pg")], tmp_path)
    assert on_pg.returncode == 0, on_pg.stderr
    on_sqlite = _audit([*EVAL, "--store", f"sqlite:///{tmp_path / 'a.db'}", "--out", str(tmp_path / "lite")], tmp_path)
    assert on_sqlite.returncode == 0, on_sqlite.stderr
    assert _rows(tmp_path / "pg") == _rows(tmp_path / "lite")
    assert len(_rows(tmp_path / "pg")) == 10


def test_four_processes_writing_at_once_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    before = set(_events(pg_url))
    cmd = [sys.executable, "-m", "audit.cli", *EVAL, "--store", pg_url]
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([*cmd, "--out", str(tmp_path / f"w{i}")], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    runs = {r: seqs for r, seqs in _events(pg_url).items() if r not in before}
    written = {row["run_id"]: row for i in range(4)
               for row in json.loads((tmp_path / f"w{i}" / "results.json").read_text())["rows"]}
    assert len(written) == 40 and set(runs) == set(written)
    assert all(seqs == list(range(len(seqs))) for seqs in runs.values())  # none lost, none twice
    stored = dict(_query(pg_url, "SELECT run_id, status FROM runs WHERE run_id = ANY(%s)", list(written)))
    assert set(stored.values()) == {"completed"}
    # Every process's four copies of a case came out the same (the suite's seeds fix them).
    assert len({json.dumps(sorted(_rows(tmp_path / f"w{i}").items())) for i in range(4)}) == 1
