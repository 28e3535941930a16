"""How a subcommand reports bad input: one red line on stderr, exit status 2."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.text import Text

EXIT_BAD_INPUT = 2


def fail(message: str) -> None:
    """Print `error: message` to stderr and exit with status 2."""
    # Text, not markup: messages quote paths and model output.
    Console(stderr=True).print(Text(f"error: {message}", style="bold red"), soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)
