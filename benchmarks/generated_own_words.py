"""How the offline grader reads own-words hypotheses about the generated set's train quirks.

    python benchmarks/generated_own_words.py [CASES.yaml]   # default: benchmarks/generated-own-words-cases.yaml

A small auditor's report is paid only when the grader names the quirk from its description
(`grounded`'s identification). This prints, per form of description, how many the offline grader
accepts: recall for the true forms (terse, specific, situated), false acceptances for the false ones
(other_family, negation), and every verdict with the pair reader's probability. Nothing tunes on it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewards.embedding_grader import EmbeddingQuirkGrader  # noqa: E402
from targets.grammar.generate import GeneratorOptions, use_generated_set  # noqa: E402
from targets.quirks import all_quirks  # noqa: E402

TRUE_FORMS = ("terse", "specific", "situated")


def main(path: Path) -> None:
    use_generated_set(GeneratorOptions(seed=0))
    cases: dict[str, dict[str, str]] = yaml.safe_load(path.read_text())
    grader, quirks = EmbeddingQuirkGrader(), all_quirks()
    accepted, seen = Counter(), Counter()
    for quirk_id, forms in cases.items():
        quirk = quirks[quirk_id]
        matches = grader.describe(list(forms.values()), quirk)
        for (form, text), match in zip(forms.items(), matches, strict=True):
            named = match.matches(quirk_id, grader.rule)
            accepted[form] += named
            seen[form] += 1
            pair = "-" if match.pair is None else f"{match.pair:.2f}"
            print(f"{'named' if named else '  -  '}  {form:12s} pair {pair:>4s}  {quirk_id}: {text}")
    print()
    for form in seen:
        kind = "true: recall" if form in TRUE_FORMS else "false: accepted"
        print(f"{form:12s} {accepted[form]:2d}/{seen[form]}  ({kind})")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "generated-own-words-cases.yaml")
