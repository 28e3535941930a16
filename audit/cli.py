"""The `audit` command. It parses flags, wires the layers and prints; no logic lives here.

Bad input (missing file, invalid YAML, unknown provider or field, missing API key)
prints one line and exits 2. An audit that fails at a model exits 1 with its run id,
so it can be resumed. Tracebacks go to a log file, never to the terminal.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.text import Text

from audit.render import print_summary, print_transcript
from scaffold.run import ResumeError
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.store import DEFAULT_STORE_URL, Store, StoreError

app = typer.Typer(
    help="auditrl: audit models for hidden behaviour, benchmark auditors, train auditors with GRPO.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
from audit.seeds_cmd import seeds_app  # noqa: E402
from audit.targets_cmd import targets_app  # noqa: E402

app.add_typer(targets_app, name="targets")
app.add_typer(seeds_app, name="seeds")
from audit.eval_cmd import eval_app  # noqa: E402

app.add_typer(eval_app, name="eval")
# The composition root: one registry of the keys this process reads, and terminals
# that redact them (a server can echo a key into a reply or an error).
SECRETS = SecretRegistry()
console = Console(file=SECRETS.stream(sys.stdout))
err_console = Console(file=SECRETS.stream(sys.stderr))
EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    # Text, not markup: messages quote model output and server errors ("[/INST]").
    err_console.print(Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _setup_logging(out: Path, secrets: SecretRegistry) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"--out {out}: cannot create the directory ({exc.strerror})")
    log_path = out / "audit.log"
    handler = logging.FileHandler(log_path, encoding="utf-8")
    handler.addFilter(secrets.log_filter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.INFO)
    return log_path


def _guarded(action: Callable[[], Any], log_path: Path | None = None) -> Any:
    """Run `action`, turning known errors into one-line messages and exit codes."""
    try:
        return action()
    except typer.Exit:
        raise
    except (SpecError, StoreError, ResumeError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted; resume with `audit run --resume RUN_ID`", EXIT_FAILED)
    except Exception as exc:  # noqa: BLE001 - people get one line; the log keeps the traceback
        logging.getLogger("audit").exception("unexpected error")
        where = f" (details in {log_path})" if log_path else ""
        _fail(SECRETS.redact(f"unexpected {type(exc).__name__}: {exc}{where}"), EXIT_FAILED)


def _seed_text(seed: Optional[str]) -> Optional[str]:
    """`--seed` is a file when such a file exists, else a library seed's id, else the instruction itself."""
    if seed is None:
        return None
    path = Path(seed)
    if len(seed) < 1024 and "\n" not in seed and path.is_file():
        try:
            return path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"--seed {seed}: cannot read it ({exc})")
    from auditor.seeds import ID_PATTERN, get_seed

    if "-" in seed and ID_PATTERN.match(seed):  # one kebab-case word: an id, never an instruction
        return get_seed(seed).text  # an unknown id is a SpecError naming close matches
    return seed


@app.command()
def run(
    target: Optional[Path] = typer.Option(None, "--target", "-t", help="The target's model.yaml (see targets/examples/)."),
    auditor: str = typer.Option(
        "heuristic",
        help="Auditor: heuristic | hf:smollm2-135m | hf:PATH[+lora:DIR][+constrained][+max_tokens:N]"
        "[+temperature:T] | vllm:URL#MODEL | anthropic:MODEL | openai:MODEL | openai_compatible:URL#MODEL | "
        "a model-spec YAML file (for base_url, api_key_env, concurrency, extra options)."
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
        30, min=1, help="Auditor turns before the audit ends; the last one must file submit_report."
    ),
    max_tokens: Optional[int] = typer.Option(None, min=1, help="Token budget (auditor + target) before it ends."),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL for runs and transcripts (SQLite or PostgreSQL)."),
    out: Path = typer.Option(Path("audit-runs"), help="Directory for <run_id>/transcript.json and report.json."),
    resume: Optional[str] = typer.Option(
        None, help="Continue a killed or failed run by its run id (in the store and output directory it started with)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print report.json to stdout instead of the summary."),
) -> None:
    """Audit one target: a judged transcript and a report."""
    from evals.audit_job import AuditJob, resume_judged_audit, run_judged_audit

    if target is None and resume is None:
        _fail("give --target model.yaml (or --resume RUN_ID)")
    secrets = SECRETS
    log_path = _setup_logging(out, secrets)
    db = _guarded(lambda: Store(store, redact=secrets.redact), log_path)
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
            **({"seed": _seed_text(seed)} if seed else {}),
        )
        return asyncio.run(run_judged_audit(job, db, secrets, out, on_events=progress))

    with console.status("starting audit...", spinner="dots") as status:
        judged = _guarded(go, log_path)
    if as_json:
        sys.stdout.write((judged.out_dir / "report.json").read_text(encoding="utf-8") + "\n")
    else:
        print_summary(console, judged)
    if judged.result.status != "completed":
        raise typer.Exit(EXIT_FAILED)


@app.command()
def show(
    run_id: str = typer.Argument(..., help="The run to show."),
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL the run was stored in."),
    view: str = typer.Option("combined", help="combined | auditor | target (the target's current branch)."),
    html: Optional[Path] = typer.Option(
        None, "--html", help="Write the transcript page as one self-contained HTML file (inline CSS, no scripts) "
        "for sharing, instead of printing it; --view target draws every rollback branch."
    ),
) -> None:
    """Print a stored transcript readably (or write it as HTML)."""
    from scaffold.transcript import Transcript

    if view not in ("combined", "auditor", "target"):
        _fail(f"--view {view!r}: choose combined, auditor or target")
    db = _guarded(lambda: Store(store, redact=SECRETS.redact, must_exist=True))
    if html is not None:
        from audit.review_cmd import write_html

        return _guarded(lambda: write_html(db, run_id, view, html))
    row = _guarded(lambda: db.get_run(run_id))
    transcript = _guarded(lambda: Transcript.from_events(run_id, db.read_events(run_id)))
    results = _guarded(lambda: db.judge_results_for(run_id))
    print_transcript(console, row, transcript, results[-1]["result"] if results else None, view)


from audit.judge_cmd import judge_command  # noqa: E402

app.command("judge")(judge_command)
from audit.review_cmd import review_command  # noqa: E402

app.command("review")(review_command)
from audit.train_cmd import train_command  # noqa: E402

app.command("train")(train_command)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
