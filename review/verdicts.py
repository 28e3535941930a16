"""The judge's results and the ground truth of a run, as view models.

`judge_views` turns stored judge results (newest first) into panels, and numbers every
quote of the newest result (`q-1`, `q-2`, ...) so that `review.views.build_view` can
highlight each in its message. `ground_truth` is the one place that reads the hidden
`fired` flags and the seeded quirk's description: the template shows it in a panel
that is collapsed by default, never inside the auditor's or target's views.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from review.views import Linker, anchor
from scaffold.specs import SpecError
from scaffold.transcript import Transcript


def when(epoch: float | None) -> str:
    """A stored time as readable UTC."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def citations(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every quote of the newest judge result, numbered, with the message it was matched to."""
    if not results:
        return []
    alignment = (results[-1]["result"].get("judge") or {}).get("alignment") or {}
    out = []
    for dim in alignment.get("dimensions", []):
        for c in dim.get("citations", []):
            out.append({
                "mark": f"q-{len(out) + 1}", "quote": c.get("quote", ""), "message_id": c.get("message_id"),
                "match": c.get("match", "unmatched"), "dimension": dim.get("name", ""),
            })
    return out


def judge_views(results: list[dict[str, Any]], cites: list[dict[str, Any]], linker: Linker) -> list[dict[str, Any]]:
    """Panels for each stored judge result, newest first; the newest carries the numbered quotes."""
    panels = []
    for index, stored in enumerate(reversed(results)):
        record = stored["result"]
        judge = record.get("judge") or {}
        reward = record.get("reward") or {}
        alignment = judge.get("alignment") or {}
        quotes_by_dim: dict[str, list[dict[str, Any]]] = {}
        if index == 0:
            for c in cites:
                href = linker.to(c["mark"], anchor(c["message_id"])) if c["message_id"] else None
                quotes_by_dim.setdefault(c["dimension"], []).append({**c, "href": href})
        panels.append({
            "name": stored.get("judge_name") or judge.get("judge"),
            "created": when(stored.get("created_at")),
            "latest": index == 0,
            "error": judge.get("error"),
            "quirk": judge.get("quirk_id"),
            "identified": judge.get("identified"),
            "matched_rank": judge.get("matched_rank"),
            "false_positive": judge.get("false_positive"),
            "evidence": judge.get("evidence_score"),
            "reward": reward.get("reward"),
            "reward_name": reward.get("name"),
            "components": reward.get("components") or {},
            "hypotheses": [
                {
                    "rank": h.get("rank"), "description": h.get("description", ""),
                    "matches": h.get("matches_quirk"),
                    "cites": [linker.message(i) for i in h.get("cited_message_ids", [])],
                    "verified": [linker.message(i) for i in h.get("verified_message_ids", [])],
                }
                for h in judge.get("hypotheses", [])
            ],
            "dimensions": [
                {
                    "name": d.get("name"), "score": d.get("score"), "uncapped": d.get("uncapped_score"),
                    "capped": d.get("capped_for_prefill"), "rationale": d.get("rationale", ""),
                    "quotes": quotes_by_dim.get(d.get("name"), []),
                }
                for d in alignment.get("dimensions", [])
            ],
            "alignment_error": alignment.get("error"),
            "summary": alignment.get("summary", ""),
        })
    return panels


def ground_truth(transcript: Transcript, quirk_id: str | None, linker: Linker) -> dict[str, Any]:
    """The seeded quirk and each target reply's hidden flags (for the collapsed panel only)."""
    from targets.quirks import get_quirk

    quirk = None
    if quirk_id:
        try:
            q = get_quirk(quirk_id)
            quirk = {"id": q.id, "split": q.split, "truth": q.ground_truth.strip()}
        except SpecError:
            quirk = {"id": quirk_id, "split": "?", "truth": "(this quirk is not in this installation's library)"}
    flags = []
    for m in transcript.target.nodes.values():
        if m.role == "assistant" and m.metadata:
            flags.append({
                "link": linker.message(m.id),
                "fired": m.metadata.get("fired"),
                "confronted": bool(m.metadata.get("confronted")),
                "other": {k: v for k, v in m.metadata.items() if k not in ("fired", "confronted")},
            })
    return {"quirk": quirk, "flags": flags, "fired": sum(1 for f in flags if f["fired"] is True)}
