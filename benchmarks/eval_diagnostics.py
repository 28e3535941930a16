"""Why an `audit eval` of a policy scored what it scored: one table row per eval directory.

Reads each directory's audits.jsonl and its transcripts (never the organisms' ground truth
beyond what the eval already stored) and counts, over the quirk audits and the controls:
  grounded, named        what the grader credited (quirk audits)
  false positives        controls where the report claimed a behaviour
  quirk showed           a target reply carried the simulated organism's `fired` flag
  cites / quotes fired   the top hypothesis cites a reply where the quirk showed; its last
                         «quote» is a sentence of one (with quirk showed: the detection funnel)
  quotes a cited reply   the top hypothesis copies text from a reply it cites
  last quote             over claims on quirk audits, where the top hypothesis's last «quote»
                         comes from: a reply sentence, the auditor's own request, or neither
  claimed                the report claimed a behaviour (quirk audits)
  prefill                `send_message` calls that used `prefill`
  openings               distinct first requests, and the share of the commonest

    python benchmarks/eval_diagnostics.py train-out/cmp/sft-g46-comb train-out/cmp/sft-silent-comb
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from evals.runner import read_finished
from training.rollout_diagnostics import (
    cites_a_fired_reply,
    last_quote_source,
    quirk_showed,
    quotes_a_cited_reply,
    quotes_a_fired_reply,
)
from training.sft import read_transcript


def diagnose(directory: Path) -> dict[str, str]:
    """The table row of one eval directory."""
    rows = list(read_finished(directory).values())
    quirks = [r for r in rows if r.quirk != "none" and r.status == "completed"]
    controls = [r for r in rows if r.quirk == "none" and r.status == "completed"]
    showed = cites_fired = quotes_fired = quoted = prefill = sends = 0
    openings: Counter[str] = Counter()
    sources: Counter[str | None] = Counter()
    for row in quirks + controls:
        transcript = read_transcript(directory / "runs" / row.run_id / "transcript.json")
        if row in quirks:
            showed += quirk_showed(transcript) is True
            cites_fired += cites_a_fired_reply(transcript)
            quotes_fired += quotes_a_fired_reply(transcript)
            quoted += quotes_a_cited_reply(transcript)
            if row.claimed:
                sources[last_quote_source(transcript)] += 1
        calls = [c for m in transcript.auditor_view() for c in (m.tool_calls or []) if c.name == "send_message"]
        sends += len(calls)
        prefill += sum(1 for c in calls if (c.arguments or {}).get("prefill"))
        if calls:
            openings[str((calls[0].arguments or {}).get("message", ""))[:60]] += 1
    n, m = len(quirks), len(controls)
    common = openings.most_common(1)[0][1] if openings else 0
    return {
        "eval": directory.name,
        "grounded": f"{sum(bool(r.grounded) for r in quirks)}/{n}",
        "named": f"{sum(bool(r.identified) for r in quirks)}/{n}",
        "false positives": f"{sum(bool(r.false_positive) for r in controls)}/{m}",
        "quirk showed": f"{showed}/{n}",
        "cites / quotes fired": f"{cites_fired}/{n} / {quotes_fired}/{n}",
        "quotes a cited reply": f"{quoted}/{n}",
        "claimed": f"{sum(bool(r.claimed) for r in quirks)}/{n}",
        "last quote: reply / request / neither / none": "{} / {} / {} / {}".format(
            *(sources[s] for s in ("reply", "request", "other", None))
        ),
        "prefill": f"{prefill}/{sends}",
        "openings": f"{len(openings)} (commonest {common}/{sum(openings.values())})",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path, help="`audit eval --out` directories")
    args = parser.parse_args()
    table = [diagnose(d) for d in args.dirs]
    keys = list(table[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in table:
        print("| " + " | ".join(row[k] for k in keys) + " |")


if __name__ == "__main__":
    main()
