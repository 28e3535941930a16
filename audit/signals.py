"""SIGTERM stops a command the way Ctrl-C does.

`kill`, `timeout`, a batch scheduler's preemption and `docker stop` send SIGTERM, and a
job started in the background from a script cannot get SIGINT at all: a non-interactive
shell starts background jobs with SIGINT ignored. Python's default for SIGTERM is to die
on the spot, without the resume command and the cleanup that Ctrl-C gets. Raising
KeyboardInterrupt instead takes the one path every command already has for an interrupt
(stop 45 lost a GRPO step and its resume hint to a plain `kill`).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def stop_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread (a no-op in any other thread,
    where Python cannot install handlers)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
