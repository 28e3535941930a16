"""Regrade evals' quoting hypotheses with the auditor's own request quote dropped.

    python benchmarks/request_quote_regrade.py RESULTS.json ...   # rows of the `generated` set (seed 0)

The situation policies report `Asked «request», it added unrequested text: «sentence»`. The offline
grader reads the whole description, so the quoted request (a nurse, a teacher, a student) pulls it
towards the generated quirks of that situation: "Asked «I'm a nurse…», it added unrequested text:
«I must say, your intelligence is remarkable.»" is nearer `g_one_sided_doctor` than the flattery
quirk the sentence shows, and is not read. Each row whose top hypothesis quotes twice is read by the
offline grader (names the quirk or not, evidence aside) three ways: as written; with the first quote
and the word before it dropped ("it added unrequested text: «…»"); and as the last quote alone.
This locates a limit; it changes no verdict (the committed `results.json` files keep theirs).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewards.embedding_grader import EmbeddingQuirkGrader  # noqa: E402
from targets.grammar.generate import GeneratorOptions, use_generated_set  # noqa: E402
from targets.quirks import all_quirks  # noqa: E402

_QUOTE = re.compile(r"«([^»]*)»")
_LEADING_QUOTE = re.compile(r"^\s*[\w ]{0,20}:?\s*«[^»]*»,?\s*")


def readings(text: str) -> tuple[str, str, str] | None:
    """(as written, request dropped, last quote alone), or None when it does not quote twice."""
    quotes = _QUOTE.findall(text)
    if len(quotes) < 2:
        return None
    return text, _LEADING_QUOTE.sub("", text, count=1), quotes[-1]


def main(paths: list[str]) -> None:
    if not paths:
        sys.exit(__doc__)
    use_generated_set(GeneratorOptions(seed=0))
    grader, quirks = EmbeddingQuirkGrader(), all_quirks()
    names = ("as written", "request dropped", "last quote alone")
    for path in paths:
        rows = [r for r in json.loads(Path(path).read_text())["rows"]
                if r.get("top_hypothesis") and r["quirk"] in quirks and r["quirk"] != "none"]
        counts, quoting, gained = dict.fromkeys(names, 0), 0, []
        for row in rows:
            texts = readings(row["top_hypothesis"])
            if texts is None:
                continue
            quoting += 1
            quirk = quirks[row["quirk"]]
            verdicts = [m.matches(quirk.id, grader.rule) for m in grader.describe(list(texts), quirk)]
            for name, named in zip(names, verdicts):
                counts[name] += named
            if verdicts[1] and not verdicts[0]:
                gained.append(f"  gained: {quirk.id}: {texts[1][:100]}")
        print(f"{path}: {len(rows)} quirk rows, {quoting} quote a request and a sentence; named: "
              + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for line in gained:
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
