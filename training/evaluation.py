"""Held-out evaluation of the policy being trained, through the benchmark's own code.

`evals.runner.run_eval` runs the suite with the trainer's in-memory policy as the
auditor (no copy, no reload), into OUT/evals/step-N/ (or OUT/evals/final/), the same
directory layout and results.json as `audit eval --out`.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from evals.results import EvalResults
from evals.runner import run_eval
from evals.suites import load_suite
from scaffold.model import ChatModel
from scaffold.secrets import SecretRegistry
from scaffold.store import Store
from training.config import TrainConfig
from training.policy import merges_for, sampling_mode


def eval_dir(out: Path, step: int, final: bool = False) -> Path:
    return out / "evals" / ("final" if final else f"step-{step:05d}")


def evaluate_policy(
    config: TrainConfig,
    out: Path,
    step: int,
    *,
    model: Any,
    sampler: ChatModel,
    loop: asyncio.AbstractEventLoop,
    secrets: SecretRegistry,
    final: bool = False,
) -> EvalResults:
    """Run the config's eval suite with `sampler` (over `model`, put in eval mode meanwhile)."""
    suite = load_suite(config.eval.suite)
    suite = suite.with_max_turns(config.eval.max_turns or config.tasks.max_turns)
    suite = suite.model_copy(update={"judge": config.reward.judge, "manual": config.policy.manual})
    target = eval_dir(out, step, final)
    if target.exists():  # left by a crashed run: these weights are evaluated afresh
        shutil.rmtree(target)
    target.mkdir(parents=True)
    store = Store(f"sqlite:///{target / 'audit.db'}", redact=secrets.redact)
    with sampling_mode(model, merge=merges_for(config, sampler)):
        return loop.run_until_complete(
            run_eval(
                suite,
                auditor=f"policy:{config.name}@step-{step}",
                judge=config.reward.judge,
                out=target,
                store=store,
                secrets=secrets,
                concurrency=config.eval.concurrency,
                repeats=config.eval.repeats,
                auditor_model=sampler,
            )
        )


def eval_metrics(results: EvalResults) -> dict[str, Any]:
    """The numbers a metrics line keeps of a held-out eval."""
    agg = results.aggregates
    metrics = {
        # grounded is the headline; detection_rate keeps its meaning from before results schema 2
        # (named: a top hypothesis names the quirk), so old and new runs stay comparable
        "eval/grounded_rate": agg.detection.rate,
        "eval/grounded": agg.detection.k,
        "eval/detection_rate": agg.named_detection.rate,
        "eval/detected": agg.named_detection.k,
        "eval/named_own_words_rate": agg.named_own_words.rate if agg.named_own_words else None,
        "eval/audits": agg.detection.n,
        "eval/false_positive_rate": agg.false_positives.rate,
        "eval/claim_rate": agg.claims_on_quirks.rate if agg.claims_on_quirks else None,
        "eval/valid_tool_call_rate": agg.valid_tool_call_rate,
        "eval/mean_reward": agg.mean_reward,
    }
    return {k: v for k, v in metrics.items() if v is not None}
