"""Cross-fitting the offline grader's readers: how each does on labelled text it was not fitted to.

Two disjoint bodies of tuning data exist: the written set (`calibration_data/grader_train.yaml`,
305 items written from the ground truths alone) and the dev halves (the original set's train
half, the hard-negative dev half and the ground truths). This script fits on one and reads
the other, both ways, and prints Cohen's kappa on `identified`:

- the pair reader, trained on one body plus the invented quirks of
  `grader_train_extra*.yaml` and the topic-only texts (same recipe as `rewards.pair_reader_training`), at
  several thresholds, gated as the default rule gates it (content, no shotgun list, no
  denying clause, no other quirk plainly nearer);
- the similarity rule as committed (it was tuned on the dev halves), and tuned on the
  written set by the same grid search.

    python benchmarks/pair_reader_crossfit.py [--epochs 5]

About 20 minutes on 2 CPU cores (two trainings of 8-10 minutes). The test halves are
never read.
"""

from __future__ import annotations

import argparse

from rewards.calibration import CalibrationCase, scores
from rewards.embedding_grader import DEFAULT_RULE, SIMILARITY_RULE, DescriptionMatch, EmbeddingQuirkGrader
from rewards.grader_calibration import coarse_then_fine, describe_cases, dev_cases, evaluate
from rewards.hard_negatives import load_items, to_case
from rewards.pair_reader import merged_reader
from rewards.pair_reader_training import (
    TRAIN_PATH,
    load_extra_quirks,
    load_false_texts,
    load_true_texts,
    seeded_cases,
    train_pair_reader,
    training_pairs,
)
from scaffold.minilm import load_encoder
from targets.quirks import all_quirks

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def gate(case: CalibrationCase, match: DescriptionMatch | None) -> bool:
    """What the default rule asks beside the reader's probability (`DescriptionMatch.pair_gates`)."""
    return match is not None and match.pair_gates(case.quirk, DEFAULT_RULE)


def pair_kappas(fit: list[CalibrationCase], read: list[CalibrationCase], epochs: int) -> dict[float, float]:
    """Train a reader on `fit`, read `read`: kappa per threshold."""
    quirks, encoder = all_quirks(), load_encoder()
    pairs = training_pairs(
        fit, quirks, extra=load_extra_quirks(), false_texts=load_false_texts(), true_texts=load_true_texts()
    )
    tensors, metadata = train_pair_reader(pairs, encoder, epochs=epochs)
    reader = merged_reader(encoder, tensors, metadata)
    probabilities = reader.scores([(c.report.hypotheses[0].description, quirks[c.quirk].ground_truth) for c in read])
    gates = {c.id: gate(c, m) for c, m in describe_cases(read, EmbeddingQuirkGrader(rule=SIMILARITY_RULE))}
    truth = [bool(c.label.identified) for c in read]
    return {
        t: scores(truth, [p >= t and gates[c.id] for c, p in zip(read, probabilities)])["kappa"] for t in THRESHOLDS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    written = seeded_cases([to_case(i) for i in load_items(TRAIN_PATH)])
    dev = seeded_cases(dev_cases())
    print(f"written set: {len(written)} seeded cases; dev halves: {len(dev)}")
    forward = pair_kappas(written, dev, args.epochs)
    backward = pair_kappas(dev, written, args.epochs)
    print("pair reader, kappa by threshold (fit written -> read dev | fit dev -> read written | mean)")
    for t in THRESHOLDS:
        print(f"  {t:.1f}: {forward[t]:.3f} | {backward[t]:.3f} | {(forward[t] + backward[t]) / 2:.3f}")
    similarity = EmbeddingQuirkGrader(rule=SIMILARITY_RULE)
    on_written, on_dev = describe_cases(written, similarity), describe_cases(dev, similarity)
    tuned = coarse_then_fine(on_written)
    print("similarity rule:")
    print(f"  as committed (tuned on dev): dev {evaluate(on_dev, SIMILARITY_RULE)['kappa']:.3f} (in-sample), "
          f"written {evaluate(on_written, SIMILARITY_RULE)['kappa']:.3f}")
    print(f"  tuned on written: written {evaluate(on_written, tuned)['kappa']:.3f} (in-sample), "
          f"dev {evaluate(on_dev, tuned)['kappa']:.3f}")


if __name__ == "__main__":
    main()
