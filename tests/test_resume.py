"""SIGKILL `audit run` mid-audit, resume it: no completed turn lost, none duplicated."""

from __future__ import annotations

import json
import os

import pytest
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

FLATTERY = ROOT / "targets" / "examples" / "flattery.yaml"


def _cli(args: list[str], cwd: Path, delay: float = 0.0, exit_after: int | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if exit_after is not None:
        env["AUDITRL_TEST_EXIT_AFTER_EVENTS"] = str(exit_after)
    # The lexical judge: these tests are about the audit's durability, not its grading.
    if args[0] == "run" and "--resume" not in args:
        args = [*args, "--judge", "lexical"]
    cmd = [sys.executable, str(ROOT / "tests" / "slow_audit_child.py"), str(delay), *args]
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _comparable(events: list[dict]) -> list[dict]:
    out = []
    for e in events:
        e = {k: v for k, v in e.items() if k not in ("time", "latency_s")}
        out.append(e)
    return out


def _events_in_db(db: Path) -> list[tuple[str, int]]:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT run_id, seq FROM events ORDER BY run_id, seq").fetchall()
    except sqlite3.OperationalError:  # the child has created the file but not its tables yet
        return []


def test_sigkill_then_resume_matches_a_clean_run(tmp_path: Path) -> None:
    clean_dir, killed_dir = tmp_path / "clean", tmp_path / "killed"
    clean_dir.mkdir()
    killed_dir.mkdir()
    args = ["run", "--target", str(FLATTERY), "--max-turns", "12", "--json"]

    clean = _cli(args, clean_dir)
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, err
    clean_report = json.loads(out)

    victim = _cli(args, killed_dir, delay=0.15)
    db = killed_dir / "audit.db"
    deadline = time.time() + 60
    while time.time() < deadline:
        if db.exists() and len(_events_in_db(db)) >= 25:
            break
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    rows = _events_in_db(db)
    run_id = rows[0][0]
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]
    assert status == "running"

    resumed = _cli(["run", "--resume", run_id, "--json"], killed_dir)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    report = json.loads(out)
    assert report["status"] == "completed"

    clean_events = json.loads(Path(clean_report["transcript"]).read_text())["events"]
    resumed_events = json.loads(Path(report["transcript"]).read_text())["events"]
    assert len(rows) < len(resumed_events), "the kill came after the audit had finished"
    assert _comparable(resumed_events) == _comparable(clean_events)
    seqs = [seq for rid, seq in _events_in_db(db) if rid == run_id]
    assert seqs == list(range(len(resumed_events)))  # nothing duplicated, nothing missing
    assert report["turns"] == clean_report["turns"] == 12
    assert report["judge_result"] == clean_report["judge_result"]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict]]:
    where = tmp_path_factory.mktemp("clean")
    proc = _cli(["run", "--target", str(FLATTERY), "--max-turns", "12", "--json"], where)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    report = json.loads(out)
    return report, json.loads(Path(report["transcript"]).read_text())["events"]


# Kill points across the whole audit: before the first checkpoint, mid-turn, between
# the target's reply and the auditor's next turn, near the end.
@pytest.mark.parametrize("exit_after", [2, 3, 4, 7, 16, 31, 48, 60])
def test_death_at_any_event_then_resume_matches_a_clean_run(
    tmp_path: Path, clean_run: tuple[dict, list[dict]], exit_after: int
) -> None:
    clean_report, clean_events = clean_run
    assert exit_after < len(clean_events)
    args = ["run", "--target", str(FLATTERY), "--max-turns", "12", "--json"]
    victim = _cli(args, tmp_path, exit_after=exit_after)
    victim.communicate(timeout=120)
    assert victim.returncode == 137
    rows = _events_in_db(tmp_path / "audit.db")
    run_id = rows[0][0]
    resumed = _cli(["run", "--resume", run_id, "--json"], tmp_path)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    report = json.loads(out)
    events = json.loads(Path(report["transcript"]).read_text())["events"]
    assert _comparable(events) == _comparable(clean_events)
    assert [seq for _, seq in _events_in_db(tmp_path / "audit.db")] == list(range(len(events)))
    assert report["judge_result"] == clean_report["judge_result"]


