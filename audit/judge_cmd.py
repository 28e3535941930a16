"""`audit judge`: re-score a stored audit with another judge, or measure a judge's
agreement with the labelled calibration set."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit.context import QUIRKS_HELP, CliContext, cli_context
from audit.render import terminal_safe
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.store import DEFAULT_STORE_URL, Store


async def _rescore(run_id: str, judge_spec: str, store: Store, secrets: SecretRegistry) -> dict[str, Any]:
    from evals.audit_job import AuditJob, check_job, grade_and_store
    from rewards.judges import build_judge
    from scaffold.model import close_model
    from scaffold.transcript import Transcript
    row = store.get_run(run_id)
    if (row["config"] or {}).get("imported_from"):
        source = row["config"]["imported_from"]
        raise SpecError(f"run {run_id} was imported from {source}: grade it with "
                        f"`audit import {source} FILE --judge SPEC` (it keeps the first import)")
    job = AuditJob.model_validate(row["config"])
    target = check_job(job)
    judge = build_judge(judge_spec, secrets)
    transcript = Transcript.from_events(run_id, store.read_events(run_id))
    try:
        result, reward = await grade_and_store(judge, job.reward, target, transcript, store, job.reward_weights)
    finally:
        await close_model(getattr(judge, "model", None))
    return {"judge": result.model_dump(), "reward": reward.model_dump()}


def _print_rescore(console: Console, run_id: str, record: dict[str, Any]) -> None:
    judge, reward = record["judge"], record["reward"]
    table = Table(title=f"run {run_id} judged by {judge['judge']}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    if judge.get("error"):
        table.add_row("error", Text(terminal_safe(judge["error"])))
    table.add_row("quirk identified", str(judge.get("identified")))
    table.add_row("grounded", str(judge.get("grounded")))
    table.add_row("matched rank", str(judge.get("matched_rank")))
    table.add_row("false positive", str(judge.get("false_positive")))
    table.add_row("evidence", str(judge.get("evidence_score")))
    table.add_row("reward", f"{reward['name']} {reward['reward']:.3f}")
    alignment = judge.get("alignment") or {}
    for dim in alignment.get("dimensions", []):
        quotes = ", ".join(f"{c['message_id'] or '?'}({c['match']})" for c in dim.get("citations", []))
        table.add_row(f"  {dim['name']}", Text(terminal_safe(f"{dim['score']}  {quotes}")))
    if alignment.get("error"):
        table.add_row("alignment error", Text(terminal_safe(alignment["error"])))
    console.print(table)


def _label_cases(cli: CliContext, path: Path) -> list[Any]:
    from rewards.calibration import cases_from_labels

    try:
        cases = cases_from_labels(path)
    except OSError as exc:
        cli.fail(f"--labels {path}: cannot read it ({exc.strerror})")
    except ValueError as exc:
        cli.fail(f"--labels {exc}")
    if not cases:
        cli.fail(f"--labels {path}: no usable labels (confirmed or false-positive reviews of seeded-quirk runs)")
    return cases


def _print_calibration(console: Console, report: dict[str, Any]) -> None:
    """One table per labelled set: overall, controls, then each category."""
    for name, part in report["sets"].items():
        table = Table(title=f"{report['judge']} on {name} ({part['half']})")
        for column in ("category", "n", "labelled true", "accepted", "accuracy", "kappa"):
            table.add_column(column, justify="left" if column == "category" else "right")

        def kappa(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.3f}"

        confusion = part["confusion"]
        table.add_row("all seeded", str(part["n"]), str(confusion["tp"] + confusion["fn"]), str(confusion["tp"] + confusion["fp"]),
                      f"{part['accuracy']:.3f}", kappa(part["kappa"]), style="bold")
        for kind, row in part["by_category"].items():
            table.add_row(kind, str(row["n"]), str(row["labelled_true"]), str(row["accepted"]),
                          f"{row['accuracy']:.3f}", kappa(row["kappa"]))
        console.print(table)
    controls = report["controls"]
    console.print(Text(
        f"{report['judge']}: identified n={report['n']} accuracy={report['accuracy']:.3f} kappa={report['kappa']:.3f} "
        f"confusion={report['confusion']}; controls n={controls['n']} accuracy={controls['accuracy']:.3f}"
    ))


def judge_command(
    ctx: typer.Context,
    what: str = typer.Argument(..., help="A RUN_ID to re-score, or `calibrate` to measure agreement with labels."),
    judge: list[str] = typer.Option(
        ["auto"], help="Judge: auto | offline | offline:WEIGHTS | offline-similarity | lexical | llm:MODEL_SPEC. With `calibrate`, repeat it to compare "
        "judges (--json then prints a list, one report per judge)."
    ),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL (for re-scoring a run)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    labels: Optional[Path] = typer.Option(
        None, "--labels", help="With `calibrate`: the review labels exported by `audit review` "
        "(/export/labels.jsonl) instead of the packaged calibration sets; each run's newest label counts."
    ),
    sets: list[str] = typer.Option(
        ["original", "hard-negatives"], "--set", help="With `calibrate`: the packaged labelled set(s): original "
        "(audits and scripted reports) and/or hard-negatives (negations, opposites, near misses, shotgun lists, "
        "gibberish, paraphrases, controls), or a .yaml file of items in that format, read whole. Repeatable."
    ),
    half: str = typer.Option(
        "all", help="With `calibrate`: dev (what the offline grader was tuned on), test (never tuned on) or all."
    ),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Re-score a stored audit with another judge, or `calibrate` judges against the labelled sets, per category."""
    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    if half not in ("dev", "test", "all"):
        cli.fail(f"--half {half!r}: choose dev, test or all")
    if what == "calibrate":
        from rewards.calibration_report import calibrate_judge

        cases = _label_cases(cli, labels) if labels else None
        reports = [
            cli.guarded(lambda spec=spec: asyncio.run(calibrate_judge(spec, cli.secrets, cases, sets, half)))  # type: ignore[arg-type]
            for spec in judge
        ]
        if as_json:
            typer.echo(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2))
        else:
            for report in reports:
                _print_calibration(cli.console, report)
        return
    if len(judge) != 1:
        cli.fail("--judge: re-scoring a run takes one judge")
    db = cli.open_store(store, must_exist=True)
    record = cli.guarded(lambda: asyncio.run(_rescore(what, judge[0], db, cli.secrets)))
    if as_json:
        typer.echo(json.dumps(record, indent=2))
    else:
        _print_rescore(cli.console, what, record)
