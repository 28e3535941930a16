"""`audit review` (the review web app) and `audit show --html` (one run as a shareable HTML file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from audit.context import QUIRKS_HELP, CliContext, cli_context
from scaffold.store import DEFAULT_STORE_URL, Store

TOKEN_HELP = (
    "Access token every request must carry: open any page once with ?token=TOKEN (a cookie keeps the session), "
    "or send 'Authorization: Bearer TOKEN'. Required when --host is not local; at least 16 characters. "
    "Read from AUDITRL_REVIEW_TOKEN when not given; never logged."
)


def write_html(cli: CliContext, store: Store, run_id: str, view: str, path: Path) -> None:
    """Write run `run_id` as one self-contained HTML page and say where it went."""
    from review.standalone import standalone_html

    html = cli.guarded(lambda: standalone_html(store, run_id, view))  # type: ignore[arg-type]
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as exc:
        cli.fail(f"--html {path}: cannot write it ({exc.strerror})")
    cli.console.print(Text(f"wrote {path} ({len(html) // 1024} KiB, {view} view of run {run_id})"))


def review_command(
    ctx: typer.Context,
    store: str = typer.Option(DEFAULT_STORE_URL, help="Database URL to read runs from: the store `audit run` and "
                              "`audit eval` wrote (SQLite or PostgreSQL)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on. 127.0.0.1, localhost and ::1 are local; "
                             "any other address needs --token."),
    port: int = typer.Option(8765, min=1, max=65535, help="Port to listen on."),
    token: Optional[str] = typer.Option(None, envvar="AUDITRL_REVIEW_TOKEN", show_default=False, help=TOKEN_HELP),
    quirks: Optional[list[Path]] = typer.Option(None, "--quirks", help=QUIRKS_HELP),
    traces: Optional[Path] = typer.Option(None, "--traces", help="An `audit traces` traces.json of runs in this "
                                          "store: the Traces page links each behaviour to example transcripts."),
) -> None:
    """Serve the review web app: read transcripts, check the judge's quotes, label findings, export labels."""
    from review.security import BindingError, check_binding
    from review.server import serve

    cli = cli_context(ctx)
    cli.use_quirks(quirks)  # a user's own quirks' ground truth, for the reviewer's panel
    console = cli.console
    token = token.strip() if token else None
    try:
        check_binding(host, token)
    except BindingError as exc:
        cli.fail(str(exc))
    loaded = None
    if traces is not None:
        try:
            loaded = json.loads(traces.read_text())
            loaded["behaviours"]  # noqa: B018 - the one field the page cannot do without
        except (OSError, ValueError, KeyError, TypeError) as exc:
            cli.fail(f"--traces {traces}: not a traces.json written by `audit traces` ({type(exc).__name__}: {exc})")
    db = cli.open_store(store, must_exist=True)
    shown_host = f"[{host}]" if ":" in host else host
    where = db.engine.url.render_as_string(hide_password=True)

    def announce(bound: int) -> None:
        console.print(Text(f"auditrl review: {where} at http://{shown_host}:{bound}/  (Ctrl-C stops it)"))
        if token:
            console.print(Text(f"open http://{shown_host}:{bound}/?token=YOUR_TOKEN once; the browser keeps a session cookie"))

    try:
        serve(db, host, port, token, cli.secrets, announce, traces=loaded)
    except OSError as exc:
        cli.fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})")
