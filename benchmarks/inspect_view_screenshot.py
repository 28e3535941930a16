"""Screenshots of an `audit export --format inspect` log in Inspect's own viewer (`inspect view`), offline.

    .venv/bin/python benchmarks/inspect_view_screenshot.py LOG.eval [OUT_PREFIX]

Starts `inspect view start` on the log's directory (a local server; the viewer's assets
ship with inspect_ai), opens it in headless Debian Chromium, and writes
OUT_PREFIX-list.png (the samples with their scores) and OUT_PREFIX-sample.png (the
first audit: its messages, tool calls and results).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import chromium_unavailable, launch_chromium  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    sys.exit(f"inspect view did not listen on port {port} within {timeout_s:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="An Inspect log that `audit export --format inspect` wrote.")
    parser.add_argument("out", nargs="?", default="inspect-view", help="Prefix of the two PNG files.")
    args = parser.parse_args()
    if not args.log.is_file():
        sys.exit(f"{args.log}: no such log")
    why = chromium_unavailable()
    if why:
        sys.exit(f"cannot take the screenshots: {why}")
    from playwright.sync_api import sync_playwright

    port = _free_port()
    inspect = Path(sys.executable).with_name("inspect")
    server = subprocess.Popen(
        [str(inspect), "view", "start", "--log-dir", str(args.log.resolve().parent), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port)
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/#/logs/{args.log.name}")
            page.wait_for_selector("text=SAMPLES", timeout=30_000)
            page.wait_for_timeout(1500)
            page.screenshot(path=f"{args.out}-list.png")
            page.locator(".ag-row, [role=row]").nth(1).click()  # the first audit (row 0 is the header)
            page.wait_for_timeout(2500)
            page.screenshot(path=f"{args.out}-sample.png")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"wrote {args.out}-list.png and {args.out}-sample.png")


if __name__ == "__main__":
    main()
