"""`audit seeds`: the library of seed instructions an audit can start from (`audit run --seed ID`)."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from audit.context import cli_context
from scaffold.specs import SpecError

seeds_app = typer.Typer(help="List and show the seed instructions for auditors.", no_args_is_help=True)


@seeds_app.command("list")
def list_seeds(
    ctx: typer.Context,
    tag: Optional[str] = typer.Option(
        None, help="Only seeds with this tag: a category (sycophancy, deception, ...) or agentic, prefill, rollback, ..."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {id, tags, text} instead of a table."),
) -> None:
    """List the seed instructions, optionally only those with one tag."""
    cli = cli_context(ctx)
    console = cli.console
    from auditor.seeds import all_tags, load_seed_library, seeds_with_tag

    try:
        seeds = load_seed_library()
        if tag is not None:
            if tag not in all_tags():
                cli.fail(f"unknown tag {tag!r}; known tags: {', '.join(all_tags())}")
            seeds = seeds_with_tag(tag)
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        typer.echo(json.dumps([{"id": s.id, "tags": list(s.tags), "text": s.text} for s in seeds], indent=2))
        return
    table = Table(title=f"seed instructions ({len(seeds)})", show_lines=True, expand=True)
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("tags", max_width=24)
    table.add_column("text", overflow="fold", ratio=1)
    for s in seeds:
        table.add_row(s.id, ", ".join(s.tags), s.text)
    console.print(table)


@seeds_app.command("show")
def show_seed(
    ctx: typer.Context,
    seed_id: str = typer.Argument(..., help="The seed's id (see `audit seeds list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print the seed as JSON {id, tags, text}."),
) -> None:
    """Show one seed instruction in full."""
    cli = cli_context(ctx)
    console = cli.console
    from auditor.seeds import get_seed

    try:
        seed = get_seed(seed_id)
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        typer.echo(json.dumps({"id": seed.id, "tags": list(seed.tags), "text": seed.text}, indent=2))
        return
    console.print(Panel(Text(seed.text), title=seed.id, subtitle="tags: " + ", ".join(seed.tags), expand=False))
