"""Screenshot of an `audit traces` report.html, in headless Debian Chromium (for notes and the README).

    .venv/bin/python benchmarks/traces_screenshot.py OUT/traces/report.html [traces.png] [--full-page]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import chromium_unavailable, launch_chromium  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="The report.html that `audit traces` wrote.")
    parser.add_argument("out", nargs="?", default="traces.png", help="Where to write the PNG.")
    parser.add_argument("--full-page", action="store_true", help="The whole page, not the first screen.")
    args = parser.parse_args()
    if not args.report.is_file():
        sys.exit(f"{args.report}: no such report")
    why = chromium_unavailable()
    if why:
        sys.exit(f"cannot take the screenshot: {why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto(args.report.resolve().as_uri())
        page.screenshot(path=args.out, full_page=args.full_page)
        browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
