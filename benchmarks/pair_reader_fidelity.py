"""How often another pair reader's verdicts equal a reference reader's, on texts no reader trained on.

A label-free check, for choosing between readers without reading a test half: the benchmarks'
candidate texts (our policies' fragments and the terse true descriptions, neither in the recipe
nor in any measured set), each against its own quirk's ground truth and two other quirks'
(fixed by a seed). Labels are not read. Stop 40 used it to reject a reader distilled from a
three-seed file: it matched the three-seed verdicts less often than one of the seeds did.

    python benchmarks/pair_reader_fidelity.py REFERENCE.safetensors OTHER.safetensors [OTHER ...]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from rewards.pair_reader import load_pair_reader
from rewards.pair_reader_training import load_true_texts
from targets.quirks import all_quirks

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("grader-policy-text-candidates.yaml", "grader-terse-true-candidates.yaml")


def candidate_pairs(seed: int = 7) -> list[tuple[str, str]]:
    """(text, ground truth) for each package-quirk candidate: its own quirk, then two others."""
    quirks = all_quirks()
    ids, rng = sorted(quirks), random.Random(seed)
    pairs = []
    for name in CANDIDATES:
        for item in load_true_texts(ROOT / "benchmarks" / name):  # read as {quirk, text}; the label is not used
            if item.quirk in quirks:
                others = rng.sample([q for q in ids if q != item.quirk], 2)
                pairs += [(item.text, quirks[q].ground_truth) for q in (item.quirk, *others)]
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", help="The reader whose verdicts the others are compared with.")
    parser.add_argument("others", nargs="+", help="Readers to compare.")
    args = parser.parse_args()
    pairs = candidate_pairs()
    reference = [p > 0.5 for p in load_pair_reader(args.reference).scores(pairs)]
    print(f"{len(pairs)} pairs; {args.reference} accepts {sum(reference)}")
    for path in args.others:
        verdicts = [p > 0.5 for p in load_pair_reader(path).scores(pairs)]
        same = sum(a == b for a, b in zip(reference, verdicts))
        print(f"{path}: verdicts equal to the reference's {same}/{len(pairs)} ({len(pairs) - same} differ); "
              f"accepts {sum(verdicts)}")


if __name__ == "__main__":
    main()
