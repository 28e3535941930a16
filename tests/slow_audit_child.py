"""Child process for the kill-and-resume tests: the real `audit` CLI, with two knobs.

argv[1]: seconds of extra latency per target reply (stretches the audit so the parent
can SIGKILL it mid-way). AUDITRL_TEST_EXIT_AFTER_EVENTS=N: the process dies with
os._exit (as abruptly as SIGKILL: no cleanup, no flush) right after the store has
committed its N-th event, so a test can kill at exact points.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from scaffold.store import Store
from targets.responders import FastResponder

_generate = FastResponder.generate
_write_events = Store.write_events
_written = [0]


async def _slow_generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    await asyncio.sleep(float(sys.argv[1]))
    return await _generate(self, *args, **kwargs)


def _write_then_maybe_die(self, run_id, events):  # type: ignore[no-untyped-def]
    _write_events(self, run_id, events)
    _written[0] += len(events)
    if _written[0] >= int(os.environ["AUDITRL_TEST_EXIT_AFTER_EVENTS"]):
        os._exit(137)


if float(sys.argv[1]) > 0:
    FastResponder.generate = _slow_generate  # type: ignore[method-assign]
if os.environ.get("AUDITRL_TEST_EXIT_AFTER_EVENTS"):
    Store.write_events = _write_then_maybe_die  # type: ignore[method-assign]

if __name__ == "__main__":
    # An ignored SIGINT is inherited across exec: a parent that ignores it (a pytest worker, some
    # library's worker) would leave this child deaf to the test's Ctrl-C, which then finished the
    # audit and exited 0 (the full-suite failures of stops 36 and 37). A user's shell starts a
    # foreground `audit` with the default handler, which this restores.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from audit.cli import app

    app(sys.argv[2:])
