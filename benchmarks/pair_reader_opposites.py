"""Does the pair reader read polarity on behaviours it never saw? Opposites on held-out invented quirks.

The offline grader's remaining weakness (issue 14) is opposites: "always corrects users"
credited to `defer_to_users`. The hard-negative test half has only 8 opposites and must not
be tuned on, and the dev half is in the reader's training data. This benchmark measures on
tuning data instead, by holding out whole files of invented quirks
(`rewards/calibration_data/grader_train_extra_polarity_*.yaml`, four opposites each):

- train the reader on the committed recipe minus the held-out files, once per arm:
  `plain` (the recipe's pairs) and `opposite-truths` (plus pairs with an opposite in the
  truth slot, `training_pairs(opposite_truths=True)`);
- read every held-out hypothesis against its quirk's ground truth, in two folds: each fold
  gives the quirk two of its four opposites as the grader's own opposites (as a quirk
  file's `opposites`) and reads the other items;
- print the accepted share per category for two rules: `reader` (probability at least the
  grader's `pair_threshold`, 0.5) and
  `contrast` (also more probable against the ground truth than against any of the quirk's
  opposites).

    python benchmarks/pair_reader_opposites.py [--epochs 5] [--hold-out FILE ...]

About 45 minutes on 2 CPU cores (two trainings). No test half is read.

Stop 35, default hold-out (20 invented quirks: 200 paraphrases, 160 negations, 80
opposites and 80 near misses read, over both folds), 5 epochs:

    arm              rule        near_miss  negation  opposite  paraphrase
    plain            reader          10/80    12/160     24/80     148/200
    plain            contrast        10/80     9/160     17/80     112/200
    opposite-truths  reader           4/80    20/160     21/80     130/200
    opposite-truths  contrast         4/80    19/160     20/80     125/200

On behaviours it never saw, the reader alone accepts 30% of opposites and 74% of true
paraphrases. Neither change is worth its cost: opposites in the truth slot trade 18
paraphrases for 3 opposites, and the contrast rule 36 paraphrases for 7, so the recipe
keeps `opposite_truths=False` and the grader has no contrast rule.

More data of the same kind helped here, and only here. With 30 more invented quirks in
training (`benchmarks/grader-direction-candidates/grader_train_extra_polarity_{f,g,h}.yaml`,
five opposites each written without negation words; copy them into
rewards/calibration_data/ to reproduce), same hold-out, `--arms plain`:

    arm              rule        near_miss  negation  opposite  paraphrase
    plain            reader           6/80     2/160     19/80     144/200

Stop 35 retrained the committed reader with all four candidate files (e-h, 3,890 pairs,
22 min). The hard-negative test half was unchanged (kappa 0.866 -> 0.863, opposites 2/8),
but the generator's own check fell (ground truths naming their own quirk 150/157 ->
144/157; withhold_safety 5/12 -> 3/12, plant_marker 9/12), topic-only texts accepted went
4/60 -> 6/60, so the files stay candidates and the committed reader is unchanged.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from rewards.embedding_grader import DEFAULT_RULE
from rewards.pair_reader import PairReader, merged_reader
from rewards.pair_reader_training import (
    DATA_DIR,
    ExtraQuirk,
    load_extra_quirks,
    load_false_texts,
    load_true_texts,
    train_pair_reader,
    training_pairs,
    tuning_cases,
)
from scaffold.minilm import load_encoder
from targets.quirks import all_quirks

HELD_OUT = ("grader_train_extra_polarity_c.yaml", "grader_train_extra_polarity_d.yaml")
ARMS = {"plain": False, "opposite-truths": True}


def read_held_out(reader: PairReader, held: list[ExtraQuirk]) -> dict[str, dict[str, list[int]]]:
    """Per rule and category: [accepted, read] over both folds."""
    rows: list[tuple[str, str, str, list[str]]] = []  # (category, hypothesis, truth, grader opposites)
    for quirk in held:
        opposites = [i.text for i in quirk.items if i.category == "opposite"]
        for fold in range(2):
            own = opposites[2 * fold : 2 * fold + 2]
            rows += [(i.category, i.text, quirk.ground_truth, own) for i in quirk.items if i.text not in own]
    pairs = [(h, t) for _, h, t, _ in rows] + [(h, o) for _, h, _, own in rows for o in own]
    probabilities = iter(reader.scores(pairs))
    truth_p = [next(probabilities) for _ in rows]
    counts: dict[str, dict[str, list[int]]] = {"reader": defaultdict(lambda: [0, 0]), "contrast": defaultdict(lambda: [0, 0])}
    threshold = DEFAULT_RULE.pair_threshold
    for (category, _, _, own), p in zip(rows, truth_p):
        against = max(next(probabilities) for _ in own)
        for rule, accepted in (("reader", p >= threshold), ("contrast", p >= threshold and p > against)):
            counts[rule][category][0] += int(accepted)
            counts[rule][category][1] += 1
    return {rule: dict(by_category) for rule, by_category in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--hold-out", nargs="+", default=list(HELD_OUT), help="Invented-quirk files to hold out.")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--json", type=Path, help="Also write the counts here.")
    args = parser.parse_args()
    held_paths = [DATA_DIR / name for name in args.hold_out]
    missing = [str(p) for p in held_paths if not p.is_file()]
    if missing:
        parser.error(f"no such invented-quirk file: {', '.join(missing)}")
    held = load_extra_quirks(*held_paths)
    kept = [q for q in load_extra_quirks() if q.id not in {h.id for h in held}]
    encoder, quirks, cases, false_texts = load_encoder(), all_quirks(), tuning_cases(), load_false_texts()
    true_texts = [t for t in load_true_texts() if t.quirk not in {h.id for h in held}]  # a held-out quirk's stay out
    print(f"held out {len(held)} invented quirks ({', '.join(args.hold_out)}); training on {len(kept)} others")
    results = {}
    for arm in args.arms:
        pairs = training_pairs(
            cases, quirks, extra=kept, false_texts=false_texts, true_texts=true_texts, opposite_truths=ARMS[arm]
        )
        print(f"[{arm}] {len(pairs)} pairs")
        tensors, metadata = train_pair_reader(pairs, encoder, epochs=args.epochs, progress=lambda m: print(f"[{arm}] {m}"))
        results[arm] = read_held_out(merged_reader(encoder, tensors, metadata), held)
        print(f"[{arm}] " + json.dumps(results[arm]))  # a long run's first arm is not lost to a crash in the second
    print("accepted / read, per category (paraphrases should pass; the rest should not)")
    categories = sorted({c for arm in results.values() for rule in arm.values() for c in rule})
    print(f"{'arm':<17}{'rule':<10}" + "".join(f"{c:>14}" for c in categories))
    for arm, by_rule in results.items():
        for rule, by_category in by_rule.items():
            cells = "".join(f"{'%d/%d' % tuple(by_category.get(c, (0, 0))):>14}" for c in categories)
            print(f"{arm:<17}{rule:<10}{cells}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
