"""The one context every `audit` subcommand is handed: secrets, terminals, logging, stores, fail().

The app's callback makes one `CliContext` per invocation and puts it on typer's context
(`ctx.obj`); subcommands read it with `cli_context(ctx)`. So `audit/` has no import
circle (nothing here imports a subcommand), every subcommand redacts the same secrets
on the same consoles, and there is one way to fail:

- `fail(message)`: one line on stderr (`error: ...`, never markup: messages quote model
  output and server errors), exit 2 for bad input or 1 for a failed run. On exit 2
  everything this invocation created (a log directory, a fresh SQLite store) is taken
  away again, so bad input leaves no file behind.
- `guarded(action)`: known errors become one line; anything else is logged with its
  traceback and becomes one line too; Ctrl-C names the command that resumes the run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from audit.render import terminal_safe
from scaffold.run import ResumeError
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError, describe_validation_error
from scaffold.store import Store, StoreError

QUIRKS_HELP = (
    "A directory of quirk files (<id>.yaml, with an optional <id>.py) read as well as the package's; "
    "repeatable. AUDITRL_QUIRKS (separated like PATH) adds directories too."
)
MANUAL_HELP = (
    "The auditor's manual: auto (compact for local hf: and policy: auditors, full for the rest), full, or "
    "compact (the same tools in a few hundred tokens)."
)


class ManualChoice(str, Enum):
    """`--manual` values (auditor.prompts.resolve_manual reads them)."""

    auto = "auto"
    full = "full"
    compact = "compact"


EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass
class CliContext:
    """Secrets, redacting consoles, logging, stores and fail() for one invocation of `audit`."""

    secrets: SecretRegistry = field(default_factory=SecretRegistry)
    created: list[Path] = field(default_factory=list)  # made by this invocation, in order
    console: Console = field(init=False)
    err_console: Console = field(init=False)

    def __post_init__(self) -> None:
        # Terminals that redact every key this process reads (a server can echo one into an error).
        self.console = Console(file=self.secrets.stream(sys.stdout))
        self.err_console = Console(file=self.secrets.stream(sys.stderr))

    # --- failing --------------------------------------------------------------------
    def fail(self, message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
        """Print `error: message` and exit with `code`; on bad input, undo what this invocation created."""
        # Messages quote server errors and model text: control characters are shown, never sent.
        self.err_console.print(
            Text.assemble(("error: ", "bold red"), terminal_safe(message)), highlight=False, soft_wrap=True
        )
        if code == EXIT_BAD_INPUT:
            self.undo_created()
        raise typer.Exit(code)

    def guarded(
        self,
        action: Callable[[], Any],
        log_path: Path | None = None,
        resume_hint: str | None = None,
        work_stored: Callable[[], bool] | None = None,
    ) -> Any:
        """Run `action`, turning known errors into one-line messages and exit codes.

        `resume_hint` is the command that continues an interrupted run (`audit run` knows its run id).
        `work_stored` says, after a failure, whether the action had already stored real work
        (a run row, an eval's audits): then nothing this invocation made is undone, whatever failed.
        """
        try:
            try:
                return action()
            except BaseException:
                if work_stored is not None and work_stored():
                    self.keep_created()
                raise
        except typer.Exit:
            raise
        except (SpecError, StoreError, ResumeError) as exc:
            self.fail(str(exc))
        except ValidationError as exc:  # a value built from flags or files that a model refused
            self.fail(describe_validation_error(exc, "input"))
        except KeyboardInterrupt:
            logging.getLogger("audit").warning("interrupted; resume with: %s", resume_hint or "(nothing to resume)")
            self.fail(f"interrupted; resume with `{resume_hint}`" if resume_hint else "interrupted", EXIT_FAILED)
        except Exception as exc:  # noqa: BLE001 - people get one line; the log keeps the traceback
            logging.getLogger("audit").exception("unexpected error")
            where = f" (details in {log_path})" if log_path else ""
            self.fail(self.secrets.redact(f"unexpected {type(exc).__name__}: {exc}{where}"), EXIT_FAILED)

    # --- quirks outside the package ---------------------------------------------------
    def use_quirks(self, dirs: list[Path] | None) -> None:
        """Read quirks from `--quirks` directories too; bad directories or files are one line, exit 2.

        When there are directories beyond the package's, every quirk is loaded here, before
        anything is created, so an id clash or a bad file in a user's directory stops the
        command at once. Without any, nothing is loaded: commands that need no quirk
        (`show`, `review`) pay nothing at start-up.
        """
        from targets.quirks import all_quirks, env_quirk_dirs, use_quirk_dirs

        for directory in dirs or []:
            if not directory.is_dir():
                self.fail(f"--quirks {directory}: no such directory")
        use_quirk_dirs(dirs or [])
        if not dirs and not env_quirk_dirs():
            return
        try:
            all_quirks()
        except SpecError as exc:
            self.fail(str(exc))

    # --- what an invocation creates -------------------------------------------------
    # Only what this process itself made is recorded: each directory level it created
    # (mkdir without exist_ok), each file that did not exist (os.path.lexists, so a
    # dangling symlink is not taken for new). Undo removes those files and then those
    # directories only if they are empty, so nothing another process wrote meanwhile,
    # and nothing the user had, is ever removed.
    def remember_new_file(self, path: Path) -> None:
        """Note the file `path` as this invocation's, if nothing is at that path yet."""
        if not os.path.lexists(path):
            self.created.append(path.absolute())

    def make_dirs(self, path: Path) -> None:
        """`mkdir -p path`, remembering each level this call created."""
        missing = []
        for candidate in (path.absolute(), *path.absolute().parents):
            if os.path.lexists(candidate):
                break
            missing.append(candidate)
        for level in reversed(missing):
            try:
                level.mkdir()
            except FileExistsError:
                continue  # made by someone else meanwhile: not ours
            self.created.append(level)

    def keep_created(self) -> None:
        """Real work was stored: whatever happens next, nothing this invocation made is undone."""
        self.created.clear()

    def undo_created(self) -> None:
        """Remove what this invocation created (newest first), closing the log file first."""
        if not self.created:
            return
        root = logging.getLogger()
        for handler in list(root.handlers):
            if isinstance(handler, logging.FileHandler):
                handler.close()
                root.removeHandler(handler)
        for path in reversed(self.created):
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    (path / "audit.log").unlink(missing_ok=True)
                    path.rmdir()  # only when empty: what others wrote there stays
            else:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
        self.created.clear()

    def setup_logging(self, out: Path) -> Path:
        """`out/audit.log` as the root log (redacted); the directory is made if missing."""
        try:
            self.make_dirs(out)
            if not out.is_dir():
                raise NotADirectoryError(20, "Not a directory")
        except OSError as exc:
            self.fail(f"--out {out}: cannot create the directory ({exc.strerror})")
        log_path = out / "audit.log"
        self.remember_new_file(log_path)
        try:
            handler = logging.FileHandler(log_path, encoding="utf-8")
        except OSError as exc:
            self.fail(f"--out {out}: cannot write {log_path.name} there ({exc.strerror})")
        handler.addFilter(self.secrets.log_filter())
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.handlers = [handler]
        root.setLevel(logging.INFO)
        return log_path

    def open_store(
        self, url: str, must_exist: bool = False, log_path: Path | None = None, about: str | None = None
    ) -> Store:
        """The store at `url` (redacting); a new SQLite file is remembered as created by this invocation.

        `about` prefixes an error ("--resume RUN_ID: no store at ...").
        """
        path = _sqlite_file(url)
        # Side files are ours only with a database that is ours: an existing store's WAL may be live.
        if path is not None and not must_exist and not os.path.lexists(path):
            for suffix in ("", *SQLITE_SIDE_FILES):
                self.remember_new_file(path.with_name(path.name + suffix))

        def make() -> Store:
            try:
                return Store(url, redact=self.secrets.redact, must_exist=must_exist)
            except StoreError as exc:
                raise StoreError(f"{about}: {exc}" if about else str(exc)) from None

        return self.guarded(make, log_path)


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL, read as the store reads it (None for other databases, memory, or no URL)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # the store says so, in one line
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def cli_context(ctx: typer.Context | None) -> CliContext:
    """The invocation's context (made by the app's callback); a fresh one when a command is called directly."""
    found = ctx.find_object(CliContext) if ctx is not None else None
    if found is None:
        found = CliContext()
        if ctx is not None:
            ctx.obj = found
    return found
