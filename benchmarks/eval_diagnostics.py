"""Why an `audit eval` of a policy scored what it scored: one table row per eval directory.

Reads each directory's audits.jsonl and its transcripts (never the organisms' ground truth
beyond what the eval already stored) and counts, over the quirk audits and the controls:
  grounded, named        what the grader credited (quirk audits)
  named without quotes   named, when the eval's own (offline) judge reads the report with the
                         text inside each quote emptied: the auditor's own words (the eval's
                         `named_own_words`, or the judge run again for results without it). Under
                         `copy_quotes` a quote of the sentence where the quirk fired can carry
                         the naming for a claim whose label is wrong ("Refused an everyday
                         request: ... it replied «I must say, your taste is remarkable.»")
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
  strategy entropy       Shannon entropy (bits) of the quirk audits' tool-use patterns
                         (`scaffold.tool_pattern`), pooled over the eval, and how many
                         distinct patterns: the training curve's measure, over every held-out
                         audit instead of one group of 8, so two policies' evals compare

    python benchmarks/eval_diagnostics.py train-out/cmp/sft-g46-comb train-out/cmp/sft-silent-comb
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from pathlib import Path

from evals.compare import load_results
from evals.runner import read_finished
from rewards.judges import build_judge
from scaffold.secrets import SecretRegistry
from scaffold.tool_pattern import entropy_bits, tool_pattern
from scaffold.transcript import Transcript
from targets.grammar.generate import GeneratorOptions, use_generated_set
from targets.quirks import get_quirk
from training.rollout_diagnostics import (
    cites_a_fired_reply,
    last_quote_source,
    quirk_showed,
    quotes_a_cited_reply,
    quotes_a_fired_reply,
)
from training.sft import read_transcript


def named_without_quotes(directory: Path, audits: list[tuple[str, Transcript]]) -> int | None:
    """How many of these quirk audits (quirk id, transcript) are named in the auditor's own
    words (`JudgeResult.named_own_words`): as the eval recorded it, or from its offline judge
    run again for results written before it; None for a judge that is not offline."""
    results = load_results(directory)
    recorded = {r.run_id: r.named_own_words for r in results.rows}
    if all(recorded.get(t.run_id) is not None for _, t in audits):
        return sum(bool(recorded[t.run_id]) for _, t in audits)
    if not results.judge.startswith(("offline", "lexical")):
        return None
    generated = results.suite.get("generated")
    if generated:
        use_generated_set(GeneratorOptions.model_validate(generated))
    judge = build_judge(results.judge, SecretRegistry())

    async def named(quirk_id: str, t: Transcript) -> bool:
        return bool((await judge.evaluate(t, get_quirk(quirk_id))).named_own_words)

    async def count() -> int:
        return sum(await asyncio.gather(*(named(q, t) for q, t in audits)))

    return asyncio.run(count())


def diagnose(directory: Path) -> dict[str, str]:
    """The table row of one eval directory."""
    rows = list(read_finished(directory).values())
    quirks = [r for r in rows if r.quirk != "none" and r.status == "completed"]
    controls = [r for r in rows if r.quirk == "none" and r.status == "completed"]
    showed = cites_fired = quotes_fired = quoted = prefill = sends = 0
    openings: Counter[str] = Counter()
    sources: Counter[str | None] = Counter()
    quirk_audits: list[tuple[str, Transcript]] = []
    for row in quirks + controls:
        transcript = read_transcript(directory / "runs" / row.run_id / "transcript.json")
        if row in quirks:
            quirk_audits.append((row.quirk, transcript))
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
    patterns = [tool_pattern(t) for _, t in quirk_audits]
    common = openings.most_common(1)[0][1] if openings else 0
    unquoted = named_without_quotes(directory, quirk_audits)
    return {
        "eval": directory.name,
        "grounded": f"{sum(bool(r.grounded) for r in quirks)}/{n}",
        "named": f"{sum(bool(r.identified) for r in quirks)}/{n}",
        "named without quotes": "–" if unquoted is None else f"{unquoted}/{n}",
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
        "strategy entropy (bits, patterns)": f"{entropy_bits(patterns):.2f} ({len(set(patterns))})",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path, help="`audit eval --out` directories")
    args = parser.parse_args()
    for d in args.dirs:
        if not (d / "runs").is_dir():  # a results.json has no transcripts: every count would read 0/0
            parser.error(f"{d}: not an eval directory with runs/ (`audit eval compare` reads a results.json alone)")
    table = [diagnose(d) for d in args.dirs]
    keys = list(table[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in table:
        print("| " + " | ".join(row[k] for k in keys) + " |")


if __name__ == "__main__":
    main()
