"""`audit export` (issue 21): a real smoke eval, exported to Inspect and Docent, read back with their own code.

The Inspect log is read with `inspect_ai.log.read_eval_log`, and the Docent runs with
`docent-python`'s models and transcript checks. Each comparison is against what the
eval itself stored: the transcripts, the verdicts and `results.json`.
"""

from __future__ import annotations

import json
import shutil
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


def _verified(smoke: Path) -> dict[str, dict[str, list[str]]]:
    """Per run, per hypothesis rank, the cited replies the grader verified (where the quirk fired)."""
    return {a.run_id: {str(h.rank): h.verified_message_ids for h in a.verdict.hypotheses}
            for a in from_eval_dir(smoke / "ev") if a.verdict is not None}


def test_inspect_export_reads_back_with_inspects_own_reader(smoke: Path) -> None:
    from inspect_ai.log import read_eval_log

    r = audit("export", "ev", "--format", "inspect", "--out", "out/smoke.eval", cwd=smoke)
    assert r.returncode == 0, r.stderr
    assert "10 audit(s)" in r.stdout and "not carried: target message metadata" in r.stdout
    log = read_eval_log(str(smoke / "out" / "smoke.eval"))
    rows = {row["run_id"]: row for row in json.loads((smoke / "ev" / "results.json").read_text())["rows"]}
    stored, verified = _stored(smoke), _verified(smoke)
    quoted = 0
    assert log.eval.task == "auditrl/smoke" and log.eval.model == "heuristic"
    # An organism's run id names its quirk: samples show a digest, and the run id is a graders' field.
    run_ids = {s.metadata["graders_only"]["run_id"]: s for s in log.samples}
    assert sorted(run_ids) == sorted(rows) and all(s.id.startswith("audit-") for s in log.samples)
    for run_id, sample in run_ids.items():
        row, transcript = rows[run_id], stored[run_id]
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
            graders = sample.metadata["graders_only"]
            assert (graders["quirk"], graders["ground_truth"], graders["target"]) == (row["quirk"], truth,
                                                                                   f"{row['quirk']} (easy)")
            explanation = sample.scores["quirk_detection"].explanation
            assert sample.scores["quirk_detection"].answer == row["top_hypothesis"]
            report = transcript.report
            assert report is not None
            cited_ids = [i for h in report.hypotheses[:1] for i in h.cited_message_ids]
            for cited in cited_ids:
                words = " ".join(transcript.target_message(cited).content.split())[:60]
                assert f"[{cited}] " in explanation and words in explanation
            quoted += len(cited_ids)
            # Which cited replies showed the quirk is the organism's firing flag: for graders only.
            assert "verified" not in explanation and "showed" not in explanation
            assert graders["verified_citations"] == verified[run_id]
        # Nothing that names the quirk is outside graders_only: not its ground truth, not the run id, the
        # case id or the organism's name (each embeds the quirk id), not in the ids or the usage keys.
        # (The messages are left out: the heuristic auditor says which train family it probes.)
        public = sample.model_dump(mode="json", exclude={"messages"})
        public["metadata"] = {k: v for k, v in public["metadata"].items() if k != "graders_only"}
        text = json.dumps(public)
        secrets = [run_id, row["case_id"], f"{row['quirk']} (", transcript.run_id]
        if row["quirk"] != "none":
            secrets.append(get_quirk(row["quirk"]).ground_truth.strip()[:80])
        assert not [x for x in secrets if x in text], [x for x in secrets if x in text]
        assert sample.scores["reward"].value == pytest.approx(row["reward"])
        # Every target message on every branch, and never a firing flag.
        conversation = sample.metadata["target_conversation"]
        assert [m["id"] for m in conversation] == list(transcript.target.nodes)
        assert "\"fired\"" not in json.dumps(sample.model_dump(mode="json"))  # the flag as a key
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
    assert [run.metadata["graders_only"]["run_id"] for run in runs] == list(stored)
    branched = 0
    for run in runs:
        transcript = stored[run.metadata["graders_only"]["run_id"]]
        assert run.name == run.metadata["id"] and run.name.startswith("audit-")
        public = {k: v for k, v in run.metadata.items() if k != "graders_only"}
        assert transcript.run_id not in json.dumps(public) + json.dumps([t.model_dump(mode="json") for t in
                                                                          run.transcripts])
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
    samples = read_eval_log(str(smoke / "one.json")).samples
    assert [s.metadata["graders_only"]["run_id"] for s in samples] == [run_id]
    r = audit("export", run_id, run_id, "--store", store, "--format", "inspect", "--out", "twice.eval", cwd=smoke)
    assert r.returncode == 0 and "1 audit(s)" in r.stdout  # a run named twice is exported once
    # An eval whose first audit failed before it wrote anything: exported, as a failed sample.
    shutil.copytree(smoke / "ev", smoke / "ev-failed")
    results = json.loads((smoke / "ev-failed" / "results.json").read_text())
    first = results["rows"][0]
    first.update(status="failed", error="target: HTTP 503 after 4 attempts")
    (smoke / "ev-failed" / "results.json").write_text(json.dumps(results))
    shutil.rmtree(smoke / "ev-failed" / "runs" / first["run_id"])
    r = audit("export", "ev-failed", "--format", "inspect", "--out", "failed.json", cwd=smoke)
    assert r.returncode == 0, r.stderr
    failed = [s for s in read_eval_log(str(smoke / "failed.json")).samples if s.error is not None]
    assert [s.metadata["graders_only"]["run_id"] for s in failed] == [first["run_id"]]
    assert failed[0].error.message == "target: HTTP 503 after 4 attempts" and failed[0].messages == []
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
