"""`audit eval --ray ADDRESS`: a running Ray cluster (`ray start --head`) and a PostgreSQL store.

This is the path a team with a cluster takes, as opposed to `--ray local`, which starts
Ray inside the driver (tests/test_ray_eval.py): the driver connects to a head it did not
start, the workers open the store by its `postgresql://` URL, and the rows equal a
plain local eval on SQLite, case for case. A SQLite store is refused before anything
is made, since a file on the driver's disk is not shared with a cluster's machines.

The head runs in its own temp dir and process group and is stopped through them: `ray stop`
would stop every Ray on the machine, including a `--ray local` test in the other pytest worker.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import ROOT

pytest.importorskip("ray", reason="the Ray runner needs the ray extra")

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
EVAL = [sys.executable, "-m", "audit.cli", "eval", "--suite", "smoke", "--auditor", "heuristic", "--judge", "lexical",
        "--max-turns", "8"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pids_under(marker: str) -> list[int]:
    """Processes whose command line names `marker` (the head's own temp dir)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:  # gone meanwhile
                continue
    return found


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray head on the loopback, 2 CPUs, in a short temp dir (Ray's socket paths must stay short).

    `ray start --block` in a session of its own: every process it starts (GCS, raylet, the
    client proxy, the agents, the workers, whatever titles they give themselves) is in
    that session's process group, which teardown signals as a whole."""
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip("no `ray` command next to this Python")
    temp = tempfile.mkdtemp(prefix="rh", dir="/tmp")
    log = tmp_path_factory.mktemp("ray-head") / "ray-start.log"
    port = _free_port()
    start = [str(ray_bin), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
             "--ray-client-server-port", str(_free_port()), "--num-cpus", "2", "--include-dashboard=false",
             "--disable-usage-stats", "--temp-dir", temp]
    with log.open("w") as handle:
        head = subprocess.Popen(start, env=ENV, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while "Ray runtime started" not in log.read_text():
            assert head.poll() is None, f"ray start exited with {head.returncode}: {log.read_text()[-3000:]}"
            assert time.time() < deadline, f"ray start did not come up in 120 s: {log.read_text()[-3000:]}"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(head, temp)
        shutil.rmtree(temp, ignore_errors=True)


def _stop(head: subprocess.Popen[bytes], temp: str) -> None:
    """SIGTERM the head's process group, then SIGKILL whatever is left of it, or still names its temp dir."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(head.pid, sig)
        except ProcessLookupError:
            pass
        for pid in _pids_under(temp):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            head.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def _rows(out: Path) -> dict[str, tuple[object, ...]]:
    keys = ("status", "turns", "identified", "grounded", "false_positive", "reward", "target_tokens", "top_hypothesis")
    return {r["case_id"]: tuple(r[k] for k in keys) for r in json.loads((out / "results.json").read_text())["rows"]}


def test_an_eval_on_a_running_cluster_with_postgresql_equals_a_local_one(
    ray_head: str, pg_url: str, tmp_path: Path
) -> None:
    cluster = subprocess.run([*EVAL, "--ray", ray_head, "--store", pg_url, "--out", str(tmp_path / "cluster")],
                             env=ENV, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert cluster.returncode == 0, cluster.stderr[-3000:]
    local = subprocess.run([*EVAL, "--store", f"sqlite:///{tmp_path / 'local.db'}", "--out", str(tmp_path / "local")],
                           env=ENV, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert local.returncode == 0, local.stderr[-3000:]
    rows = _rows(tmp_path / "cluster")
    assert len(rows) == 10 and {r[0] for r in rows.values()} == {"completed"}
    assert rows == _rows(tmp_path / "local")
    import psycopg

    with psycopg.connect(pg_url) as conn:  # the workers wrote the audits into the shared database
        stored = conn.execute("SELECT count(*) FROM runs").fetchone()
    assert stored is not None and stored[0] == 10


def test_a_sqlite_store_is_refused_for_a_cluster(ray_head: str, tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    done = subprocess.run([*EVAL, "--ray", ray_head, "--store", f"sqlite:///{db}", "--out", str(tmp_path / "out")],
                          env=ENV, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "use --store postgresql://" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "results.json").exists()
    assert not db.exists()  # the file this invocation would have made is not left behind
