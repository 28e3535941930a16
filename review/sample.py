"""Sample audits for trying the review app, and for its tests, benchmark and screenshot.

Real audits through the real scaffold: the heuristic auditor against an offline
organism, graded by the lexical judge. `add_rubric_verdict` then grades a stored run
again with the real `LLMJudge` (quirk grader plus alignment rubric, citation matching,
prefill cap) on a scripted judge model, whose reply quotes given target messages: the
quotes the review page highlights. No model, key or network is needed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

from evals.audit_job import AuditJob, check_job, grade_and_store, run_judged_audit
from rewards.judges import LLMJudge
from rewards.rubric import RUBRIC
from scaffold.messages import GenerateConfig, Message, ToolDefinition
from scaffold.providers.scripted import ScriptedModel
from scaffold.secrets import SecretRegistry
from scaffold.store import Store
from scaffold.transcript import Transcript

EXAMPLES = Path(__file__).resolve().parent.parent / "targets" / "examples"
_LISTED = re.compile(r"^\d+\. ", re.M)


def scripted_rubric_judge(scores: dict[str, int], quotes: dict[str, Sequence[str]]) -> LLMJudge:
    """An LLM judge on a scripted model: rubric `scores` (others 1) quoting `quotes`; every hypothesis matches."""

    def reply(messages: Sequence[Message], tools: Sequence[ToolDefinition], config: GenerateConfig | None) -> Message:
        prompt = messages[0].content
        if prompt.startswith("You are an alignment judge"):
            dims = {
                d.name: {"score": scores.get(d.name, 1), "quotes": list(quotes.get(d.name, ())),
                         "rationale": f"Scripted rationale for {d.name}."}
                for d in RUBRIC
            }
            return Message(role="assistant", content=json.dumps({"dimensions": dims, "summary": "Scripted verdict."}))
        return Message(role="assistant", content=json.dumps({"matches": [True] * len(_LISTED.findall(prompt))}))

    return LLMJudge(ScriptedModel(reply, name="scripted-judge"))


async def sample_run(store: Store, out: Path, target: str = "flattery.yaml", max_turns: int = 12) -> str:
    """One judged heuristic audit of `targets/examples/<target>`; returns its run id."""
    job = AuditJob(target_path=str(EXAMPLES / target), judge="lexical", max_turns=max_turns)
    judged = await run_judged_audit(job, store, SecretRegistry(), out)
    return judged.result.run_id


def quotable_replies(transcript: Transcript, count: int = 2) -> list[str]:
    """The first sentence of the first `count` target replies: text a judge could quote."""
    quotes = []
    for message in transcript.target.nodes.values():
        if message.role == "assistant" and message.content.strip():
            quotes.append(re.split(r"(?<=[.!?;])\s", message.content.strip(), maxsplit=1)[0])
        if len(quotes) == count:
            break
    return quotes


async def add_rubric_verdict(store: Store, run_id: str, quotes: Sequence[str] | None = None) -> dict:
    """Grade a stored run again with the scripted rubric judge (sycophancy 8, quoting `quotes`); stores and returns it."""
    row = store.get_run(run_id)
    transcript = Transcript.from_events(run_id, store.read_events(run_id))
    quotes = list(quotes) if quotes is not None else quotable_replies(transcript)
    judge = scripted_rubric_judge({"sycophancy": 8, "concerning": 3}, {"sycophancy": quotes, "concerning": quotes[:1]})
    job = AuditJob.model_validate(row["config"])
    result, reward = await grade_and_store(judge, job.reward, check_job(job), transcript, store, job.reward_weights)
    return {"judge": result.model_dump(), "reward": reward.model_dump()}
