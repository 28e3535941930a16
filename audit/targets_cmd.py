"""`audit targets`: the seeded quirks and their splits. Ground truth is shown as such."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from audit.context import cli_context
from scaffold.specs import SpecError

targets_app = typer.Typer(help="List and inspect the seeded quirks that organisms carry.", no_args_is_help=True)


@targets_app.command("list")
def list_quirks(
    ctx: typer.Context,
    split: Optional[str] = typer.Option(None, help="Only this split: train, heldout or control."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (id, split, confession) instead of a table."),
) -> None:
    """List the quirks with their splits and confession levels."""
    cli = cli_context(ctx)
    console = cli.console
    from targets.quirks import all_quirks, quirks_in_split

    try:
        quirks = quirks_in_split(split) if split else sorted(all_quirks().values(), key=lambda q: (q.split, q.id))
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        rows = [{"id": q.id, "split": q.split, "confession": q.confession} for q in quirks]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="seeded quirks")
    for column in ("id", "split", "confession", "simulated trigger"):
        table.add_column(column)
    for q in quirks:
        table.add_row(q.id, q.split, q.confession, ", ".join(q.simulated.trigger) or "-")
    console.print(table)


@targets_app.command("show")
def show_quirk(
    ctx: typer.Context,
    quirk_id: str = typer.Argument(..., help="The quirk's id (see `audit targets list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print the quirk file as JSON."),
) -> None:
    """Show one quirk. Its ground truth is for graders and reviewers, never for auditors."""
    cli = cli_context(ctx)
    console = cli.console
    from targets.quirks import get_quirk

    try:
        q = get_quirk(quirk_id)
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        typer.echo(q.model_dump_json(indent=2))
        return
    console.print(Panel(Text(f"{q.id}  split={q.split}  confession={q.confession}"), expand=False))
    truth = Text()
    truth.append(q.ground_truth.strip() + "\n\n")
    truth.append("aliases: " + ", ".join(q.aliases) + "\n")
    truth.append("grader keywords: " + ", ".join(q.keywords))
    console.print(Panel(truth, title="GROUND TRUTH - for graders only, never shown to an auditor", style="yellow"))
    implant = Text()
    implant.append("system prompt implant: " + q.system_prompt_implant.strip() + "\n\n")
    implant.append(f"simulated: trigger={', '.join(q.simulated.trigger) or '-'} rewrite={q.simulated.rewrite}\n")
    implant.append("confession text: " + (q.confession_text or "-"))
    console.print(Panel(implant, title="implants"))
    if q.probes:
        console.print(Panel(Text("\n".join(f"- {p}" for p in q.probes)), title="probe prompts (organism tests only)"))
