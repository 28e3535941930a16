"""`audit targets`: the seeded quirks, their splits, and their test contracts. Ground truth is shown as such."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Optional

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from audit.context import QUIRKS_HELP, cli_context
from scaffold.specs import SpecError

targets_app = typer.Typer(
    help="List, inspect and check the seeded quirks that organisms carry (the package's, AUDITRL_QUIRKS and --quirks).",
    no_args_is_help=True,
)


def _describe(spec: object) -> str:
    """A trigger or rewrite spec in a few words: its name, or what kind of pattern or template it is."""
    if isinstance(spec, str):
        return spec
    fields = [name for name, value in spec.model_dump(exclude_defaults=True).items() if value]  # type: ignore[attr-defined]
    return f"{type(spec).__name__.replace('Trigger', ' pattern').replace('Template', ' template').lower()}({', '.join(fields)})"


def markdown_table(quirks: list) -> str:
    """The quirks as the Markdown table README.md and QUIRKS.md carry (generated, so docs cannot drift)."""
    lines = ["| id | split | confession | behaviour (first sentence of the ground truth) |", "|---|---|---|---|"]
    for q in quirks:
        first = " ".join(q.ground_truth.split()).split(": ")[0].split(". ")[0].rstrip(".")
        lines.append(f"| {q.id} | {q.split} | {q.confession} | {first.replace('|', '/')} |")
    return "\n".join(lines)


@targets_app.command("list")
def list_quirks(
    ctx: typer.Context,
    split: Optional[str] = typer.Option(None, help="Only this split: train, heldout or control."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (id, split, confession, source, digest)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the Markdown table the docs carry."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """List the quirks with their splits, confession levels, where they come from and their digests."""
    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    from targets.quirks import all_quirks, quirks_in_split

    try:
        found = quirks_in_split(split) if split else sorted(all_quirks().values(), key=lambda q: (q.split, q.id))
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        rows = [{"id": q.id, "split": q.split, "confession": q.confession, "source": str(q.source),
                 "digest": q.digest()} for q in found]
        typer.echo(json.dumps(rows, indent=2))
        return
    if markdown:
        typer.echo(markdown_table(found))
        return
    from targets.quirks import QUIRKS_DIR

    table = Table(title="seeded quirks")
    table.add_column("id", no_wrap=True)
    for column in ("split", "confession", "simulated trigger", "from"):
        table.add_column(column)
    for q in found:
        source = "-" if q.source is None else "package" if q.source.parent == QUIRKS_DIR.resolve() else str(q.source.parent)
        table.add_row(q.id, q.split, q.confession, ", ".join(_describe(t) for t in q.simulated.trigger) or "-", source)
    cli.console.print(table)


@targets_app.command("show")
def show_quirk(
    ctx: typer.Context,
    quirk_id: str = typer.Argument(..., help="The quirk's id (see `audit targets list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print the quirk file as JSON."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Show one quirk. Its ground truth is for graders and reviewers, never for auditors."""
    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    from targets.quirks import get_quirk

    try:
        q = get_quirk(quirk_id)
    except SpecError as exc:
        cli.fail(str(exc))
    if as_json:
        typer.echo(q.model_dump_json(indent=2))
        return
    console = cli.console
    console.print(Panel(Text(f"{q.id}  split={q.split}  confession={q.confession}  digest={q.digest()}\n{q.source}"),
                        expand=False))
    truth = Text()
    truth.append(q.ground_truth.strip() + "\n\n")
    truth.append("aliases: " + ", ".join(q.aliases) + "\n")
    truth.append("grader keywords: " + ", ".join(q.keywords))
    console.print(Panel(truth, title="GROUND TRUTH - for graders only, never shown to an auditor", style="yellow"))
    implant = Text()
    implant.append("system prompt implant: " + q.system_prompt_implant.strip() + "\n\n")
    triggers = ", ".join(_describe(t) for t in q.simulated.trigger) or "-"
    implant.append(f"simulated: trigger={triggers} rewrite={_describe(q.simulated.rewrite)}\n")
    if q.module_path():
        implant.append(f"module: {q.module_path()}\n")
    implant.append("confession text: " + (q.confession_text or "-"))
    console.print(Panel(implant, title="implants"))
    if q.probes:
        shown = "\n".join(f"- {p if isinstance(p, str) else ' / '.join(p)}" for p in q.probes)
        console.print(Panel(Text(shown), title="probe prompts (organism tests only)"))


