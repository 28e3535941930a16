"""Everything the transcript template needs for one run, for the app and for `audit show --html`."""

from __future__ import annotations

from typing import Any

from review.labels import reviews_for
from review.verdicts import citations, ground_truth, judge_views
from review.views import VIEWS, Linker, View, build_view
from scaffold.store import Store
from scaffold.transcript import Transcript


def transcript_context(store: Store, run_id: str, view: View, *, standalone: bool = False) -> dict[str, Any]:
    """The run, its transcript view, judge panels, reviews and ground truth. Raises StoreError if unknown."""
    run = store.get_run(run_id)
    transcript = Transcript.from_events(run_id, store.read_events(run_id))
    results = store.judge_results_for(run_id)
    cites = citations(results)
    tv = build_view(transcript, view, cites, standalone=standalone)
    linker = Linker(run_id, tv.anchors, standalone)
    judges = judge_views(results, cites, linker)
    quirk = next((j["quirk"] for j in judges if j["quirk"]), None)
    reviews = reviews_for(store, run_id)
    return {
        "run": run,
        "tv": tv,
        "views": VIEWS,
        "judges": judges,
        "gt": ground_truth(transcript, quirk, linker),
        "reviews": reviews,
        "latest_review": reviews[0] if reviews else None,
        "turns": transcript.auditor_turns,
        "end": transcript.end.reason if transcript.end else None,
        "branch_count": len(transcript.target.branches()),
        "usage": {"auditor": transcript.auditor_usage.total, "target": transcript.target_usage.total},
    }