def test_resume_of_a_finished_or_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    done = _cli(["run", "--target", str(FLATTERY), "--max-turns", "3", "--json"], tmp_path)
    out, _ = done.communicate(timeout=120)
    run_id = json.loads(out)["run_id"]
    again = _cli(["run", "--resume", run_id], tmp_path)
    _, err = again.communicate(timeout=60)
    assert again.returncode == 2 and "already finished" in err and "Traceback" not in err
    unknown = _cli(["run", "--resume", "nope"], tmp_path)
    _, err = unknown.communicate(timeout=60)
    assert unknown.returncode == 2 and "no run 'nope'" in err


async def test_resume_after_the_graph_finished_but_before_the_report(tmp_path: Path) -> None:
    """A kill between the last step and the report: --resume grades and writes it."""
    from evals.audit_job import AuditJob, resume_judged_audit, run_judged_audit
    from scaffold.secrets import SecretRegistry
    from scaffold.store import Store

    store = Store(f"sqlite:///{tmp_path / 'audit.db'}")
    job = AuditJob(target_path=str(FLATTERY), max_turns=5, judge="lexical")
    first = await run_judged_audit(job, store, SecretRegistry(), tmp_path / "out")
    store.set_status(first.result.run_id, "running")  # as if killed before the status update
    (tmp_path / "out" / first.result.run_id / "report.json").unlink()
    again = await resume_judged_audit(first.result.run_id, store, SecretRegistry())
    assert again.result.status == "completed"
    assert len(again.transcript.events) == len(first.transcript.events)
    assert json.loads((tmp_path / "out" / first.result.run_id / "report.json").read_text())["turns"] == 5


def test_a_resumed_local_policy_reads_the_ids_it_sampled(tmp_path: Path) -> None:
    """A constrained local auditor killed between turns resumes on the exact ids its transcript
    recorded, not a re-encoding of the text (the grammar's ids are not the tokenizer's): the
    resumed audit is the clean one, token for token."""
    hf = pytest.importorskip("hf_fixtures")
    tiny = tmp_path / "tiny"
    hf.tiny_model().save_pretrained(tiny)
    hf.packaged_tokenizer().save_pretrained(tiny)
    args = ["run", "--target", str(FLATTERY), "--max-turns", "3", "--json",
            "--auditor", f"hf:{tiny}+constrained+max_tokens:48+temperature:0"]
    (tmp_path / "clean").mkdir()
    (tmp_path / "killed").mkdir()
    clean = _cli(args, tmp_path / "clean")
    out, err = clean.communicate(timeout=300)
    assert clean.returncode == 0, err
    clean_events = json.loads(Path(json.loads(out)["transcript"]).read_text())["events"]
    turns = [i for i, e in enumerate(clean_events) if e.get("tokens") and e["message"]["role"] == "assistant"]
    assert len(turns) == 3
    victim = _cli(args, tmp_path / "killed", exit_after=turns[1])  # dies before its second turn
    victim.communicate(timeout=300)
    assert victim.returncode == 137
    run_id = _events_in_db(tmp_path / "killed" / "audit.db")[0][0]
    resumed = _cli(["run", "--resume", run_id, "--json"], tmp_path / "killed")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    events = json.loads(Path(json.loads(out)["transcript"]).read_text())["events"]
    second = events[turns[1]]["tokens"]
    first = events[turns[0]]["tokens"]
    assert second["prompt_ids"][: len(first["prompt_ids"]) + len(first["completion_ids"])] == (
        first["prompt_ids"] + first["completion_ids"]
    )
    # The same ids, the same choices. Logprobs agree to float noise: the clean run read its
    # second turn's prompt through the cached KV of its first, the resumed one from scratch.
    logprobs = [(e["tokens"]["completion_logprobs"], c["tokens"]["completion_logprobs"])
                for e, c in zip(events, clean_events) if e.get("tokens") and c.get("tokens")]
    assert len(logprobs) == 3 and all(pytest.approx(b, abs=1e-3) == a for a, b in logprobs)
    for e in events + clean_events:  # each run's id differs, and logprobs are compared above
        e["tokens"] = e.get("tokens") and {
            k: v for k, v in e["tokens"].items() if k not in ("rollout_id", "completion_logprobs")
        }
    assert _comparable(events) == _comparable(clean_events)
