"""`audit traces`: which behaviours of an auditor the reward paid for (traces/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from audit.context import cli_context
from audit.render import terminal_safe
from scaffold.specs import SpecError

SHOWN = 25  # rows of the terminal table: labelled behaviours first, then the largest effects


def traces_command(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A training run (OUT, with rollouts.jsonl) or an eval directory "
                                "(with results.json)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where to write traces.json (default: PATH/traces)."),
    store: Optional[Path] = typer.Option(None, "--store", help="The eval's SQLite file, when it is not "
                                         "PATH/audit.db (reports and tool use come from it)."),
    as_json: bool = typer.Option(False, "--json", help="Print traces.json instead of the table."),
    seed: int = typer.Option(0, help="The bootstrap's seed (the same seed, the same intervals)."),
    themes: bool = typer.Option(True, "--themes/--no-themes", help="Cluster the auditor's probes into themes "
                                "with the packaged MiniLM (seconds per thousand probes)."),
) -> None:
    """Writes traces.json and a self-contained report.html (plots of frequency over steps, effect
    sizes, effects by family). Behaviours of each rollout (tool use, hacks, report shape, shared templates), their frequency
    over steps, their effect on advantage (raw, and with the other effects held fixed) with
    bootstrap intervals, and labels: rewarded, penalised, vestigial, benchmark-shaped, collapsed."""
    cli = cli_context(ctx)
    from traces.analyse import analyse

    try:
        result = analyse(path, store, seed=seed, themes=themes)
    except SpecError as exc:
        cli.fail(str(exc))
    target = out or path / "traces"
    target.mkdir(parents=True, exist_ok=True)
    (target / "traces.json").write_text(json.dumps(result, indent=2) + "\n")
    from traces.report import render

    (target / "report.html").write_text(render(result))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    if result.get("warning"):
        cli.err_console.print(Text(f"warning: {result['warning']}"))
    rows = sorted(result["behaviours"], key=lambda b: (not b["labels"],))[:SHOWN]
    table = Table("behaviour", "n", "reward with / without", "effect (controlled) [95%]", "slope/step", "labels",
                  title=f"{result['rollouts']} rollouts, {result['steps']} step(s), mean reward {result['mean_reward']}")
    for b in rows:
        c = b["controlled_effect"] or b["raw_effect"]
        # Behaviour names carry model-written text (report templates, probe themes): never Rich markup.
        table.add_row(Text(terminal_safe(b["behaviour"][:60])), str(b["count"]),
                      f"{b['mean_reward_with']:.3f} / {b['mean_reward_without']:.3f}",
                      f"{c['value']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]", f"{b['slope_per_step']:+.4f}",
                      Text(", ".join(lab["label"] for lab in b["labels"]) or "-"))
    cli.console.print(table)
    cli.console.print(f"traces: {target / 'traces.json'}; report: {target / 'report.html'}", markup=False,
                      highlight=False)
