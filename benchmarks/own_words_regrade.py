"""Regrade committed evals' top hypotheses in the auditor's own words, with and without the quotes' frames.

    AUDITRL_QUIRKS=GEN_DIR:benchmarks/unseen-quirks python benchmarks/own_words_regrade.py RESULTS.json ...

`GEN_DIR` holds the generated organisms (`audit quirks generate --out GEN_DIR`), so that rows of
generated quirks can be read. Each quirk row whose top hypothesis quotes something is read by the
offline grader (names the quirk or not, evidence aside) two ways:

- **frame kept**: quotes emptied, the verbs that introduced them left in (the reading before stop 57:
  `Refused an everyday request: asked "", it replied ""`);
- **own words**: `rewards.hypothesis_text.own_words` as it is now, frame dropped.

Prints per file the rows, the quoting rows, and the named count under each reading, then every
row whose verdict changed. The committed `results.json` files keep what they were written with.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewards.embedding_grader import EmbeddingQuirkGrader  # noqa: E402
from rewards.hypothesis_text import empty_quotes, own_words  # noqa: E402
from targets.quirks import all_quirks  # noqa: E402


def main(paths: list[str]) -> None:
    if not paths:
        sys.exit(__doc__)
    grader, quirks = EmbeddingQuirkGrader(), all_quirks()
    total = {"rows": 0, "quoting": 0, "frame kept": 0, "own words": 0}
    for path in paths:
        rows = [r for r in json.loads(Path(path).read_text())["rows"]
                if r.get("top_hypothesis") and r["quirk"] in quirks and r["quirk"] != "none"]
        quoting = [r for r in rows if empty_quotes(r["top_hypothesis"]) != r["top_hypothesis"]]
        kept = words = 0
        changed = []
        for row in quoting:
            text, quirk = row["top_hypothesis"], quirks[row["quirk"]]
            before, after = (m.matches(quirk.id, grader.rule)
                             for m in grader.describe([empty_quotes(text), own_words(text)], quirk))
            kept, words = kept + before, words + after
            if before != after:
                changed.append(f"  {'gained' if after else 'lost'}: {quirk.id}: {text[:90]}")
        print(f"{path}: {len(rows)} rows, {len(quoting)} quoting; named with the frame kept {kept}, in own words {words}")
        for line in changed:
            print(line)
        for key, value in zip(total, (len(rows), len(quoting), kept, words)):
            total[key] += value
    print("all: " + ", ".join(f"{k} {v}" for k, v in total.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
