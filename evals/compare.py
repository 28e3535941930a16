"""`audit eval compare`: evals side by side, with per-quirk differences and their significance.

Every eval after the first is compared with the first (the reference): the difference
in grounded detection rate per quirk and overall, in named detection overall (and named in the
auditor's own words, quotes emptied, where the judge says), and in the false-positive rate, each with the
two-sided p-value of Fisher's exact test. With a handful of audits per quirk, most
per-quirk differences are not significant; the table says so rather than hiding it.
The last row is each eval's strategy entropy (the tool patterns of its quirk audits) and
its difference in bits, untested: whether training collapsed the auditor's strategies.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from evals.metrics import fisher_exact
from evals.results import SCHEMA_VERSION, EvalResults, Rate
from scaffold.specs import SpecError


class Difference(BaseModel):
    """One metric of one eval against the reference."""

    rate: Rate
    delta: float | None  # this rate minus the reference's
    p_value: float | None


class ComparisonRow(BaseModel):
    metric: str  # "detection" (grounded), "detection/train", "named", "named/train", "false positives" or a quirk id
    reference: Rate
    others: list[Difference]


class Strategy(BaseModel):
    """One eval's strategy entropy (`Aggregates.strategy_entropy_bits`): not a rate, so no test."""

    bits: float | None  # None for results written before rows recorded their tool pattern
    patterns: int


class Comparison(BaseModel):
    labels: list[str]  # one per eval, the reference first
    rows: list[ComparisonRow]
    strategies: list[Strategy] = []  # one per eval, the reference first


def load_results(directory: Path) -> EvalResults:
    """The results.json of an eval directory; SpecError when missing or not ours."""
    path = directory / "results.json" if directory.is_dir() else directory
    if not path.is_file():
        raise SpecError(f"{directory}: no results.json (is the eval finished? resume it with --resume)")
    text = path.read_text(encoding="utf-8")
    try:
        version = json.loads(text).get("schema_version")
    except (ValueError, AttributeError):
        raise SpecError(f"{path}: not an auditrl results.json (not a JSON object)") from None
    if version != SCHEMA_VERSION:
        raise SpecError(
            f"{path}: results schema {version}, this auditrl reads schema {SCHEMA_VERSION} "
            "(schema 2 made detection grounded and added named detection); re-run the eval with this version"
        )
    try:
        return EvalResults.model_validate_json(text)
    except ValidationError as exc:
        raise SpecError(f"{path}: not an auditrl results.json ({exc.errors()[0]['msg']})") from None


def _difference(rate: Rate, reference: Rate) -> Difference:
    if rate.n == 0 or reference.n == 0:
        return Difference(rate=rate, delta=None, p_value=None)
    delta = (rate.rate or 0.0) - (reference.rate or 0.0)
    return Difference(rate=rate, delta=delta, p_value=fisher_exact(rate.k, rate.n, reference.k, reference.n))


def compare(evals: list[EvalResults], labels: list[str]) -> Comparison:
    """The comparison table of `evals` (at least two), the first being the reference."""
    if len(evals) < 2:
        raise SpecError("compare needs at least two eval directories")
    ref = evals[0].aggregates
    empty = Rate.of(0, 0)

    def row(metric: str, pick) -> ComparisonRow:  # type: ignore[no-untyped-def]
        reference = pick(ref) or empty
        return ComparisonRow(
            metric=metric,
            reference=reference,
            others=[_difference(pick(e.aggregates) or empty, reference) for e in evals[1:]],
        )

    rows = [row("detection", lambda a: a.detection)]
    splits = sorted({s for e in evals for s in e.aggregates.detection_by_split})
    rows += [row(f"detection/{s}", lambda a, s=s: a.detection_by_split.get(s)) for s in splits]
    rows.append(row("named", lambda a: a.named_detection))
    rows += [row(f"named/{s}", lambda a, s=s: a.named_by_split.get(s)) for s in splits]
    if any(e.aggregates.named_own_words for e in evals):
        rows.append(row("named (own words)", lambda a: a.named_own_words))
    rows.append(row("false positives", lambda a: a.false_positives))
    rows.append(row("claims anything", lambda a: a.claims_on_quirks))
    quirks = sorted({q.quirk for e in evals for q in e.aggregates.by_quirk})
    for quirk in quirks:
        rows.append(row(quirk, lambda a, quirk=quirk: next((q.detection for q in a.by_quirk if q.quirk == quirk), None)))
    strategies = [Strategy(bits=e.aggregates.strategy_entropy_bits, patterns=e.aggregates.strategy_patterns) for e in evals]
    return Comparison(labels=labels, rows=rows, strategies=strategies)


def rate_cell(rate: Rate) -> str:
    """`62% (5/8)`, or n/a for no audits."""
    return "n/a" if rate.n == 0 else f"{100 * (rate.rate or 0):.0f}% ({rate.k}/{rate.n})"


def difference_cells(d: Difference) -> list[str]:
    """The rate, its difference from the reference and the p-value, as table cells."""
    delta = "n/a" if d.delta is None else f"{100 * d.delta:+.0f} pts"
    return [rate_cell(d.rate), delta, "n/a" if d.p_value is None else f"{d.p_value:.3f}"]


def _strategy_cell(s: Strategy) -> str:
    return "n/a" if s.bits is None else f"{s.bits:.2f} ({s.patterns} patterns)"


def strategy_cells(comparison: Comparison) -> list[str]:
    """The strategy-entropy row: bits and distinct patterns, then (value, Δ bits, no p) per eval."""
    ref, *others = comparison.strategies
    cells = ["strategy entropy (bits)", _strategy_cell(ref)]
    for s in others:
        delta = "n/a" if s.bits is None or ref.bits is None else f"{s.bits - ref.bits:+.2f}"
        cells += [_strategy_cell(s), delta, "–"]
    return cells


def table_rows(comparison: Comparison) -> list[list[str]]:
    """Every row of the comparison as cells: metric, reference, then (rate, Δ, p) per eval;
    the strategy entropy last, when the comparison carries it."""
    rows = [
        [r.metric, rate_cell(r.reference), *[c for d in r.others for c in difference_cells(d)]]
        for r in comparison.rows
    ]
    return rows + ([strategy_cells(comparison)] if comparison.strategies else [])


def markdown(comparison: Comparison) -> str:
    """The comparison as a Markdown table."""
    head = ["metric", comparison.labels[0]]
    for label in comparison.labels[1:]:
        head += [label, "Δ", "p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(comparison)]
    return "\n".join(lines) + "\n"
