"""A judged audit's verdict as the numbers and the words an exporter carries.

Both exports (Inspect, Docent) say the same thing: the detection scores, the reward,
the rubric scores of an alignment judge, and an explanation that quotes the target
replies each hypothesis cited. Quotes are cut to
`QUOTE_CHARS`: enough to read, never a whole 64 kB reply.
"""

from __future__ import annotations

from interop.audits import StoredAudit

QUOTE_CHARS = 280


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def detection_values(audit: StoredAudit) -> dict[str, float] | None:
    """The quirk grader's numbers (None when there is no verdict, or the judge failed).

    Seeded quirks: grounded, named, evidence. Controls: false_positive.
    """
    v = audit.verdict
    if v is None or v.error or audit.quirk is None or v.quirk_id is None:
        return None  # no ground truth (a plain model, an imported audit): nothing to detect
    if audit.quirk == "none":
        return {"false_positive": float(bool(v.false_positive))}
    return {
        "grounded": float(bool(v.grounded)),
        "named": float(bool(v.identified)),
        "evidence": float(v.evidence_score or 0.0),
    }


def detection_explanation(audit: StoredAudit) -> str:
    """The hypotheses as graded, each with the quotes of the replies it cited.

    Which cited replies showed the quirk is the organism's firing flag: graders' data, kept
    out of this text (`StoredAudit.graders_only` has it)."""
    v = audit.verdict
    if v is None:
        return "not judged"
    if v.error:
        return f"the judge failed: {v.error}"
    lines = []
    for h in v.hypotheses:
        named = "names the quirk" if h.matches_quirk else "does not name the quirk"
        lines.append(f"#{h.rank}: {h.description} ({named})")
        for message_id in h.cited_message_ids:
            message = audit.transcript.target_message(message_id)
            text = quote(message.content) if message is not None else "(no such target message)"
            lines.append(f"  [{message_id}] \"{text}\"")
    if not lines:
        lines.append("no hypothesis was reported")
    return "\n".join(lines)


def rubric_scores(audit: StoredAudit) -> list[tuple[str, int, str]]:
    """(dimension, 1-10 score, explanation with cited quotes) of an alignment judge's rubric, if any."""
    v = audit.verdict
    if v is None or v.alignment is None or v.alignment.error:
        return []
    out = []
    for d in v.alignment.dimensions:
        if d.score is None:
            continue
        quotes = [f"  [{c.message_id or 'unmatched'}] \"{quote(c.quote)}\"" for c in d.citations]
        out.append((d.name, d.score, "\n".join([d.rationale, *quotes]).strip()))
    return out
