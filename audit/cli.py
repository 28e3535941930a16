"""The `audit` command. It parses flags, wires the layers and prints; no logic lives here.

Bad input (missing file, invalid YAML, unknown provider or field, missing API key)
prints one line and exits 2. An audit that fails at a model exits 1 with its run id,
so it can be resumed. Tracebacks go to a log file, never to the terminal.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any, Optional

import typer

from audit.context import EXIT_FAILED, MANUAL_HELP, QUIRKS_HELP, CliContext, ManualChoice, cli_context
from audit.eval_cmd import eval_app
from audit.interop_cmd import export_command, import_app
from audit.judge_cmd import judge_command
from audit.render import print_summary, print_transcript
from audit.review_cmd import review_command
from audit.seeds_cmd import seeds_app
from audit.signals import stop_on_sigterm
from audit.targets_cmd import targets_app
from audit.traces_cmd import traces_command
from audit.train_cmd import train_command
from scaffold.state import MAX_TURNS
from scaffold.store import DEFAULT_STORE_URL

app = typer.Typer(
    help="auditrl: audit models for hidden behaviour, benchmark auditors, train auditors with GRPO.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _composition_root(ctx: typer.Context) -> None:
    """auditrl: audit models for hidden behaviour, benchmark auditors, train auditors with GRPO."""
    # One context per invocation: the keys this process reads, terminals that redact them, one fail().
    ctx.obj = CliContext()
    stop_on_sigterm()


app.add_typer(targets_app, name="targets")
# DESIGN.md names `audit quirks generate`; the quirk commands have lived under `targets` since the first wave.
app.add_typer(targets_app, name="quirks", help="The same commands as `audit targets` (list, show, check, generate).")
app.add_typer(seeds_app, name="seeds")
app.add_typer(eval_app, name="eval")
app.command("judge")(judge_command)
app.command("review")(review_command)
app.command("train")(train_command)
app.command("traces")(traces_command)
app.command("export")(export_command)
app.add_typer(import_app, name="import")


SEED_FILE_SUFFIXES = (".txt", ".md")


def _seed_text(cli: CliContext, seed: Optional[str]) -> Optional[str]:
    """`--seed` is a file when such a file exists, else a library seed's id, else the instruction itself.

    Text that names a path (a .txt/.md name, or a ./ ../ / ~ prefix, with no spaces) but
    no readable file is an error, not an instruction: a typo must not become the
    auditor's instruction.
    """
    if seed is None:
        return None
    one_line = len(seed) < 1024 and "\n" not in seed
    try:
        path = Path(seed).expanduser() if one_line else None
        is_dir, is_file = (path.is_dir(), path.is_file()) if path is not None else (False, False)
    except (OSError, RuntimeError, ValueError):  # too long for a path, "~user" unknown: it is text
        path, is_dir, is_file = None, False, False
    if is_dir:
        cli.fail(f"--seed {seed}: is a directory; give a .txt or .md file, a seed id or the instruction text")
    if path is not None and is_file:
        try:
            return path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            cli.fail(f"--seed {seed}: cannot read it ({exc})")
    names_a_path = one_line and " " not in seed.strip() and (
        seed.lower().endswith(SEED_FILE_SUFFIXES) or seed.startswith(("./", "../", "/", "~"))
    )
    if names_a_path:
        cli.fail(f"--seed {seed}: no such file")
    from auditor.seeds import ID_PATTERN, get_seed

    if "-" in seed and ID_PATTERN.match(seed):  # one kebab-case word: an id, never an instruction
        return get_seed(seed).text  # an unknown id is a SpecError naming close matches
    return seed


def _check_inputs(target: Path, judge: str, cli: CliContext) -> None:
    """The target file and the judge spec, checked without building a model."""
    from rewards.judges import check_judge_spec
    from targets.spec import load_target_spec

    load_target_spec(target)
    check_judge_spec(judge)


def _stored(db: Any, run_id: str) -> bool:
    try:
        db.get_run(run_id)
        return True
    except Exception:  # noqa: BLE001 - any failure to find it means nothing was stored
        return False


@app.command()
def run(
    ctx: typer.Context,
    target: Optional[Path] = typer.Option(None, "--target", "-t", help="The target's model.yaml (see targets/examples/)."),
    auditor: str = typer.Option(
        "heuristic",
        help="Auditor: heuristic | heuristic:sampled (probe order drawn from the seed) | heuristic:situations "
        "(everyday requests; quotes what a reply did not need) | hf:smollm2-135m | "
        "hf:PATH[+lora:DIR][+constrained][+max_tokens:N][+temperature:T] | vllm:URL#MODEL | anthropic:MODEL | "
        "openai:MODEL | openai_compatible:URL#MODEL | "
        "a model-spec YAML file (for base_url, api_key_env, concurrency, extra options; provider by_turn "
        "routes the audit's turns to different models)."
    ),
    judge: str = typer.Option(
        "auto",
        help="Judge: auto (llm:anthropic:claude-sonnet-4-5 when ANTHROPIC_API_KEY is set, else offline) | "
        "offline (MiniLM grader, no key) | lexical | llm:MODEL_SPEC.",
    ),
    seed: Optional[str] = typer.Option(
        None,
        help="Seed instruction for the auditor: a seed id from `audit seeds list`, a .txt/.md file, or the "
        "instruction text. Default: find the hidden quirk (seed quirk-hunt).",
    ),
    max_turns: int = typer.Option(
        30, min=1, max=MAX_TURNS, help="Auditor turns before the audit ends; the last one must file submit_report."
    ),
    max_tokens: Optional[int] = typer.Option(None, min=1, help="Token budget (auditor + target) before it ends."),
    manual: ManualChoice = typer.Option(ManualChoice.auto, help=MANUAL_HELP),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL for runs and transcripts (SQLite or PostgreSQL)."),
    out: Path = typer.Option(Path("audit-runs"), help="Directory for <run_id>/transcript.json and report.json."),
    resume: Optional[str] = typer.Option(
        None, help="Continue a killed or failed run by its run id (in the store and output directory it started with)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print report.json to stdout instead of the summary."),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Audit one target: a judged transcript and a report."""
    from evals.audit_job import AuditJob, resume_judged_audit, run_judged_audit

    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    if target is None and resume is None:
        cli.fail("give --target model.yaml (or --resume RUN_ID)")
    seed_text = cli.guarded(lambda: _seed_text(cli, seed))
    if target is not None and resume is None:  # bad input is found before any file is made
        cli.guarded(lambda: _check_inputs(target, judge, cli))
    # The run id is chosen here, so that an interrupted audit can name the run to resume.
    run_id = resume or uuid.uuid4().hex[:12]
    secrets = cli.secrets
    log_path = cli.setup_logging(out)
    db = cli.open_store(store, must_exist=resume is not None, log_path=log_path,
                        about=f"--resume {resume}" if resume else None)
    turns = {"n": 0}

    def progress(events: list[Any]) -> None:
        for e in events:
            if e.kind == "auditor_message" and e.message.role == "assistant":
                turns["n"] += 1
                if not as_json:
                    status.update(f"auditing... turn {turns['n']}")

    def go() -> Any:
        if resume:
            return asyncio.run(resume_judged_audit(resume, db, secrets, on_events=progress))
        job = AuditJob(
            target_path=str(target.resolve()) if target else "",
            auditor=auditor,
            judge=judge,
            max_turns=max_turns,
            max_tokens=max_tokens,
            manual=manual.value,
            **({"seed": seed_text} if seed_text else {}),
        )
        return asyncio.run(run_judged_audit(job, db, secrets, out, on_events=progress, run_id=run_id))

    resume_hint = f"audit run --resume {run_id} --store {store} --out {out}" + "".join(f" --quirks {q}" for q in quirks or [])
    with cli.console.status("starting audit...", spinner="dots") as status:
        # Once the run exists in the store, its store and files are kept, whatever fails.
        judged = cli.guarded(go, log_path, resume_hint, work_stored=lambda: _stored(db, run_id))
    if as_json:
        sys.stdout.write((judged.out_dir / "report.json").read_text(encoding="utf-8") + "\n")
    else:
        print_summary(cli.console, judged, resume_hint)
    if judged.result.status != "completed":
        raise typer.Exit(EXIT_FAILED)


@app.command()
def show(
    ctx: typer.Context,
    run_id: str = typer.Argument(..., help="The run to show."),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL the run was stored in."),
    view: str = typer.Option("combined", help="combined | auditor | target (the target's current branch)."),
    html: Optional[Path] = typer.Option(
        None, "--html", help="Write the transcript page as one self-contained HTML file (inline CSS, no scripts) "
        "for sharing, instead of printing it; --view target draws every rollback branch."
    ),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
) -> None:
    """Print a stored transcript readably (or write it as HTML)."""
    from scaffold.transcript import Transcript

    cli = cli_context(ctx)
    cli.use_quirks(quirks)
    if view not in ("combined", "auditor", "target"):
        cli.fail(f"--view {view!r}: choose combined, auditor or target")
    db = cli.open_store(store, must_exist=True)
    if html is not None:
        from audit.review_cmd import write_html

        return write_html(cli, db, run_id, view, html)
    row = cli.guarded(lambda: db.get_run(run_id))
    transcript = cli.guarded(lambda: Transcript.from_events(run_id, db.read_events(run_id)))
    results = cli.guarded(lambda: db.judge_results_for(run_id))
    print_transcript(cli.console, row, transcript, results[-1]["result"] if results else None, view)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
