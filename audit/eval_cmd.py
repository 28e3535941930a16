"""`audit eval`: run a seeded-quirk suite with an auditor, list suites, compare evals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from audit.context import MANUAL_HELP, QUIRKS_HELP, ManualChoice, cli_context
from scaffold.state import MAX_TURNS
from scaffold.store import DEFAULT_STORE_URL

eval_app = typer.Typer(
    help="Benchmark an auditor on seeded-quirk organisms: detection with intervals, false positives, cost. "
    "Run a suite with `audit eval --suite NAME --auditor SPEC`; see also `audit eval suites` and "
    "`audit eval compare DIR_A DIR_B`.",
    invoke_without_command=True,
)


@eval_app.callback()
def run_suite(
    ctx: typer.Context,
    suite: Optional[str] = typer.Option(None, help="Suite name (see `audit eval suites`) or a suite YAML file."),
    auditor: str = typer.Option("heuristic", help="Auditor spec, as for `audit run --auditor`."),
    judge: Optional[str] = typer.Option(None, help="Judge spec (default: the suite's, usually `offline`)."),
    repeats: Optional[int] = typer.Option(None, min=1, help="Audits per quirk, overriding the suite's."),
    max_turns: Optional[int] = typer.Option(
        None, min=1, max=MAX_TURNS, help="Auditor turns per audit, overriding the suite's (recorded in results.json)."
    ),
    manual: Optional[ManualChoice] = typer.Option(None, help=MANUAL_HELP + " Default: the suite's."),
    concurrency: int = typer.Option(8, min=1, max=4096, help="Audits in flight at once."),
    out: Optional[Path] = typer.Option(None, help="Eval directory (default: evals-out/<suite>-<auditor>)."),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL every audit is stored in."),
    resume: bool = typer.Option(False, "--resume", help="Continue the eval in --out: finished audits are kept."),
    prices: Optional[Path] = typer.Option(None, help="API price table YAML (default: evals/prices.yaml)."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
    ray: Optional[str] = typer.Option(
        None, "--ray", metavar="local|ADDRESS",
        help="Run the audits as Ray tasks: `local` starts a cluster on this machine (SQLite or PostgreSQL store); "
        "`auto` or `ray://HOST:10001` joins a running one (PostgreSQL store). --concurrency is then per worker. "
        "Needs the `ray` extra.",
    ),
    ray_workers: Optional[int] = typer.Option(
        None, min=1, max=4096, help="With `--ray local`: the local cluster's workers (default: this machine's CPUs)."
    ),
) -> None:
    """Run a suite: many concurrent, judged, stored audits into results.json and reports."""
    cli = cli_context(ctx)
    cli.use_quirks(quirks)  # before a subcommand too: `audit eval --quirks DIR suites`
    if ctx.invoked_subcommand is not None:
        return
    from evals.prices import load_prices
    from evals.report import fmt_rate, generated_rows
    from evals.runner import run_eval
    from evals.suites import load_suite

    if suite is None:
        cli.fail("give --suite NAME (see `audit eval suites`), or a subcommand; see --help")
    loaded = cli.guarded(lambda: load_suite(suite))
    if max_turns is not None:
        loaded = loaded.with_max_turns(max_turns)
    if manual is not None:
        loaded = loaded.model_copy(update={"manual": manual.value})
    table = cli.guarded(lambda: load_prices(prices))  # checked before anything is created
    on_ray = None
    if ray is not None:
        from evals.ray_runner import RayOptions

        if not ray.strip():
            cli.fail("--ray: give `local`, `auto` or a cluster address such as ray://HOST:10001")
        if ray_workers is not None and ray != "local":
            cli.fail("--ray-workers sizes a local cluster; a running cluster has its own workers")
        on_ray = RayOptions(address=None if ray == "local" else ray, workers=ray_workers)
    elif ray_workers is not None:
        cli.fail("--ray-workers needs --ray local")
    directory = out or Path("evals-out") / f"{loaded.name}-{_slug(auditor)}"
    log_path = cli.setup_logging(directory)
    db = cli.open_store(store, log_path=log_path)
    if on_ray is not None:
        from evals.ray_runner import worker_store_url

        cli.guarded(lambda: worker_store_url(db, on_ray))  # a store the workers cannot share: refused before any audit
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=cli.console, transient=False,
    )
    task = bar.add_task(escape(f"{loaded.name} · {auditor}"), total=None, last="")

    def started(done: int, total: int) -> None:
        bar.update(task, total=total, completed=done, last=f"resumed: {done} already done" if done else "")

    def finished(row, done: int, total: int) -> None:  # type: ignore[no-untyped-def]
        if row.split == "control":
            verdict = "FP" if row.false_positive else "ok"
        else:
            verdict = "hit" if row.grounded else ("named, no evidence" if row.identified else "miss")
        if row.status != "completed":
            verdict = "failed"
        bar.update(task, completed=done, last=escape(f"{row.case_id}: {verdict}"))

    def go():  # type: ignore[no-untyped-def]
        with bar:
            return asyncio.run(
                run_eval(
                    loaded, auditor=auditor, judge=judge, out=directory, store=db, secrets=cli.secrets,
                    concurrency=concurrency, repeats=repeats, resume=resume, prices=table,
                    on_row=finished, on_start=started, ray=on_ray,
                )
            )

    # Once audits are stored, the eval directory and the store are kept, whatever fails.
    results = cli.guarded(go, log_path, work_stored=(directory / "audits.jsonl").exists)
    console = cli.console
    agg = results.aggregates
    console.print(Text(f"detection (grounded) {fmt_rate(agg.detection)}"), highlight=False)
    for split, rate in agg.detection_by_split.items():
        console.print(Text(f"  {split}: {fmt_rate(rate)}"), highlight=False)
    console.print(Text(f"named (no evidence needed) {fmt_rate(agg.named_detection)}"), highlight=False)
    for split, rate in agg.named_by_split.items():
        console.print(Text(f"  {split}: {fmt_rate(rate)}"), highlight=False)
    if agg.named_own_words is not None:
        console.print(Text(f"named in own words (quotes emptied) {fmt_rate(agg.named_own_words)}"), highlight=False)
    for label, value in generated_rows(results):
        console.print(Text(f"{label}: {value}"), highlight=False)
    console.print(Text(f"false positives {fmt_rate(agg.false_positives)}; {agg.failed} failed"), highlight=False)
    console.print(Text(f"results: {directory / 'results.json'}; report: {directory / 'report.html'}"), highlight=False)


def _slug(spec: str) -> str:
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in spec)
    return keep.strip("-")[:60] or "auditor"


@eval_app.command("suites")
def list_suites_command(ctx: typer.Context) -> None:
    """List the shipped suites: name, audits, description."""
    from evals.suites import expand, list_suites

    cli = cli_context(ctx)
    table = Table(title="suites")
    for column in ("name", "audits", "max turns", "description"):
        table.add_column(column)
    for suite in cli.guarded(list_suites):
        table.add_row(suite.name, str(len(expand(suite))), str(suite.max_turns), Text(suite.description.strip()))
    cli.console.print(table)


@eval_app.command("compare")
def compare_command(
    ctx: typer.Context,
    dirs: list[Path] = typer.Argument(..., help="Eval directories (or results.json files); the first is the reference."),
    out: Optional[Path] = typer.Option(None, help="Also write the table as Markdown to this file."),
) -> None:
    """Evals side by side: per-quirk and overall differences with Fisher exact p-values."""
    from evals.compare import compare, load_results, markdown, table_rows

    cli = cli_context(ctx)
    console = cli.console
    evals = [cli.guarded(lambda d=d: load_results(d)) for d in dirs]
    labels = [f"{e.auditor} ({d.name})" for e, d in zip(evals, dirs, strict=True)]
    comparison = cli.guarded(lambda: compare(evals, labels))
    for e, d in zip(evals[1:], dirs[1:], strict=True):
        if (e.suite.get("name"), e.judge) != (evals[0].suite.get("name"), evals[0].judge):
            console.print(Text(f"warning: {d} ran suite {e.suite.get('name')} judged by {e.judge}; the reference ran "
                               f"{evals[0].suite.get('name')} judged by {evals[0].judge}: differences mix both"),
                          style="yellow")
    table = Table(title=escape(f"reference: {labels[0]}"))
    table.add_column("metric")
    table.add_column(escape(labels[0]))
    for label in labels[1:]:
        table.add_column(escape(label))
        table.add_column("Δ")
        table.add_column("p")
    for cells in table_rows(comparison):
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    if out:
        cli.guarded(lambda: out.write_text(markdown(comparison), encoding="utf-8"))
        console.print(Text(f"wrote {out}"), highlight=False)
