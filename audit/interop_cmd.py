"""`audit export` (Inspect logs, Docent runs) and `audit import` (Petri transcripts): interop/."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from audit.context import QUIRKS_HELP, cli_context

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
    cli.console.print(Text(f"{len(audits)} audit(s) -> {out} ({format.value}){detail}"))
    for item in DROPPED:
        cli.console.print(Text(f"  not carried: {item}"))

