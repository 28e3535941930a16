"""Review labels: the append-only `reviews` table and its export as JSONL or CSV.

A review is never updated or deleted; a reviewer who changes their mind adds a row,
and a run's review status is its newest row. The export carries, beside each label,
what `audit judge calibrate --labels` needs to turn it into a calibration case: the
run's seeded quirk, its final report and the target messages that report cites
(text and hidden flags, as in `rewards/calibration_data/cases.jsonl`).
"""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator

from sqlalchemy import insert, select

from review.models import ReviewInput
from review.queries import latest_judge_ids, latest_review_ids
from scaffold.store import Store, judge_results, reviews, runs
from scaffold.transcript import Transcript

CSV_FIELDS = (
    "review_id", "run_id", "created_at", "reviewer", "verdict", "severity", "tags", "notes",
    "target", "auditor", "quirk", "judge", "judge_identified", "judge_false_positive", "reward", "latest",
)


def add_review(store: Store, run_id: str, review: ReviewInput) -> int:
    """Append `review` for `run_id` (which must exist); returns the new row's id."""
    store.get_run(run_id)  # raises StoreError for an unknown run
    with store.engine.begin() as conn:
        result = conn.execute(
            insert(reviews).values(
                run_id=run_id,
                reviewer=store.redact(review.reviewer),
                verdict=review.verdict,
                severity=review.severity,
                tags_json=store.redact(json.dumps(review.tags)),
                notes=store.redact(review.notes),
                created_at=time.time(),
            )
        )
        return int(result.inserted_primary_key[0])


def _row(r: Any) -> dict[str, Any]:
    row = dict(r)
    row["tags"] = json.loads(row.pop("tags_json") or "[]")
    return row


def reviews_for(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Every review of `run_id`, newest first."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(reviews).where(reviews.c.run_id == run_id).order_by(reviews.c.id.desc())
        ).mappings()
        return [_row(r) for r in rows]


def reviewed_runs(store: Store, history: bool = False) -> list[dict[str, Any]]:
    """Reviews (only each run's newest unless `history`) with their run and newest judge result."""
    latest = latest_review_ids()
    judged = latest_judge_ids()
    query = (
        select(
            reviews,
            runs.c.target_name,
            runs.c.auditor_name,
            judge_results.c.judge_name.label("judge_name"),
            judge_results.c.result_json,
            (latest.c.review_id == reviews.c.id).label("latest"),
        )
        .join(latest, latest.c.run_id == reviews.c.run_id)
        .join(runs, runs.c.run_id == reviews.c.run_id)
        .outerjoin(judged, judged.c.run_id == reviews.c.run_id)
        .outerjoin(judge_results, judge_results.c.id == judged.c.judge_id)
        .order_by(reviews.c.id)
    )
    if not history:
        query = query.where(latest.c.review_id == reviews.c.id)
    with store.engine.connect() as conn:
        out = []
        for r in conn.execute(query).mappings():
            row = _row(r)
            row["judged"] = json.loads(row.pop("result_json")) if r["result_json"] else None
            row["latest"] = bool(row["latest"])
            out.append(row)
        return out


def cited_case_messages(transcript: Transcript) -> list[dict[str, Any]]:
    """The target messages the report (or, without one, the findings) cites, as calibration cases keep them."""
    hypotheses = transcript.report.hypotheses if transcript.report else transcript.findings
    ids = dict.fromkeys(i for h in hypotheses for i in h.cited_message_ids)
    out = []
    for message_id in ids:
        m = transcript.target_message(message_id)
        if m is None:
            continue
        out.append({
            "id": m.id, "role": m.role, "content": m.content, "prefill": m.prefill,
            "fired": m.metadata.get("fired"), "confronted": bool(m.metadata.get("confronted", False)),
        })
    return out


def export_rows(store: Store, history: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per review: the label, the run, the judge's verdict and the case material."""
    for row in reviewed_runs(store, history):
        judged = row["judged"] or {}
        verdict = judged.get("judge") or {}
        transcript = Transcript.from_events(row["run_id"], store.read_events(row["run_id"]))
        report = transcript.report.model_dump() if transcript.report else None
        if report is None and transcript.findings:
            report = {"hypotheses": [f.model_dump() for f in transcript.findings], "summary": ""}
        yield {
            "review_id": row["id"],
            "run_id": row["run_id"],
            "created_at": datetime.fromtimestamp(row["created_at"], timezone.utc).isoformat(timespec="seconds"),
            "reviewer": row["reviewer"],
            "verdict": row["verdict"],
            "severity": row["severity"],
            "tags": row["tags"],
            "notes": row["notes"],
            "latest": row["latest"],
            "target": row["target_name"],
            "auditor": row["auditor_name"],
            "quirk": verdict.get("quirk_id"),
            "judge": {
                "name": row["judge_name"],
                "identified": verdict.get("identified"),
                "false_positive": verdict.get("false_positive"),
                "evidence_score": verdict.get("evidence_score"),
                "reward": (judged.get("reward") or {}).get("reward"),
            },
            "report": report,
            "messages": cited_case_messages(transcript),
        }


def to_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    """Rows as JSON Lines."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # Spreadsheets run cells that start like formulas; text from people and models is no formula.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(rows: Iterable[dict[str, Any]]) -> str:
    """Rows as CSV with one flat column per field (tags joined by ';'; no case material)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_FIELDS)
    for r in rows:
        judge = r["judge"]
        flat = {
            **r, "tags": ";".join(r["tags"]), "judge": judge["name"], "judge_identified": judge["identified"],
            "judge_false_positive": judge["false_positive"], "reward": judge["reward"],
        }
        writer.writerow([_cell(flat[f]) for f in CSV_FIELDS])
    return buffer.getvalue()