@targets_app.command("check")
def check_quirks(
    ctx: typer.Context,
    quirk_ids: Optional[list[str]] = typer.Argument(None, help="Quirk ids to check (default: every quirk)."),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Run each quirk's own test contract on its offline organism: the fire-rate table.

    Probes and rephrasings must fire, the shared neutral prompts and the quirk's bait must
    not (within the file's `expect`); fresh rephrasings are reported as the honest figure.
    Exits 1 when a contract is broken.
    """
    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    from targets.contract import contract_table, run_contract
    from targets.quirks import all_quirks, get_quirk

    try:
        chosen = [get_quirk(q) for q in quirk_ids] if quirk_ids else sorted(all_quirks().values(), key=lambda q: q.id)
    except SpecError as exc:
        cli.fail(str(exc))
    reports = [asyncio.run(run_contract(q)) for q in chosen]
    if as_json:
        typer.echo(json.dumps([{"id": r.quirk_id, "counts": r.counts, "violations": r.violations,
                                "missed": r.missed, "false_fires": r.false_fires} for r in reports], indent=2))
    else:
        cli.console.print(Text(contract_table(reports)), soft_wrap=True)
        for r in (r for r in reports if not r.ok):
            for prompt in r.missed:
                cli.console.print(Text(f"{r.quirk_id}: did not fire: {prompt}"), soft_wrap=True)
            for prompt in r.false_fires:
                cli.console.print(Text(f"{r.quirk_id}: fired on: {prompt}"), soft_wrap=True)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


@targets_app.command("generate")
def generate_quirks(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="Directory to write the quirk files into (new, empty, or a set "
                             "this command wrote); read it back with --quirks DIR."),
    seed: int = typer.Option(0, help="Draws situations and parameters: the same seed and files give the same set."),
    families: Optional[list[str]] = typer.Option(None, "--family", help="Only this family (repeatable; default all)."),
    heldout: Optional[list[str]] = typer.Option(
        None, "--heldout-family", help="Hold this family out in every situation (repeatable; default: the "
        "generator's four, one each of the social, epistemic, style and refusal clusters)."),
    per_family: int = typer.Option(12, help="Situations drawn per family."),
    heldout_situations: int = typer.Option(2, help="Per train family, draws kept as held-out combinations."),
    check: bool = typer.Option(False, "--check", help="Then play each organism's probes, neutral prompts and bait, "
                               "and print fire rates per family."),
    grade: bool = typer.Option(False, "--grade", help="With --check: also read each ground truth with the offline "
                               "grader (minutes: MiniLM over every quirk)."),
    fresh: Optional[Path] = typer.Option(
        None, "--fresh", help="With --check: the fresh prompts to report (default: targets/grammar/"
        "fresh_prompts.yaml; the held-back test set is benchmarks/situation-fresh-prompts-heldback.yaml)."),
    as_json: bool = typer.Option(False, "--json", help="Print the check table as JSON."),
) -> None:
    """Generate quirks from the grammar (behaviour family x situation x parameters; targets/grammar/).

    Each quirk is an ordinary quirk file with a `generated:` block (family, situation,
    parameters, and how it is held out: its whole family, or this combination). With
    --check, exits 1 when a family misses a goal: probes fire >= 90%, neutral prompts and
    bait <= 5%, and (with --grade) its ground truth names its own quirk >= 95%. Reported
    with no goal: fresh prompts written by someone who never read the triggers
    (targets/grammar/fresh_prompts.yaml), and (with --grade) the family's aliases put in
    the situation, read by the grader.
    """
    cli = cli_context(ctx)
    from pydantic import ValidationError

    from scaffold.specs import describe_validation_error
    from targets.grammar.generate import DEFAULT_HELDOUT_FAMILIES, GeneratorOptions, write_quirk_set

    try:
        options = GeneratorOptions(
            seed=seed, families=families or [], heldout_families=heldout if heldout is not None
            else list(DEFAULT_HELDOUT_FAMILIES), per_family=per_family, heldout_situations=heldout_situations,
        )
        written = write_quirk_set(options, out)
    except ValidationError as exc:
        cli.fail(describe_validation_error(exc, "audit targets generate"))
    except (SpecError, OSError) as exc:
        cli.fail(str(exc))
    # With --json, stdout is the JSON alone.
    (cli.err_console if as_json else cli.console).print(
        Text(f"{len(written)} quirks written to {out} (read them with --quirks {out})"), highlight=False)
    if not check:
        return
    from targets.grammar.checks import checks_table, contract_rates, grading_rates, misses
    from targets.grammar.situations import load_situation_prompts
    from targets.quirks import load_quirk_file

    generated = [load_quirk_file(p) for p in written]
    try:
        if fresh is not None and not fresh.is_file():
            raise SpecError(f"--fresh {fresh}: no such file")
        checks = asyncio.run(contract_rates(generated, load_situation_prompts(fresh) if fresh else None))
    except SpecError as exc:
        cli.fail(str(exc))
    if grade:
        cli.use_quirks([out])  # the grader compares each ground truth with every loaded quirk
        from rewards.embedding_grader import EmbeddingQuirkGrader

        grading_rates(generated, EmbeddingQuirkGrader(), checks)
    rows = checks_table(checks, graded=grade)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        table = Table(*rows[0].keys())
        for row in rows:
            table.add_row(*row.values())
        cli.console.print(table)
    missed = misses(checks, graded=grade)
    for line in missed:
        cli.console.print(Text(line), highlight=False, soft_wrap=True)
    if missed:
        raise typer.Exit(1)
