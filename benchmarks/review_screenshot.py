"""Screenshot of the review app's transcript page (README / notes), in headless Debian Chromium.

    .venv/bin/python benchmarks/review_screenshot.py [OUT.png] [--view combined|target|auditor]

Builds a temporary store with one real audit (heuristic auditor, offline flattery
organism, lexical judge, then the scripted rubric judge so quotes are highlighted),
serves the app on a free loopback port and saves a 1440x1000 PNG of the run's page.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from review.app import create_app  # noqa: E402
from review.sample import add_rubric_verdict, sample_run  # noqa: E402
from scaffold.store import Store  # noqa: E402
from tests.browser import chromium_unavailable, launch_chromium, running_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="review-transcript.png", help="Where to write the PNG.")
    parser.add_argument("--view", default="combined", choices=["combined", "target", "auditor"], help="Which view.")
    parser.add_argument("--full-page", action="store_true", help="The whole page, not the first screen.")
    args = parser.parse_args()
    why = chromium_unavailable()
    if why:
        sys.exit(f"cannot take the screenshot: {why}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'audit.db'}")
        run_id = asyncio.run(sample_run(store, Path(tmp) / "runs"))
        asyncio.run(add_rubric_verdict(store, run_id))
        with running_server(create_app(store)) as base, sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(f"{base}/runs/{run_id}?view={args.view}")
            page.screenshot(path=args.out, full_page=args.full_page)
            browser.close()
    print(f"wrote {args.out} (run {run_id}, {args.view} view)")


if __name__ == "__main__":
    main()
