"""The LLM quirk grader with a real SDK against a local Anthropic-wire server."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from rewards.llm_quirk_grader import LLMQuirkGrader
from rewards.reward import grounded_reward
from scaffold.providers import build_model
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec
from targets.quirks import get_quirk
from tests.fakes.wire_server import Reply, WireServer, anthropic_reply, status_reply
from tests.test_reward_hacking import REPORTS, _audit

KEY_ENV = "AUDITRL_TEST_JUDGE_KEY"


def _judge(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> LLMQuirkGrader:
    monkeypatch.setenv(KEY_ENV, "sk-judge-test-0123456789")
    spec = ModelSpec(provider="anthropic", model="judge", base_url=server.base_url, api_key_env=KEY_ENV,
                     max_retries=1, retry_base_delay_s=0.01)
    return LLMQuirkGrader(build_model(spec, SecretRegistry()))


async def test_a_match_is_graded_with_verified_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = await _audit(REPORTS["genuine"])
    with WireServer([anthropic_reply(text='Sure: {"matches": [true]}')]) as server:
        result = await _judge(server, monkeypatch).agrade(transcript, get_quirk("flattery"))
        prompt = server.requests[0].body["messages"][0]["content"]
    assert result.identified is True and result.matched_rank == 1 and result.evidence_score == 1.0
    assert get_quirk("flattery").ground_truth.strip()[:40] in str(prompt)
    assert grounded_reward(result, transcript).reward >= 0.9


async def test_an_unusable_reply_is_retried_then_recorded_as_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = await _audit(REPORTS["genuine"])
    with WireServer([anthropic_reply(text="I think it matches."), anthropic_reply(text='{"matches": [false]}')]) as server:
        result = await _judge(server, monkeypatch).agrade(transcript, get_quirk("flattery"))
        assert len(server.requests) == 2
    assert result.identified is False and result.error is None
    with WireServer([anthropic_reply(text="no json"), anthropic_reply(text='{"matches": "yes"}'),
                     anthropic_reply(text='{"matches": [1]}')]) as server:
        failed = await _judge(server, monkeypatch).agrade(transcript, get_quirk("flattery"))
    assert failed.identified is None and failed.hypotheses == [] and "after 3 attempts" in failed.error


async def test_a_failing_judge_model_yields_none_not_a_default(monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = await _audit(REPORTS["genuine"])
    with WireServer([status_reply(500), status_reply(500)]) as server:
        result = await _judge(server, monkeypatch).agrade(transcript, get_quirk("flattery"))
    assert result.identified is None and result.evidence_score is None and "judge model failed" in result.error


def _lenient(request) -> Reply:  # type: ignore[no-untyped-def]
    """A fake judge that says every hypothesis matches: what calibration must show as a lenient grader."""
    prompt = request.body["messages"][0]["content"]
    text = prompt if isinstance(prompt, str) else " ".join(part.get("text", "") for part in prompt)
    count = sum(1 for line in text.splitlines() if re.match(r"^\d+\. ", line))
    return anthropic_reply(text=json.dumps({"matches": [True] * count}))


def test_llm_grader_calibrates_per_category_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`audit judge calibrate --judge llm:SPEC.yaml` against a local wire server, per set and category."""
    from tests.test_cli import audit

    with WireServer(responder=_lenient) as server:
        spec = tmp_path / "judge.yaml"
        spec.write_text(f"provider: anthropic\nmodel: judge\nbase_url: {server.base_url}\napi_key_env: {KEY_ENV}\n")
        env = {**os.environ, KEY_ENV: "sk-judge-test-0123456789"}
        run = audit("judge", "calibrate", "--judge", f"llm:{spec}", "--set", "hard-negatives", "--half", "test",
                    "--json", cwd=tmp_path, env=env)
        assert run.returncode == 0, run.stderr
        prompts = [r.body["messages"][0]["content"] for r in server.requests]
    report = json.loads(run.stdout)
    hard = report["sets"]["hard-negatives"]
    categories = hard["by_category"]
    assert report["judge"] == "llm:anthropic:judge" and hard["half"] == "test"
    # A judge that credits everything accepts every negation and opposite, and its kappa is 0.
    assert categories["negation"]["accepted"] == categories["negation"]["n"] > 0
    assert categories["paraphrase"]["accepted"] == categories["paraphrase"]["n"]
    assert hard["kappa"] == 0.0
    # Controls: whether a report claims anything is read by the shared "nothing found" detector,
    # whatever the judge says, so the LLM grader's control row is the lexical grader's.
    from rewards.calibration_report import by_category
    from rewards.hard_negatives import load_hard_negatives
    from rewards.quirk_grader import OfflineQuirkGrader

    controls = [c for c in load_hard_negatives("test") if c.quirk == "none"]
    assert categories["control"] == by_category(OfflineQuirkGrader(), controls)["control"]
    assert categories["control"]["accepted"] < categories["control"]["n"]
    # Only the quirk grader was asked (no rubric calls), once per seeded case, with the polarity rules.
    assert len(prompts) == hard["n"] and all("does not happen" in str(p) for p in prompts)
    assert "sk-judge-test" not in run.stdout + run.stderr
