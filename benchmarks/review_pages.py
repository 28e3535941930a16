"""Latency of the review app's runs page over 5,000 stored runs (target: under 300 ms).

    .venv/bin/python benchmarks/review_pages.py [--runs 5000] [--repeats 30]

Makes a temporary SQLite store: a few real audits (heuristic auditor against offline
organisms, lexical judge; one also rubric-judged), then copies of their runs and
judge results up to `--runs`, with varied targets, quirks, auditors, verdicts and
rewards, and reviews on one run in ten. Events are copied for the first 200 runs only:
the runs page never reads events (that is the point), and 5,000 full event logs would
only make the file large. The app is served in-process (httpx over ASGI, so the
numbers include routing, SQL, templating and middleware, not a socket).

Printed per page: median and p95 in ms, and the median as a ratio to a reference
measured in the same run: a bare `SELECT` of one page of runs, no joins, through the
same engine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from sqlalchemy import insert, select  # noqa: E402

from review.app import create_app  # noqa: E402
from review.sample import add_rubric_verdict, sample_run  # noqa: E402
from scaffold.store import Store, events, judge_results, reviews, runs  # noqa: E402

QUIRKS = ["flattery", "defer_to_users", "increasing_pep", "defend_objects", "self_promotion", "none"]
AUDITORS = ["heuristic", "hf:smollm2-135m", "anthropic:claude-sonnet-4-5", "openai:gpt-5-mini"]
PAGES = {
    "default": "/",
    "filtered": "/?quirk=flattery&review=unreviewed&identified=yes",
    "sorted": "/?sort=reward&order=asc",
    "page 50": "/?page=50",
    "filter+sort+page": "/?auditor=heuristic&sort=evidence&order=desc&page=10",
}


def populate(store: Store, total: int, tmp: Path) -> list[str]:
    """`total` runs with judge results (see the module docstring); returns their ids."""
    seeds = [asyncio.run(sample_run(store, tmp / "out", t)) for t in ("flattery.yaml", "control.yaml")]
    asyncio.run(add_rubric_verdict(store, seeds[0]))
    templates = []
    with store.engine.connect() as conn:
        for run_id in seeds:
            row = dict(conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().one())
            result = conn.execute(select(judge_results.c.result_json).where(judge_results.c.run_id == run_id)
                                  .order_by(judge_results.c.id.desc())).scalars().first()
            evs = [dict(e) for e in conn.execute(select(events).where(events.c.run_id == run_id)).mappings()]
            templates.append((row, json.loads(result), evs))
    rng = random.Random(0)
    run_rows, judge_rows, event_rows, review_rows = [], [], [], []
    now = time.time()
    ids = []
    for i in range(total - len(seeds)):
        row, result, evs = templates[i % len(templates)]
        run_id = f"bench{i:06d}"
        quirk = rng.choice(QUIRKS)
        run_rows.append({**row, "run_id": run_id, "created_at": now - i * 37.0, "updated_at": now - i * 37.0 + 5,
                         "target_name": f"{quirk}-organism", "auditor_name": rng.choice(AUDITORS)})
        judge = dict(result["judge"], quirk_id=quirk, identified=None if quirk == "none" else rng.random() < 0.6,
                     evidence_score=round(rng.random(), 3))
        reward = dict(result.get("reward") or {}, reward=round(rng.uniform(-0.5, 1.0), 3))
        judge_rows.append({"run_id": run_id, "judge_name": rng.choice(["lexical", "offline"]), "created_at": now,
                           "result_json": json.dumps({"judge": judge, "reward": reward})})
        if i < 200:
            event_rows += [{**e, "run_id": run_id} for e in evs]
        if i % 10 == 0:
            review_rows.append({"run_id": run_id, "reviewer": "bench", "verdict": rng.choice(
                ["confirmed", "false_positive", "inconclusive"]), "severity": "low", "tags_json": "[]",
                "notes": "", "created_at": now})
        ids.append(run_id)
    with store.engine.begin() as conn:
        for table, rows in ((runs, run_rows), (judge_results, judge_rows), (events, event_rows), (reviews, review_rows)):
            for start in range(0, len(rows), 2000):
                conn.execute(insert(table), rows[start:start + 2000])
    return seeds + ids


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


async def measure(store: Store, repeats: int, run_id: str) -> None:
    app = create_app(store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        def reference() -> None:
            with store.engine.connect() as conn:
                conn.execute(select(runs).order_by(runs.c.created_at.desc()).limit(50)).all()

        ref = []
        for _ in range(repeats + 3):
            start = time.perf_counter()
            reference()
            ref.append(time.perf_counter() - start)
        ref_median, _ = stats(ref[3:])
        print(f"reference (bare SELECT of one page): median {ref_median * 1000:.2f} ms")
        print(f"{'page':<20}{'median ms':>10}{'p95 ms':>10}{'x reference':>13}")
        worst = 0.0
        for name, path in {**PAGES, "transcript": f"/runs/{run_id}"}.items():
            samples = []
            for _ in range(repeats + 3):
                start = time.perf_counter()
                r = await client.get(path)
                samples.append(time.perf_counter() - start)
                assert r.status_code == 200, (path, r.status_code)
            median, p95 = stats(samples[3:])
            if name != "transcript":
                worst = max(worst, p95)
            print(f"{name:<20}{median * 1000:>10.1f}{p95 * 1000:>10.1f}{median / ref_median:>13.0f}")
        verdict = "under" if worst < 0.3 else "OVER"
        print(f"runs page worst p95: {worst * 1000:.1f} ms ({verdict} the 300 ms target)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000, help="How many runs to store.")
    parser.add_argument("--repeats", type=int, default=30, help="Timed requests per page (after 3 warm-ups).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'audit.db'}")
        start = time.perf_counter()
        ids = populate(store, args.runs, Path(tmp))
        print(f"stored {len(ids)} runs with judge results in {time.perf_counter() - start:.1f} s")
        asyncio.run(measure(store, args.repeats, ids[0]))


if __name__ == "__main__":
    main()
