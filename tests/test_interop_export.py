"""`audit export` (issue 21): a real smoke eval, exported to Inspect and Docent, read back with their own code.

The Inspect log is read with `inspect_ai.log.read_eval_log`, and the Docent runs with
`docent-python`'s models and transcript checks. Each comparison is against what the
eval itself stored: the transcripts, the verdicts and `results.json`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interop.audits import from_eval_dir
from scaffold.transcript import Transcript
from targets.quirks import get_quirk
from tests.test_cli import audit

pytest.importorskip("inspect_ai")
pytest.importorskip("docent")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke suite at 12 turns with the lexical judge: 8 quirks and 2 controls, rollbacks included."""
    root = tmp_path_factory.mktemp("interop")
    r = audit("eval", "--suite", "smoke", "--auditor", "heuristic", "--judge", "lexical", "--max-turns", "12",
              "--out", "ev", "--store", f"sqlite:///{root / 'audit.db'}", cwd=root)
    assert r.returncode == 0, r.stderr
    return root


def _stored(smoke: Path) -> dict[str, Transcript]:
    return {a.run_id: a.transcript for a in from_eval_dir(smoke / "ev")}


def test_inspect_export_reads_back_with_inspects_own_reader(smoke: Path) -> None:
    from inspect_ai.log import read_eval_log

    r = audit("export", "ev", "--format", "inspect", "--out", "out/smoke.eval", cwd=smoke)
    assert r.returncode == 0, r.stderr
    assert "10 audit(s)" in r.stdout and "not carried: target message metadata" in r.stdout
    log = read_eval_log(str(smoke / "out" / "smoke.eval"))
    rows = {row["run_id"]: row for row in json.loads((smoke / "ev" / "results.json").read_text())["rows"]}
    stored = _stored(smoke)
    quoted = 0
    assert log.eval.task == "auditrl/smoke" and log.eval.model == "heuristic"
    assert sorted(s.id for s in log.samples) == sorted(rows)  # Inspect's writer orders samples its own way
    for sample in log.samples:
        row, transcript = rows[sample.id], stored[sample.id]
        ours = transcript.auditor_view()
        # Messages: the auditor's conversation, call for call and result for result.
        assert [(m.role, m.text if m.role != "assistant" else m.content) for m in sample.messages] == [
            (m.role, m.content) for m in ours
        ]
        calls = [(c.id, c.function, c.arguments) for m in sample.messages if m.role == "assistant"
                 for c in m.tool_calls or []]
        assert calls == [(c.id, c.name, c.arguments) for m in ours if m.role == "assistant" for c in m.tool_calls]
        results = [(m.tool_call_id, m.function) for m in sample.messages if m.role == "tool"]
        named = {c[0]: c[1] for c in calls}
        assert all(named[call_id] == function for call_id, function in results)
        assert sample.input == next(m.content for m in ours if m.role == "user")
        # Scores: the judge's verdict as stored, explained with the quotes it cites.
        if row["quirk"] == "none":
            assert sample.scores["quirk_detection"].value == {"false_positive": float(row["false_positive"])}
            assert "graders_only" in sample.metadata and sample.metadata["graders_only"]["ground_truth"] is None
        else:
            value = sample.scores["quirk_detection"].value
            assert value["grounded"] == float(row["grounded"]) and value["named"] == float(row["identified"])
            assert value["evidence"] == pytest.approx(row["evidence_score"])
            truth = get_quirk(row["quirk"]).ground_truth
            assert sample.metadata["graders_only"] == {"quirk": row["quirk"], "ground_truth": truth}
            explanation = sample.scores["quirk_detection"].explanation
            assert sample.scores["quirk_detection"].answer == row["top_hypothesis"]
            report = transcript.report
            assert report is not None
            cited_ids = [i for h in report.hypotheses[:1] for i in h.cited_message_ids]
            for cited in cited_ids:
                words = " ".join(transcript.target_message(cited).content.split())[:60]
                assert f"[{cited}, " in explanation and words in explanation
            # The ground truth is nowhere but under graders_only.
            rest = {k: v for k, v in sample.metadata.items() if k != "graders_only"}
            assert truth.strip()[:80] not in json.dumps(rest) + json.dumps([m.model_dump() for m in sample.messages])
        assert sample.scores["reward"].value == pytest.approx(row["reward"])
        # Every target message on every branch, and never a firing flag.
        conversation = sample.metadata["target_conversation"]
        assert [m["id"] for m in conversation] == list(transcript.target.nodes)
        assert "\"fired\"" not in json.dumps(sample.model_dump(mode="json"))  # the flag as a key
        quoted += len(cited_ids) if row["quirk"] != "none" else 0
    assert quoted > 0
    metrics = log.results.scores[0].metrics
    seeded = [row for row in rows.values() if row["quirk"] != "none"]
    assert metrics["grounded"].value == pytest.approx(sum(r["grounded"] for r in seeded) / len(seeded))
    assert log.results.total_samples == 10 and log.results.completed_samples == 10


def test_docent_export_is_valid_for_docents_models_with_one_transcript_per_branch(smoke: Path) -> None:
    from docent.data_models.chat import check_agent_run

    from interop.docent_runs import read_docent_runs

    r = audit("export", "ev", "--format", "docent", "--out", "smoke.jsonl", cwd=smoke)
    assert r.returncode == 0, r.stderr
    assert "Docent's transcript checks: 0 warning(s)" in r.stdout
    runs = read_docent_runs(smoke / "smoke.jsonl")
    stored = _stored(smoke)
    assert [run.metadata["run_id"] for run in runs] == list(stored)
    branched = 0
    for run in runs:
        transcript = stored[run.metadata["run_id"]]
        assert check_agent_run(run).warning_count == 0
        auditor, *targets = run.transcripts
        assert auditor.name == "auditor" and len(auditor.messages) == len(transcript.auditor_view())
        branches = transcript.target.branches()
        assert len(targets) == len(branches)
        assert targets[0].name == "target" and targets[0].metadata["message_ids"] == [
            m.id for m in transcript.target_view()
        ]
        assert [m.text for m in targets[0].messages] == [m.content for m in transcript.target_view()]
        branched += len(branches) > 1
        assert "\"fired\"" not in run.model_dump_json()
    assert branched > 0  # the heuristic rolls back: some runs have more than one branch


def test_a_run_id_exports_from_its_store_and_bad_input_is_one_line(smoke: Path) -> None:
    from inspect_ai.log import read_eval_log

    run_id = next(iter(_stored(smoke)))
    store = f"sqlite:///{smoke / 'audit.db'}"
    r = audit("export", run_id, "--store", store, "--format", "inspect", "--out", "one.json", cwd=smoke)
    assert r.returncode == 0, r.stderr
    assert [s.id for s in read_eval_log(str(smoke / "one.json")).samples] == [run_id]
    cases = [
        (["nope", "--format", "inspect", "--out", "x.eval"], "not an eval directory; to export a run id, give --store"),
        (["nope", "--store", store, "--format", "inspect", "--out", "x.eval"], "no run 'nope'"),
        (["ev", "--format", "docent", "--out", "x.eval"], "a docent export ends in .jsonl"),
        (["ev", "--format", "inspect", "--out", "x.txt"], "ends in .eval or .json"),
        ([str(smoke), "--format", "inspect", "--out", "x.eval"], "results.json: missing"),
    ]
    for args, message in cases:
        r = audit("export", *args, cwd=smoke)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert not (smoke / "x.eval").exists() and not (smoke / "x.txt").exists()
