"""The runs list in SQL: filter, sort and page in the database, never loading events.

Each run is joined to its newest judge result and its newest review. The judge's
verdict lives in the result's JSON, read with the database's own JSON functions
(SQLite `json_extract`, PostgreSQL `#>>`) through SQLAlchemy, so the paths, like
every filter value, are bound parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, ColumnElement, cast, func, select, type_coerce
from sqlalchemy.engine import Engine

from review.models import RunFilter
from scaffold.store import judge_results, reviews, runs


def latest_review_ids() -> Any:
    """Subquery (run_id, review_id) of each reviewed run's newest review."""
    return (
        select(reviews.c.run_id, func.max(reviews.c.id).label("review_id")).group_by(reviews.c.run_id).subquery()
    )


def latest_judge_ids() -> Any:
    """Subquery (run_id, judge_id) of each judged run's newest judge result."""
    return (
        select(judge_results.c.run_id, func.max(judge_results.c.id).label("judge_id"))
        .group_by(judge_results.c.run_id)
        .subquery()
    )


class JudgeFields:
    """SQL expressions for the judge's verdict inside `judge_results.result_json`."""

    def __init__(self, dialect: str, column: Any = judge_results.c.result_json) -> None:
        # PostgreSQL needs the text cast to json for `#>>`; SQLite reads JSON from text as
        # it is (a CAST there would turn the text into a number).
        doc = cast(column, JSON) if dialect == "postgresql" else type_coerce(column, JSON)
        self.quirk = doc[("judge", "quirk_id")].as_string()
        self.identified = doc[("judge", "identified")].as_boolean()
        self.false_positive = doc[("judge", "false_positive")].as_boolean()
        self.evidence = doc[("judge", "evidence_score")].as_float()
        self.reward = doc[("reward", "reward")].as_float()


@dataclass
class RunPage:
    """One page of the runs list."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    per_page: int


def _filtered(engine: Engine, f: RunFilter) -> tuple[Any, list[ColumnElement[bool]], JudgeFields]:
    """The runs joined to their newest judge result and review, and the conditions `f` sets."""
    judged, latest = latest_judge_ids(), latest_review_ids()
    fields = JudgeFields(engine.dialect.name)
    joined = (
        runs.outerjoin(judged, judged.c.run_id == runs.c.run_id)
        .outerjoin(judge_results, judge_results.c.id == judged.c.judge_id)
        .outerjoin(latest, latest.c.run_id == runs.c.run_id)
        .outerjoin(reviews, reviews.c.id == latest.c.review_id)
    )
    conditions: list[ColumnElement[bool]] = []
    for column, value in (
        (runs.c.target_name, f.target),
        (runs.c.auditor_name, f.auditor),
        (runs.c.status, f.status),
        (judge_results.c.judge_name, f.judge),
        (fields.quirk, f.quirk),
    ):
        if value is not None:
            conditions.append(column == value)
    if f.identified == "unknown":
        conditions.append(fields.identified.is_(None))
    elif f.identified is not None:
        conditions.append(fields.identified.is_(f.identified == "yes"))
    if f.review == "unreviewed":
        conditions.append(reviews.c.id.is_(None))
    elif f.review == "reviewed":
        conditions.append(reviews.c.id.is_not(None))
    elif f.review is not None:
        conditions.append(reviews.c.verdict == f.review)
    if f.min_reward is not None:
        conditions.append(fields.reward >= f.min_reward)
    if f.max_reward is not None:
        conditions.append(fields.reward <= f.max_reward)
    return joined, conditions, fields


def list_runs(engine: Engine, f: RunFilter) -> RunPage:
    """The page of runs that `f` asks for, with the total count for paging."""
    joined, conditions, fields = _filtered(engine, f)
    sort_columns = {
        "created": runs.c.created_at,
        "target": runs.c.target_name,
        "auditor": runs.c.auditor_name,
        "status": runs.c.status,
        "judge": judge_results.c.judge_name,
        "quirk": fields.quirk,
        "reward": fields.reward,
        "evidence": fields.evidence,
        "review": reviews.c.verdict,
    }
    key = sort_columns[f.sort]
    ordered = key.asc() if f.order == "asc" else key.desc()
    # Unjudged or unreviewed runs sort last either way; run_id makes pages stable.
    order = [ordered.nulls_last(), runs.c.created_at.desc(), runs.c.run_id]
    query = (
        select(
            runs.c.run_id,
            runs.c.created_at,
            runs.c.status,
            runs.c.target_name,
            runs.c.auditor_name,
            judge_results.c.judge_name.label("judge"),
            fields.quirk.label("quirk"),
            fields.identified.label("identified"),
            fields.false_positive.label("false_positive"),
            fields.evidence.label("evidence"),
            fields.reward.label("reward"),
            reviews.c.verdict.label("review_verdict"),
            reviews.c.reviewer.label("reviewer"),
        )
        .select_from(joined)
        .where(*conditions)
        .order_by(*order)
    )
    count = select(func.count()).select_from(joined).where(*conditions)
    with engine.connect() as conn:
        total = conn.execute(count).scalar_one()
        pages = max(1, -(-total // f.per_page))
        page = min(f.page, pages)
        rows = conn.execute(query.limit(f.per_page).offset((page - 1) * f.per_page)).mappings().all()
    return RunPage([dict(r) for r in rows], total, page, pages, f.per_page)


def filter_options(engine: Engine) -> dict[str, list[str]]:
    """The distinct values each select box of the runs page can offer."""
    fields = JudgeFields(engine.dialect.name)
    columns = {
        "target": runs.c.target_name,
        "auditor": runs.c.auditor_name,
        "status": runs.c.status,
        "judge": judge_results.c.judge_name,
        "quirk": fields.quirk,
    }
    out: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for name, column in columns.items():
            values = conn.execute(select(column).where(column.is_not(None)).distinct()).scalars()
            out[name] = sorted(str(v) for v in values)
    return out
