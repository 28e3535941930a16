"""`audit export` (Inspect logs, Docent runs) and `audit import` (Petri transcripts): interop/."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from audit.context import QUIRKS_HELP, cli_context
from audit.render import terminal_safe
from scaffold.store import DEFAULT_STORE_URL

INTEROP_INSTALL = "pip install 'auditrl[interop]'"


class ExportFormat(str, Enum):
    inspect = "inspect"
    docent = "docent"


SUFFIXES = {ExportFormat.inspect: (".eval", ".json"), ExportFormat.docent: (".jsonl",)}


def export_command(
    ctx: typer.Context,
    sources: list[str] = typer.Argument(
        ..., help="Eval directories (`audit eval --out`), or run ids in --store; several are exported together."
    ),
    format: ExportFormat = typer.Option(
        ..., "--format", help="inspect: an Inspect eval log (.eval or .json), one sample per audit, for Inspect "
        "View. docent: Docent agent runs as JSON lines (.jsonl), one per audit, for upload with a Docent key."
    ),
    out: Path = typer.Option(..., "--out", help="The file to write (.eval/.json for inspect, .jsonl for docent)."),
    store: Optional[str] = typer.Option(None, "--store", help="The database URL of run ids given as sources."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Write judged audits in another tool's format: each audit's conversation, tool calls and results, the
    judge's scores with the quotes they cite, and the reward. The quirk's ground truth travels only in metadata
    marked `graders_only`; the organism's firing flags never leave. What the format cannot hold is listed."""
    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    if out.suffix not in SUFFIXES[format]:
        cli.fail(f"--out {out}: a {format.value} export ends in {' or '.join(SUFFIXES[format])}")
    if out.is_dir():
        cli.fail(f"--out {out}: is a directory; give a file")
    try:
        if format is ExportFormat.inspect:
            import inspect_ai  # noqa: F401
        else:
            import docent  # noqa: F401
    except ImportError:
        cli.fail(f"--format {format.value} needs the interop extra; run: {INTEROP_INSTALL}")
    from interop.audits import load_audits

    opener = (lambda: cli.open_store(store, must_exist=True)) if store else None
    audits, name = cli.guarded(lambda: load_audits(sources, opener))
    if format is ExportFormat.inspect:
        from interop.inspect_log import DROPPED, write_inspect_log

        cli.guarded(lambda: write_inspect_log(audits, name, out))
        detail = ""
    else:
        from interop.docent_runs import DROPPED, write_docent_runs

        _, warnings = cli.guarded(lambda: write_docent_runs(audits, out))
        detail = f"; Docent's transcript checks: {warnings} warning(s)"
    cli.console.print(Text(terminal_safe(f"{len(audits)} audit(s) -> {out} ({format.value}){detail}")))
    for item in DROPPED:
        cli.console.print(Text(f"  not carried: {item}"))



import_app = typer.Typer(
    help="Bring audits made by other tools into the store: `audit import petri`.", no_args_is_help=True
)


@import_app.command("petri")
def import_petri_command(
    ctx: typer.Context,
    sources: list[Path] = typer.Argument(..., help="Petri transcript files (format v3), or directories of them."),
    store: str = typer.Option(DEFAULT_STORE_URL, "--store", help="The database to import into."),
    judge: Optional[str] = typer.Option(
        None, "--judge", help="Also grade each audit with one of our judges (offline, lexical, llm:SPEC); "
        "Petri's own verdict is always kept, as the judge 'petri'."
    ),
    quirk: Optional[str] = typer.Option(
        None, "--quirk", help="The quirk the audited model was seeded with, for --judge to grade against "
        "('none' for a control); without it our quirk graders have no ground truth."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Also write OUT/rollouts.jsonl, so that `audit traces OUT --store FILE` reads the "
        "imported audits."
    ),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Import Petri transcripts: the auditor's conversation, the target's conversation with every rollback
    branch, the tools made for the target, and Petri's judge output (scores, summary, highlights). Then
    `audit show`, `audit review` and (with --out) `audit traces` read them. Importing a file twice adds no
    run; with --judge it grades the audit again, as `audit judge` would."""
    import asyncio

    from interop.petri_store import import_file, petri_files, prepare, write_traces_index

    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    files = cli.guarded(lambda: petri_files(sources))
    seeded = None
    if quirk is not None:
        from targets.quirks import get_quirk

        seeded = cli.guarded(lambda: get_quirk(quirk))
    if judge is None and quirk is not None:
        cli.fail("--quirk is for --judge: give the judge that should grade against it")
    if out is not None and out.exists() and not out.is_dir():
        cli.fail(f"--out {out}: is a file; give a directory")
    prepared = [cli.guarded(lambda: prepare(path)) for path in files]  # all checked before anything is written
    built = None
    if judge is not None:
        from rewards.judges import build_judge

        built = cli.guarded(lambda: build_judge(judge, cli.secrets))
    db = cli.open_store(store)

    async def run_all() -> list:
        outcomes = []
        for item in prepared:
            outcomes.append(await import_file(item, db, judge=built, quirk=seeded))
        return outcomes

    outcomes = cli.guarded(lambda: asyncio.run(run_all()), work_stored=lambda: True)
    for o in outcomes:
        line = f"{o.path}: {o.status} as {o.run_id}"
        if o.verdict is not None:
            found = "error: " + o.verdict.error if o.verdict.error else (
                f"false positive {o.verdict.false_positive}" if seeded and seeded.id == "none"
                else f"named {o.verdict.identified}, grounded {o.verdict.grounded}")
            line += f"; {built.name if built else ''}: {found}, reward {o.reward:.3f}"
        cli.console.print(Text(terminal_safe(line)))
        for note in o.notes:  # notes quote the file (content part types): shown, never sent to the terminal
            cli.console.print(Text(terminal_safe(f"  not carried: {note}")))
    from interop.petri_import import DROPPED

    for item in DROPPED:
        cli.console.print(Text(f"  not carried (any Petri file): {item}"))
    if out is not None:
        index = cli.guarded(lambda: write_traces_index(outcomes, out, seeded), work_stored=lambda: True)
        cli.console.print(Text(terminal_safe(f"traces index: {index}")))
