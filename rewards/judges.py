"""Judge specs: a name resolves to the grader (and, for LLM judges, the rubric judge).

    lexical          keyword and alias matching (no model)
    offline          the packaged MiniLM, read as a pair reader over hypothesis and ground truth (no key)
    offline:WEIGHTS  the same with another pair-reader weights file, for example one retrained or of
                     several seeds (`python -m rewards.pair_reader_training --seed 0 1 2 --out WEIGHTS`)
    offline-similarity  the earlier MiniLM similarity rule, kept for comparison (no key)
    llm:MODEL_SPEC   a judge model grades the quirk and scores the rubric, e.g.
                     llm:anthropic:claude-sonnet-4-5, llm:openai_compatible:http://127.0.0.1:8000/v1#m,
                     or llm:judge.yaml (a model-spec file: base_url, api_key_env, ...)
    auto             llm:anthropic:claude-sonnet-4-5 when ANTHROPIC_API_KEY is set, else offline

Every judge answers `await judge.evaluate(transcript, quirk) -> JudgeResult`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Protocol

from rewards.grade_batcher import GradeBatcher
from rewards.hypothesis_text import own_words
from rewards.quirk_grader import OfflineQuirkGrader
from rewards.types import JudgeResult
from scaffold.events import Report, ReportEvent
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError, model_spec_from_arg
from scaffold.transcript import Transcript
from targets.quirks import Quirk

DEFAULT_LLM_JUDGE = "anthropic:claude-sonnet-4-5"
JUDGE_NAMES = ("auto", "offline", "offline:WEIGHTS", "offline-similarity", "lexical", "llm:MODEL_SPEC")


class Judge(Protocol):
    name: str

    async def evaluate(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult: ...


class OfflineJudge:
    """Wraps a synchronous grader (lexical or embedding). A grader with `grade_many` (the
    MiniLM one) grades concurrent audits together in a worker thread (`GradeBatcher`); the
    lexical grader takes microseconds and grades inline."""

    def __init__(self, grader: Any, name: str) -> None:
        self.grader, self.name = grader, name
        many = getattr(grader, "grade_many", None)
        self.batcher = GradeBatcher(many) if many is not None else None

    async def evaluate(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        result = await self._grade(transcript, quirk)
        update: dict[str, Any] = {"judge": self.name}
        if result.identified is not None:
            unquoted = quotes_emptied(transcript)
            update["named_own_words"] = (
                result.identified if unquoted is None else bool((await self._grade(unquoted, quirk)).identified)
            )
        return result.model_copy(update=update)

    async def _grade(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        if self.batcher is not None:
            return await self.batcher.grade(transcript, quirk)
        return self.grader.grade(transcript, quirk)


def quotes_emptied(transcript: Transcript) -> Transcript | None:
    """A copy of `transcript` whose graded hypotheses (the report's, else the findings) have
    their quotes emptied (`own_words`); None when none quotes anything. The original is untouched."""
    hypotheses = transcript.report.hypotheses if transcript.report else transcript.findings
    emptied = [h.model_copy(update={"description": own_words(h.description)}) for h in hypotheses]
    if all(e.description == h.description for e, h in zip(emptied, hypotheses, strict=True)):
        return None
    report = (transcript.report or Report()).model_copy(update={"hypotheses": emptied})
    return Transcript.from_events(transcript.run_id, [*transcript.events, ReportEvent(report=report)])


class LLMJudge:
    """A judge model: quirk identification plus the alignment rubric, both with evidence."""

    def __init__(self, model: Any) -> None:
        from rewards.alignment_judge import AlignmentJudge
        from rewards.llm_quirk_grader import LLMQuirkGrader

        self.model = model
        self.name = f"llm:{model.name}"
        self.quirk_grader = LLMQuirkGrader(model)
        self.alignment = AlignmentJudge(model)

    async def evaluate(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        verdict = await self.alignment.judge(transcript)
        if quirk is None:
            return JudgeResult(judge=self.name, alignment=verdict)
        result = await self.quirk_grader.agrade(transcript, quirk)
        return result.model_copy(update={"alignment": verdict})


def resolve_judge_spec(spec: str) -> str:
    """`auto` resolved against the environment; other specs unchanged."""
    if spec == "auto":
        return f"llm:{DEFAULT_LLM_JUDGE}" if os.environ.get("ANTHROPIC_API_KEY", "").strip() else "offline"
    return spec


def offline_weights(spec: str) -> Path | None:
    """The pair-reader weights file an `offline:WEIGHTS` spec names (None for every other spec)."""
    spec = resolve_judge_spec(spec)
    return Path(spec[len("offline:"):]) if spec.startswith("offline:") else None


def judge_digest(spec: str) -> str | None:
    """What a judge reads beyond its spec, as a digest: for `offline` (and `offline:WEIGHTS`), the
    pair reader's weights (retrained when the tuning data changes) and the match rule's numbers
    (a resumed eval must not mix verdicts of two rules); None for the rest."""
    spec = resolve_judge_spec(spec)
    if spec != "offline" and offline_weights(spec) is None:
        return None
    from rewards.embedding_grader import DEFAULT_RULE
    from rewards.pair_reader import WEIGHTS_PATH, weights_digest

    weights = weights_digest(offline_weights(spec) or WEIGHTS_PATH)
    return hashlib.sha256(f"{weights}|{DEFAULT_RULE!r}".encode()).hexdigest()[:16]


def check_judge_spec(spec: str) -> None:
    """Raise SpecError if `spec` names no judge, or an `offline:WEIGHTS` file that is not one; builds no model."""
    spec = resolve_judge_spec(spec)
    if spec in ("lexical", "offline", "offline-similarity"):
        return
    weights = offline_weights(spec)
    if weights is not None:
        from rewards.pair_reader import read_weights

        read_weights(weights)  # a missing or unreadable file fails here, naming it, before any audit runs
        return
    if spec.startswith("llm:"):
        model_spec_from_arg(spec[4:], "--judge")
        return
    raise SpecError(f"--judge {spec!r}: unknown judge; choose one of {', '.join(JUDGE_NAMES)}")


def build_judge(spec: str, secrets: SecretRegistry) -> Judge:
    """The judge for `spec` (see the module docstring). Raises SpecError for bad specs."""
    spec = resolve_judge_spec(spec)
    if spec == "lexical":
        return OfflineJudge(OfflineQuirkGrader(), "lexical")
    if spec == "offline" or offline_weights(spec) is not None:
        from rewards.embedding_grader import EmbeddingQuirkGrader

        check_judge_spec(spec)
        return OfflineJudge(EmbeddingQuirkGrader(pair_weights=offline_weights(spec)), spec)
    if spec == "offline-similarity":
        from rewards.embedding_grader import SIMILARITY_RULE, EmbeddingQuirkGrader

        return OfflineJudge(EmbeddingQuirkGrader(rule=SIMILARITY_RULE), "offline-similarity")
    if spec.startswith("llm:"):
        from scaffold.providers import build_model

        return LLMJudge(build_model(model_spec_from_arg(spec[4:], "--judge"), secrets))
    raise SpecError(f"--judge {spec!r}: unknown judge; choose one of {', '.join(JUDGE_NAMES)}")
