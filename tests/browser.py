"""Headless Chromium for tests and screenshots: Playwright driving Debian's `chromium`.

Playwright's own browser download is never used (machines reach package registries
only); `scripts/install-chromium.sh` installs Debian's package, and `launch_chromium`
hands its binary to Playwright as `executable_path`.

    from tests.browser import launch_chromium, running_server

    with sync_playwright() as p:
        browser = launch_chromium(p)          # skips the test, saying why, if impossible
        page = browser.new_page()
        page.goto("file:///tmp/report.html"); page.screenshot(path="report.png")

`chromium_browser` is a per-module pytest fixture doing the same; `running_server`
serves an ASGI app with uvicorn on a free loopback port in a thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SCRIPT = ROOT / "scripts" / "install-chromium.sh"
BINARY_ENV = "AUDITRL_CHROMIUM"  # an explicit chromium binary, if not the Debian one
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium")


def chromium_binary() -> str | None:
    """The Chromium binary to drive: $AUDITRL_CHROMIUM, else Debian's, else None."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return next((c for c in CANDIDATES if os.access(c, os.X_OK)), None)


def _try_install() -> str | None:
    """Run the install script where that needs no password; returns why not, or None."""
    if not INSTALL_SCRIPT.exists():
        return f"{INSTALL_SCRIPT} is missing"
    if os.geteuid() != 0 and not (shutil.which("sudo") and subprocess.run(
            ["sudo", "-n", "true"], capture_output=True).returncode == 0):
        return "not root and no passwordless sudo to run scripts/install-chromium.sh"
    done = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return f"scripts/install-chromium.sh failed: {(done.stderr or done.stdout).strip()[-300:]}"
    return None


def chromium_unavailable() -> str | None:
    """Why no browser test can run here (None when one can), installing Chromium if possible."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if chromium_binary() is None:
        why = _try_install()
        if why or chromium_binary() is None:
            return f"Debian's chromium is not installed ({why or 'the install left no binary'})"
    return None


def launch_chromium(playwright: Any, **options: Any) -> Any:
    """A headless Browser on Debian's chromium; skips the calling test with the reason when impossible."""
    why = chromium_unavailable()
    if why:
        pytest.skip(why)
    options.setdefault("headless", True)
    return playwright.chromium.launch(executable_path=chromium_binary(), **options)


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    """One headless Chromium per test module.

    Module, not session: Playwright's sync API keeps an event loop running in this
    thread while it is open, so `asyncio.run` (and async tests) cannot run until it
    closes. Build test data before it starts, or in another thread.
    """
    why = chromium_unavailable()
    if why:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve the ASGI `app` with uvicorn in a thread; yields its base URL, stops it after."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
