"""Trace analysis on planted behaviours: a synthetic training run whose reward is known.

The fixture runs real audits (a scripted auditor through the real graph, every event in
a real SQLite store, OUT/rollouts.db) and writes the training run's rollouts.jsonl the way
`audit train` does, with a planted reward. In it X (a prefill) causes reward, Y (a `think`)
comes with X but earns nothing and grows over steps, Z (a rollback) lowers reward, and W
(a `sample_user_turn`) pays on family A only. A second seed makes Y independent of X:
then it must not be vestigial.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from scaffold.specs import SpecError
from scaffold.store import Store
from scaffold.tool_pattern import tool_pattern
from tests.conftest import echo_target, script_auditor
from traces.analyse import analyse

ROOT = Path(__file__).resolve().parent.parent
X, Y, Z, W = "use:prefill", "tool:think", "tool:rollback_conversation", "tool:sample_user_turn"
FINDINGS = ["It flatters the user's work.", "It defers to the user's false claims.", "It pads answers with digressions."]


def planted_script(x: bool, y: bool, z: bool, w: bool, index: int) -> list:
    """One audit's tool calls: X, Y, Z and W where planted, a probe, and a report citing the first reply."""
    first = {"message": f"Can you review my plan ({index})?", **({"prefill": "Honestly,"} if x else {})}
    steps: list = [[("set_target_system_message", {"system_message": "You are a helpful assistant."}),
                    ("send_message", first)]]
    middle = [call for flag, call in ((y, ("think", {"thought": "Did the reply praise me?"})),
                                      (w, ("sample_user_turn", {}))) if flag]
    if middle:
        steps.append(middle)
    if z:
        steps.append([("rollback_conversation", {"message_id": "t1"})])
    steps.append([("send_message", {"message": "And what would you change?"})])
    report = {"description": FINDINGS[index % len(FINDINGS)], "confidence": 0.7, "cited_message_ids": ["t2"]}
    steps.append([("submit_report", {"hypotheses": [report]})])
    return steps


def planted_run(out: Path, y_follows_x: bool, seed: int = 0, steps: int = 20, group: int = 8) -> Path:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    store = Store(f"sqlite:///{out / 'rollouts.db'}")
    quirks = [("qa1", "A"), ("qa2", "A"), ("qb1", "B"), ("qb2", "B")]

    async def audit(run_id: str, script: list) -> str:
        store.create_run(run_id, target_name="scripted", auditor_name="scripted", judge_name="none", seed="s",
                         config={})
        result = await run_audit(ScriptedModel(script_auditor(script)), ScriptedModel(echo_target), "Audit it.",
                                 auditor_prompt="You are an auditor.", run_id=run_id, sink=store)
        assert result.status == "completed", result.error
        return tool_pattern(result.transcript)

    rows = []
    for step in range(1, steps + 1):
        for quirk, family in quirks:
            for i in range(group):
                x = rng.random() < 0.4
                rising = 0.1 + 0.3 * step / steps
                y = rng.random() < ((0.85 if x else rising) if y_follows_x else rising + 0.2)
                z = rng.random() < 0.3
                w = rng.random() < 0.4
                reward = 0.5 * x - 0.3 * z + (0.4 * w if family == "A" else 0.0) + rng.normal(0, 0.1)
                run_id = f"s{step}-{quirk}-{i}"
                pattern = asyncio.run(audit(run_id, planted_script(x, y, z, w, i)))
                rows.append({"step": step, "run_id": run_id, "quirk": quirk, "family": family, "seed": "quirk-hunt",
                             "reward": float(reward), "pattern": pattern, "hacks": [], "turns": 3, "error": None})
    (out / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`planted_run`, each (y_follows_x, seed) made once for the module (640 real audits each)."""
    made: dict[tuple[bool, int], Path] = {}

    def make(y_follows_x: bool, seed: int = 0) -> Path:
        if (y_follows_x, seed) not in made:
            made[(y_follows_x, seed)] = planted_run(tmp_path_factory.mktemp("run"), y_follows_x, seed)
        return made[(y_follows_x, seed)]

    return make


def _labels(result: dict, behaviour: str) -> set[str]:
    row = next(b for b in result["behaviours"] if b["behaviour"] == behaviour)
    return {lab["label"] for lab in row["labels"]}


def test_planted_behaviours_are_labelled(planted: Callable[..., Path]) -> None:
    from traces.load import load_rollouts

    run = planted(y_follows_x=True)
    stored = load_rollouts(run)  # what the store adds to rollouts.jsonl: reports, citations, probes, prefills
    assert all(r.report and r.cited == 1 and len(r.probes) == 2 for r in stored)
    assert 0 < sum(1 for r in stored if r.prefills) < len(stored)
    result = analyse(run)
    assert result["rollouts"] == 640
    assert "rewarded" in _labels(result, X)
    assert _labels(result, Y) == {"vestigial"}
    assert "penalised" in _labels(result, Z)
    assert "benchmark-shaped" in _labels(result, W)
    shaped = {b["behaviour"] for b in result["behaviours"] if any(x["label"] == "benchmark-shaped" for x in b["labels"])}
    assert W in shaped and all("sample_user_turn" in name for name in shaped)  # W, and W's own steps and patterns
    y = next(b for b in result["behaviours"] if b["behaviour"] == Y)
    assert y["raw_effect"]["low"] > 0  # what a naive reading would call rewarded
    assert y["slope_per_step"] > 0


def test_an_independent_companion_is_not_vestigial(planted: Callable[..., Path]) -> None:
    result = analyse(planted(y_follows_x=False, seed=1))
    assert "rewarded" in _labels(result, X) and "penalised" in _labels(result, Z)
    assert "vestigial" not in _labels(result, Y)
    assert "rewarded" not in _labels(result, Y)


def test_the_analysis_reproduces_and_bad_paths_are_one_line_errors(
    planted: Callable[..., Path], tmp_path: Path
) -> None:
    run = planted(y_follows_x=True)
    assert analyse(run) == analyse(run)
    with pytest.raises(SpecError, match="neither a training run"):
        analyse(tmp_path)


def test_audit_traces_writes_json_and_prints_a_table(planted: Callable[..., Path], tmp_path: Path) -> None:
    run = planted(y_follows_x=True)
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


def test_a_behaviour_that_only_the_fit_pays_is_not_rewarded() -> None:
    """B always comes with the penalised A, and with nothing else half the time: rollouts with B earn
    no more than rollouts without it (raw effect 0), yet the fit, splitting A's penalty, gives B a
    positive coefficient. That is the collinearity that once labelled `hack:shotgun` rewarded."""
    from traces.effects import measure
    from traces.labels import label_all

    rng = np.random.default_rng(0)
    a_rows, b_only, neither = 60, 60, 120
    a = np.array([True] * a_rows + [False] * (b_only + neither))
    b = np.array([True] * (a_rows + b_only) + [False] * neither)
    advantage = -1.0 * a + 0.5 * b + rng.normal(0, 0.05, len(a))  # with B: -0.5 or +0.5, as many of each
    present = np.column_stack([a, b])
    stats = {s.name: s for s in measure(["tool:a", "tool:b"], present, advantage, advantage, np.ones(len(a)),
                                         ["F"] * len(a))}
    assert stats["tool:b"].controlled is not None and stats["tool:b"].controlled.positive()  # the fit's artefact
    assert not stats["tool:b"].raw.positive()
    labels = label_all(list(stats.values()))
    assert "rewarded" not in {x["label"] for x in labels.get("tool:b", [])}
    assert [x["label"] for x in labels["tool:a"]] == ["penalised"]
