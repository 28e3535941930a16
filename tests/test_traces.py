"""Trace analysis on planted behaviours: a synthetic training run whose reward is known.

The fixture writes a training run's rollouts.jsonl (the format `audit train` writes) in
which X (a prefill) causes reward, Y (a `think`) comes with X but earns nothing and grows
over steps, Z (a rollback) lowers reward, and W (a `sample_user_turn`) pays on family A
only. A second seed makes Y independent of X: then it must not be vestigial.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scaffold.specs import SpecError
from traces.analyse import analyse

ROOT = Path(__file__).resolve().parent.parent
X, Y, Z, W = "tool:prefill", "tool:think", "tool:rollback_conversation", "tool:sample_user_turn"


def planted_run(out: Path, y_follows_x: bool, seed: int = 0, steps: int = 20, group: int = 8) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    quirks = [("qa1", "A"), ("qa2", "A"), ("qb1", "B"), ("qb2", "B")]
    for step in range(1, steps + 1):
        for quirk, family in quirks:
            for i in range(group):
                x = rng.random() < 0.4
                rising = 0.1 + 0.3 * step / steps
                y = rng.random() < ((0.85 if x else rising) if y_follows_x else rising + 0.2)
                z = rng.random() < 0.3
                w = rng.random() < 0.4
                reward = 0.5 * x - 0.3 * z + (0.4 * w if family == "A" else 0.0) + rng.normal(0, 0.1)
                first = ["set_target_system_message", "send_message"]
                first += [name for flag, name in ((x, "prefill"), (y, "think"), (z, "rollback_conversation"),
                                                  (w, "sample_user_turn")) if flag]
                rows.append({"step": step, "run_id": f"s{step}-{quirk}-{i}", "quirk": quirk, "family": family,
                             "seed": "quirk-hunt",
                             "reward": float(reward), "pattern": "+".join(first) + " > send_message > submit_report",
                             "hacks": [], "turns": 3, "error": None})
    out.mkdir(parents=True, exist_ok=True)
    (out / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def _labels(result: dict, behaviour: str) -> set[str]:
    row = next(b for b in result["behaviours"] if b["behaviour"] == behaviour)
    return {lab["label"] for lab in row["labels"]}


def test_planted_behaviours_are_labelled(tmp_path: Path) -> None:
    result = analyse(planted_run(tmp_path / "run", y_follows_x=True))
    assert result["rollouts"] == 640
    assert "rewarded" in _labels(result, X)
    assert _labels(result, Y) == {"vestigial"}
    assert "penalised" in _labels(result, Z)
    assert "benchmark-shaped" in _labels(result, W)
    shaped = {b["behaviour"] for b in result["behaviours"] if any(x["label"] == "benchmark-shaped" for x in b["labels"])}
    assert shaped == {W, "seq:sample_user_turn>send_message"}  # W, and W's own step into the next turn
    y = next(b for b in result["behaviours"] if b["behaviour"] == Y)
    assert y["raw_effect"]["low"] > 0  # what a naive reading would call rewarded
    assert y["slope_per_step"] > 0


def test_an_independent_companion_is_not_vestigial(tmp_path: Path) -> None:
    result = analyse(planted_run(tmp_path / "run", y_follows_x=False, seed=1))
    assert "rewarded" in _labels(result, X) and "penalised" in _labels(result, Z)
    assert "vestigial" not in _labels(result, Y)
    assert "rewarded" not in _labels(result, Y)


def test_the_analysis_reproduces_and_bad_paths_are_one_line_errors(tmp_path: Path) -> None:
    run = planted_run(tmp_path / "run", y_follows_x=True)
    assert analyse(run) == analyse(run)
    with pytest.raises(SpecError, match="neither a training run"):
        analyse(tmp_path)


def test_audit_traces_writes_json_and_prints_a_table(tmp_path: Path) -> None:
    run = planted_run(tmp_path / "run", y_follows_x=True)
    done = subprocess.run([sys.executable, "-m", "audit.cli", "traces", str(run), "--out", str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "t" / "traces.json").read_text())
    assert data["rollouts"] == 640 and "vestigial" in done.stdout
    report = (tmp_path / "t" / "report.html").read_text()
    assert report.count("data:image/png;base64,") == 3 and "src='http" not in report and 'src="http' not in report
    missing = subprocess.run([sys.executable, "-m", "audit.cli", "traces", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_the_review_app_links_each_behaviour_to_its_transcripts(tmp_path: Path) -> None:
    """Real stored audits, a traces.json over them (with a model-written template as a behaviour's
    name, hostile markup included), and the review app's Traces page."""
    import asyncio

    from fastapi.testclient import TestClient

    from review.app import create_app
    from review.sample import sample_run
    from scaffold.store import Store
    from traces.analyse import analyse_rollouts
    from traces.load import TracedRollout

    store = Store(f"sqlite:///{tmp_path / 'audit.db'}")
    run_ids = [asyncio.run(sample_run(store, tmp_path / "out", max_turns=3)) for _ in range(2)]
    rollouts = [TracedRollout(run_id=run_ids[i % 2], step=1 + i // 8, quirk="flattery", reward=float(i % 2),
                              pattern="think > submit_report" if i % 2 else "send_message > submit_report",
                              report=["<script>alert(1)</script> praises"] if i % 3 else ["none"])
                for i in range(24)]
    traces = analyse_rollouts(rollouts)
    client = TestClient(create_app(store, traces=traces), base_url="http://127.0.0.1")
    page = client.get("/traces")
    assert page.status_code == 200
    assert "tool:think" in page.text and f'href="/runs/{run_ids[1]}"' in page.text
    assert "<script>alert" not in page.text and "template:&lt;script&gt;alert(#)&lt;/script&gt; praises" in page.text
    assert client.get(f"/runs/{run_ids[1]}").status_code == 200
    empty = TestClient(create_app(store), base_url="http://127.0.0.1").get("/traces")
    assert empty.status_code == 200 and "audit traces OUT" in empty.text


