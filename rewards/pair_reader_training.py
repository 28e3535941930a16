"""Training the pair reader (`rewards.pair_reader`) on labelled hypotheses, and only on tuning data.

The pairs are (hypothesis, the quirk's ground truth, label), from:

- `calibration_data/grader_train.yaml`: 305 hypotheses written from the ground truths
  alone, by a writer who never saw the other sets or the graders (paraphrases in both
  voices, negations, opposites, near misses, shotgun lists, word salad);
- the dev halves the embedding rule was tuned on (`rewards.grader_calibration.dev_cases`):
  the original set's train half, the hard-negative dev half and the ground truths;
- from each quirk file: its aliases (true), its grader-only opposites (false), and
  aliases set against other quirks' ground truths (false);
- `calibration_data/grader_train_extra*.yaml`: invented quirks that exist only here (a
  ground truth each, with paraphrases, negations, opposites and near misses), so that
  the reader sees many behaviours and reads polarity rather than memorising fifteen:
  `_extra.yaml` (30 everyday quirks, one writer) and `_extra_polarity_{a,b,c,d}.yaml`
  (10 quirks each of the kind an auditor looks for, about the user, the model itself,
  topics and tasks, with four negations and four opposites each; four more writers), and
  each invented quirk's ground truth as a true hypothesis of its own (since stop 41: without
  it the reader read any "no" as a denial, even in a ground truth read against itself);
- `calibration_data/grader_train_false_*.yaml`: texts that claim no behaviour of their
  quirk, all false. Today one file, `_topics`: texts that name a quirk's topic or setting
  ("Synthetic training data.", "I asked about retirement savings"); without them the reader
  credited any mention of the topic at 0.99;
- `calibration_data/grader_train_true_*.yaml`: texts true for their quirk. Today none: our
  own policies' fragments (as false texts) with terse true descriptions beside them (as
  `_true_terse`) were tried and left out; benchmarks/grader-policy-text-candidates.yaml and
  benchmarks/grader-terse-true-candidates.yaml say why and how to try again;
- each true hypothesis set against two other quirks' ground truths (false), so the
  reader learns which behaviour, not only whether a behaviour.

The test halves never enter. Controls (quirk `none`) are not pairs: a control's verdict
is "did it claim anything", which `hypothesis_text` reads.

    python -m rewards.pair_reader_training [--out PATH] [--epochs 5] [--seed 0 [1 ...]] [--check]
    python -m rewards.pair_reader_training --pack W0 W1 ... --out PATH

writes the delta and head tensors with the pairs' digest in the file's metadata, one member
per seed (`--pack` joins members trained apart, for example in parallel);
`--check` only says whether the committed weights were trained on today's data
(tests/test_pair_reader.py asserts the same).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Literal, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rewards.calibration import CalibrationCase
from rewards.hard_negatives import load_items, to_case, validated_items
from rewards.pair_reader import (
    WEIGHTS_PATH,
    encode_pairs,
    pack_members,
    pair_logits,
    read_weights,
    split_members,
)
from scaffold.minilm_deltas import add_deltas, delta_tensors, save_weights_file
from scaffold.specs import SpecError
from targets.quirks import Quirk, all_quirks

DATA_DIR = Path(__file__).parent / "calibration_data"
TRAIN_PATH = DATA_DIR / "grader_train.yaml"
EXTRA_GLOB = "grader_train_extra*.yaml"  # invented quirks: adding a file of them adds them to the recipe
FALSE_TEXT_GLOB = "grader_train_false_*.yaml"  # texts false for their quirk: adding a file adds them
TRUE_TEXT_GLOB = "grader_train_true_*.yaml"  # texts true for their quirk (terse ones): likewise
Pair = tuple[str, str, int]  # (hypothesis, ground truth, label)
M = TypeVar("M", bound=BaseModel)


class ExtraItem(BaseModel):
    """One labelled hypothesis about an invented quirk."""

    model_config = ConfigDict(extra="forbid")

    category: Literal["paraphrase", "negation", "opposite", "near_miss"]
    person: Literal["first", "third", "short"] | None = None
    text: str
    label: bool


class ExtraQuirk(BaseModel):
    """An invented quirk that exists only as training data: its ground truth and labelled hypotheses."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z]_[a-z0-9_]+$")  # a one-letter prefix per writer (x_, y_): never a package quirk's id
    ground_truth: str
    items: list[ExtraItem]


def _data_files_items(pattern: str, paths: Sequence[str | Path], model: type[M], noun: str) -> list[M]:
    """The validated items of `paths`, or of every `pattern` file of the data folder in name
    order; an absent file holds none."""
    files = [Path(p) for p in paths] if paths else sorted(DATA_DIR.glob(pattern))
    return [item for path in files if path.is_file() for item in validated_items(path, model, noun)]


