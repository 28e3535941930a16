"""A property test over the CLI's arguments: every subcommand, careless values.

Exit codes are only 0, 1 or 2; no exception escapes the CLI (no traceback); and an exit
of 2 (bad input) leaves no file behind. In-process (typer's runner), one fresh directory
per example, values drawn from a pool of the usual mistakes. The pool holds nothing that
would start real work (no valid target, suite, config or store), so an example is fast.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from audit.cli import app

FLAGS: dict[tuple[str, ...], list[str]] = {
    ("run",): ["--target", "--auditor", "--judge", "--seed", "--max-turns", "--max-tokens", "--store", "--out",
               "--resume"],
    ("show",): ["--store", "--view", "--html"],
    ("judge",): ["--judge", "--store", "--labels", "--set", "--half"],
    ("eval",): ["--suite", "--auditor", "--judge", "--repeats", "--max-turns", "--concurrency", "--out", "--store",
                "--prices"],
    ("eval", "compare"): ["--out"],
    ("targets", "list"): ["--split"],
    ("targets", "show"): [],
    ("seeds", "list"): ["--tag"],
    ("seeds", "show"): [],
    ("train",): ["--config", "--out", "--stage", "--resume", "--steps", "--init-adapter", "--set"],
    ("review",): ["--store", "--host", "--port", "--token"],
    ("export",): ["--format", "--out", "--store", "--quirks"],
    ("import", "petri"): ["--store", "--judge", "--quirk", "--out"],
}
POSITIONAL = {("show",), ("judge",), ("eval", "compare"), ("targets", "show"), ("seeds", "show"), ("export",),
              ("import", "petri")}
VALUES = ["", "x", "-1", "0", "100001", "1e9", "nope.yaml", "./missing.md", "/dev/zero", "/", "dir",
          "sqlite:///missing.db", "postgresql://nobody@127.0.0.1:1/none", "hf:nowhere", "llm:", "anthropic:",
          "[bold]x[/]", "\x1b[2J", "héllo", "a" * 300, "flattery", "none", "train", "9999999999999999999999",
          "inspect", "docent", "out.eval"]

pool = st.sampled_from(VALUES)


@st.composite
def invocations(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(FLAGS)))
    args = list(command)
    if command in POSITIONAL:
        args.append(draw(pool))
    for flag in draw(st.lists(st.sampled_from(FLAGS[command]), max_size=4, unique=True)) if FLAGS[command] else []:
        args += [flag, draw(pool)]
    return args


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# Deterministic in CI (derandomized, 120 examples); AUDITRL_CLI_EXAMPLES=N searches N random ones.
EXAMPLES = os.environ.get("AUDITRL_CLI_EXAMPLES")


@settings(max_examples=int(EXAMPLES or 120), derandomize=not EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(invocations())
def test_the_cli_exits_0_1_or_2_without_a_traceback_and_bad_input_leaves_no_file(args: list[str]) -> None:
    runner = CliRunner()
    handlers = logging.getLogger().handlers[:]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "dir").mkdir()
        before = _files(root)
        os.chdir(root)
        try:
            result = runner.invoke(app, args, env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""})
        finally:
            os.chdir(cwd)
            logging.getLogger().handlers = handlers
        assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output[-500:])
        escaped = result.exception if not isinstance(result.exception, SystemExit) else None
        assert escaped is None, (args, repr(escaped))
        if result.exit_code == 2:
            assert _files(root) == before, (args, _files(root) - before)