def test_probes_cluster_into_labelled_themes() -> None:
    from tests.conftest import offline_grader_or_skip
    from traces.load import TracedRollout
    from traces.themes import probe_themes, theme_behaviours

    offline_grader_or_skip()  # the packaged MiniLM
    cooking = ["How long should I roast a chicken?", "What temperature do I roast a chicken at?",
               "Can I roast a whole chicken in a small oven?"]
    space = ["Why do stars twinkle at night?", "How far away are the stars we see at night?",
             "Do all stars twinkle the same at night?"]
    rollouts = [TracedRollout(run_id=str(i), step=1, quirk="q", reward=0.0, pattern="", probes=[p])
                for i, p in enumerate(cooking + space)]
    themes, probe_theme = probe_themes(rollouts)
    assert len(themes) == 2 and {len(t.probes) for t in themes} == {3}
    assert any("chicken" in t.label and "roast" in t.label for t in themes)
    assert any("stars" in t.label for t in themes)
    found = theme_behaviours(rollouts, probe_theme)
    assert found[0] == found[1] == found[2] != found[3] == found[4] == found[5]
    assert probe_themes(rollouts)[1] == probe_theme  # deterministic


def test_a_pattern_that_takes_over_is_collapsed_and_a_steady_one_is_not() -> None:
    from traces.analyse import analyse_rollouts
    from traces.load import TracedRollout

    rng = np.random.default_rng(0)
    taking_over = "think > send_message > submit_report"
    rollouts = []
    for step in range(1, 17):
        for i in range(8):
            share = 0.1 + 0.85 * (step - 1) / 15  # 10% of the first step's rollouts, 95% of the last
            pattern = taking_over if rng.random() < share else rng.choice(
                ["send_message > submit_report", "send_message x2 > submit_report", "prefill > submit_report"])
            rollouts.append(TracedRollout(run_id=f"{step}-{i}", step=step, quirk="q", reward=float(rng.random()),
                                          pattern=str(pattern)))
    result = analyse_rollouts(rollouts, themes=False)
    labels = {b["behaviour"]: {lab["label"] for lab in b["labels"]} for b in result["behaviours"]}
    assert "collapsed" in labels[f"pattern:{taking_over}"]
    assert not any("collapsed" in found for name, found in labels.items() if name != f"pattern:{taking_over}")
