"""`audit train`: GRPO (or the SFT warm start) of a small open auditor in the production scaffold."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from audit.context import EXIT_FAILED, QUIRKS_HELP, CliContext, cli_context
from scaffold.specs import SpecError

# Overrides `--resume` accepts besides eval.*: `steps` (--steps) and `save_every`, neither of which changes what is trained.
RESUMABLE_CHANGES = ("steps", "save_every")

if TYPE_CHECKING:  # training.metrics imports torch; `audit --help` must not
    from training.metrics import ProgressSink


@contextlib.contextmanager
def rich_progress(cli: CliContext, title: str) -> Iterator[ProgressSink]:
    """A progress sink that drives a rich bar (steps done of total) and prints every step's line above it."""
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=cli.console, transient=False)
    task = bar.add_task(escape(title), total=None)

    def report(step: int, total: int, line: str) -> None:
        bar.update(task, completed=step, total=total or None)
        # soft_wrap: a step's line stays one line in a log file (and for grep), however wide.
        bar.console.print(line, markup=False, highlight=False, soft_wrap=True)

    with bar:
        yield report


def train_command(
    ctx: typer.Context,
    config: Optional[Path] = typer.Option(
        None, "--config", "-c", help="Training config YAML (see training/configs/; every field is documented in training/config.py)."
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: train-out/<config name>)."),
    stage: Optional[str] = typer.Option(
        None, "--stage", help="grpo (default) or sft: the warm start on stored transcripts (sft.data) before GRPO."
    ),
    resume: Optional[Path] = typer.Option(
        None, "--resume", help="Continue the GRPO or SFT run in this directory from its last checkpoint, with its saved config "
        "(--steps, --set save_every=N and --set eval.* may change it)."
    ),
    steps: Optional[int] = typer.Option(None, "--steps", min=1, help="Override the config's number of optimizer steps."),
    init_adapter: Optional[Path] = typer.Option(
        None, "--init-adapter", help="Start from this LoRA adapter (e.g. an SFT run's OUT/final)."
    ),
    assignments: list[str] = typer.Option(
        [], "--set", help="Override one config field, FIELD=VALUE (dotted for sections), e.g. --set tasks.max_turns=2; repeatable."
    ),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved config and exit."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Train an auditor with GRPO on judged audits (or --stage sft: LoRA SFT on stored audits).

    Writes OUT/metrics.jsonl (one line per step: reward and its components, detection,
    valid tool calls, logprob parity, timings), OUT/rollouts.jsonl and OUT/rollouts.db
    (every training audit, readable with `audit review --store sqlite:///OUT/rollouts.db`), checkpoints every
    save_every steps (OUT/checkpoint-N), held-out evals (OUT/evals/) and the adapter
    (OUT/final), usable as `audit eval --auditor hf:BASE+lora:OUT/final`.
    """
    from training.config import load_config, parse_assignment

    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    fail = cli.fail
    if resume is not None and config is not None:
        fail("give --config for a new run or --resume DIR to continue one, not both")
    if resume is None and config is None:
        fail("give --config FILE (see training/configs/) or --resume DIR")
    overrides: dict[str, object] = {}
    try:
        overrides.update(parse_assignment(a) for a in assignments)
        if steps is not None:
            overrides["steps"] = steps
        if stage is not None:
            overrides["stage"] = stage
        if init_adapter is not None:
            overrides["policy.init_adapter"] = str(init_adapter)
        if resume is not None:
            saved = resume / "config.yaml"
            if not saved.exists():
                fail(f"{resume}: no training run to resume (no config.yaml)")
            # What a resume may change: how long, how often it checkpoints, and its evals; nothing that trains.
            changed = [k for k in overrides if k not in RESUMABLE_CHANGES and not k.startswith("eval.")]
            if changed:
                fail(
                    f"--resume continues the run as configured; only {', '.join(RESUMABLE_CHANGES)} and eval.* may change "
                    f"(not {', '.join(changed)})"
                )
            cfg = load_config(saved, overrides)
            out_dir = resume
        else:
            assert config is not None
            cfg = load_config(config, overrides)
            out_dir = out or Path("train-out") / cfg.name
    except SpecError as exc:
        fail(str(exc))
    if show_config:
        import yaml

        typer.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
        return
    # Warnings and errors on the redacting console's stream, never a key in a log line.
    handler = logging.StreamHandler(cli.secrets.stream(sys.stderr))
    handler.addFilter(cli.secrets.log_filter())
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        with rich_progress(cli, f"{cfg.stage} · {cfg.name}") as report:
            if cfg.stage == "sft":
                from training.sft import run_sft

                final = run_sft(cfg, out_dir, resume=resume is not None, secrets=cli.secrets, progress=report)
            else:
                from training.grpo import run_grpo

                final = run_grpo(cfg, out_dir, resume=resume is not None, secrets=cli.secrets, progress=report)
    except SpecError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        again = "".join(f" --quirks {q}" for q in quirks or [])
        fail(f"interrupted; continue with: audit train --resume {out_dir}{again}", EXIT_FAILED)
    cli.console.print(f"adapter: {final}", markup=False, highlight=False)
    cli.console.print(f"metrics: {out_dir / 'metrics.jsonl'}", markup=False, highlight=False)