def load_extra_quirks(*paths: str | Path) -> list[ExtraQuirk]:
    """The invented quirks of `paths` (default: every `EXTRA_GLOB` file of the data folder,
    in name order; an absent file holds none). Errors name the file and the quirk; an id
    that repeats, or that is a package quirk's, is one too."""
    quirks = _data_files_items(EXTRA_GLOB, paths, ExtraQuirk, "quirk")
    seen = set(all_quirks())
    for quirk in quirks:
        if quirk.id in seen:
            raise SpecError(f"invented quirk {quirk.id!r} is defined twice, or is a package quirk's id")
        seen.add(quirk.id)
    return quirks


class QuirkText(BaseModel):
    """A text about one quirk, labelled by the file it is in: a `_false_` file's texts claim no
    behaviour of their quirk (a topic named, a policy's fragment), a `_true_` file's name it."""

    model_config = ConfigDict(extra="forbid")

    quirk: str
    text: str


def load_false_texts(*paths: str | Path) -> list[QuirkText]:
    """The false texts of `paths` (default: every `FALSE_TEXT_GLOB` file of the data folder, in
    name order; an absent file holds none); errors name the file, the item and the field."""
    return _data_files_items(FALSE_TEXT_GLOB, paths, QuirkText, "item")


def load_true_texts(*paths: str | Path) -> list[QuirkText]:
    """The true texts of `paths` (default: every `TRUE_TEXT_GLOB` file of the data folder), as `load_false_texts`."""
    return _data_files_items(TRUE_TEXT_GLOB, paths, QuirkText, "item")


def seeded_cases(cases: Sequence[CalibrationCase]) -> list[CalibrationCase]:
    """The cases that can be pairs: a seeded quirk, a hypothesis, and an `identified` label."""
    return [c for c in cases if c.quirk != "none" and c.report.hypotheses and c.label.identified is not None]


def tuning_cases() -> list[CalibrationCase]:
    """Every labelled seeded-quirk case of the package's quirks the reader may learn from (see the module docstring)."""
    from rewards.grader_calibration import dev_cases

    return seeded_cases([to_case(item) for item in load_items(TRAIN_PATH)] + dev_cases())


def training_pairs(
    cases: Sequence[CalibrationCase],
    quirks: dict[str, Quirk],
    seed: int = 0,
    extra: Sequence[ExtraQuirk] = (),
    false_texts: Sequence[QuirkText] = (),
    true_texts: Sequence[QuirkText] = (),
    opposite_truths: bool = False,
    identity_truths: bool = True,
) -> list[Pair]:
    """The labelled pairs (see the module docstring), in a fixed order for a given seed.

    `opposite_truths` adds pairs with an opposite in the truth slot: the ground truth and
    two of its true paraphrases (or aliases) set against each of the quirk's opposites, all
    false. Without them the reader only ever sees ground truths there, and reads a true
    paraphrase against an opposite as a match (0.99) because the topic agrees.
    `identity_truths` (on in the recipe, so benchmarks that build variants of it get it too) adds
    each invented quirk's ground truth as a true hypothesis of its own."""
    rng = random.Random(seed)
    truths = {q: quirks[q].ground_truth for q in sorted(quirks) if q != "none"}
    truths.update({x.id: x.ground_truth for x in extra})
    ids = list(truths)

    def others(qid: str, k: int) -> list[str]:
        return [truths[o] for o in rng.sample([o for o in ids if o != qid], k)]

    pairs: list[Pair] = []
    labelled = [(c.report.hypotheses[0].description, c.quirk, bool(c.label.identified)) for c in cases]
    labelled += [(item.text, x.id, item.label) for x in extra for item in x.items]
    if identity_truths:
        # An invented quirk's ground truth, read against itself, names it. Without these the reader
        # learned "a negation word means false" and rejected a truth that holds one ("tells the user
        # that no precautions are needed") against itself at 0.3. The package quirks' truths are
        # already dev cases.
        labelled += [(x.ground_truth, x.id, True) for x in extra]
    unknown = sorted({t.quirk for t in [*false_texts, *true_texts]} - set(truths))
    if unknown:
        raise SpecError(f"false or true texts name unknown quirks: {unknown}")
    labelled += [(t.text, t.quirk, False) for t in false_texts]
    labelled += [(t.text, t.quirk, True) for t in true_texts]
    for text, qid, label in labelled:
        pairs.append((text, truths[qid], int(label)))
        if label:
            pairs += [(text, other, 0) for other in others(qid, 2)]
    for qid in sorted(q for q in quirks if q != "none"):
        quirk = quirks[qid]
        aliases = [a for a in quirk.aliases if a.strip()]
        pairs += [(alias, truths[qid], 1) for alias in aliases]
        pairs += [(opposite, truths[qid], 0) for opposite in quirk.opposites if opposite.strip()]
        for alias in rng.sample(aliases, min(3, len(aliases))):
            pairs += [(alias, other, 0) for other in others(qid, 1)]
    if opposite_truths:
        pairs += _opposite_truth_pairs(quirks, extra, truths, rng)
    return pairs


def _opposite_truth_pairs(
    quirks: dict[str, Quirk], extra: Sequence[ExtraQuirk], truths: dict[str, str], rng: random.Random
) -> list[Pair]:
    """(ground truth or a true paraphrase, one of the quirk's opposites, 0) for every opposite."""
    sides: list[tuple[str, list[str], list[str]]] = [
        (qid, [a for a in quirks[qid].aliases if a.strip()], [o for o in quirks[qid].opposites if o.strip()])
        for qid in sorted(q for q in quirks if q != "none")
    ]
    sides += [
        (x.id, [i.text for i in x.items if i.label], [i.text for i in x.items if i.category == "opposite"])
        for x in extra
    ]
    pairs: list[Pair] = []
    for qid, positives, opposites in sides:
        for opposite in opposites:
            pairs.append((truths[qid], opposite, 0))
            pairs += [(text, opposite, 0) for text in rng.sample(positives, min(2, len(positives)))]
    return pairs


def recipe_pairs(seed: int = 0) -> list[Pair]:
    """The pairs the committed reader is trained on: every tuning source of the module docstring."""
    return training_pairs(
        tuning_cases(), all_quirks(), seed, load_extra_quirks(), load_false_texts(), load_true_texts()
    )


def pairs_digest(pairs: Sequence[Pair]) -> str:
    """The sha256 of the pairs, ground truths spelled out: what the weights were trained on."""
    return hashlib.sha256(json.dumps([list(p) for p in pairs], ensure_ascii=False).encode()).hexdigest()


def train_pair_reader(
    pairs: list[Pair],
    encoder: Any,
    *,
    epochs: int = 5,
    rank: int = 8,
    alpha: float = 16.0,
    lr: float = 1e-3,
    batch_size: int = 16,
    seed: int = 0,
    progress: Callable[[str], None] = print,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train deltas and a head over a copy of `encoder`; (tensors, metadata) to save."""
    import torch

    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    scale = alpha / rank
    bert, adapted = add_deltas(encoder, rank, scale, generator)
    head = torch.nn.Linear(bert.config.hidden_size, 1)
    trainable = [p for m in adapted.values() for p in (m.down, m.up)] + list(head.parameters())
    optimiser = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(pairs) / batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / 10) * max(0.0, 1 - s / steps))
    order = list(pairs)
    bert.train()
    started = time.perf_counter()
    for epoch in range(epochs):
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            encoded = encode_pairs(encoder.tokenizer, [(t, truth) for t, truth, _ in batch])
            labels = torch.tensor([float(y) for *_, y in batch])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(pair_logits(bert, head, encoded), labels)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item() * len(batch)
        progress(f"epoch {epoch + 1}/{epochs}: loss {total / len(order):.4f} ({time.perf_counter() - started:.0f} s)")
    tensors = delta_tensors(adapted)
    tensors["head.weight"], tensors["head.bias"] = head.weight.detach().contiguous(), head.bias.detach().contiguous()
    metadata = {
        "scale": scale, "rank": rank, "alpha": alpha, "epochs": epochs, "lr": lr, "batch_size": batch_size,
        "seed": seed, "pairs": len(pairs), "positives": sum(y for *_, y in pairs),
        "pairs_digest": pairs_digest(pairs),
    }
    return tensors, metadata


def committed_matches_data(path: str | Path = WEIGHTS_PATH) -> tuple[bool, str, str]:
    """(matches, committed digests, today's digests): was each member of the weights at `path`
    trained on today's pairs for its seed? Digests are comma-joined, one per member."""
    tensors, metadata = read_weights(path)
    members = [m for _, m in split_members(tensors, metadata)]
    committed = [str(m.get("pairs_digest", "")) for m in members]
    today = [pairs_digest(recipe_pairs(int(m.get("seed", 0)))) for m in members]
    return committed == today, ",".join(c[:12] for c in committed), ",".join(t[:12] for t in today)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Train the offline grader's pair reader on the tuning data. Several --seed values train one "
        "member each and write them to one file, read as the members' mean logit.")
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH, help="Where to write the weights.")
    parser.add_argument("--epochs", type=int, default=5, help="Passes over the pairs.")
    parser.add_argument("--seed", type=int, nargs="+", default=[0],
                        help="Seeds the pair sampling, the shuffle and the init; one member per seed.")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--pack", type=Path, nargs="+", metavar="WEIGHTS",
                       help="Instead of training, write these already-trained files as one file of their members.")
    modes.add_argument("--check", action="store_true", help="Only check that the weights match today's data.")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    """`main`'s work once the arguments are read: check, pack or train."""
    if args.check:
        ok, committed, today = committed_matches_data(args.out)
        print(f"{args.out}: {'trained on today' if ok else 'STALE: retrain'} ({committed} vs {today})")
        return 0 if ok else 1
    if args.pack:
        members = [member for path in args.pack for member in split_members(*read_weights(path))]
    else:
        from scaffold.minilm import load_encoder

        encoder, members = load_encoder(), []
        for seed in args.seed:
            pairs = recipe_pairs(seed)
            print(f"seed {seed}: {len(pairs)} pairs, {sum(y for *_, y in pairs)} true")
            members.append(train_pair_reader(pairs, encoder, epochs=args.epochs, seed=seed))
    save_weights_file(*pack_members(members), args.out)
    print(f"wrote {args.out} ({len(members)} member{'s' * (len(members) > 1)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
