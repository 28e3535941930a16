"""Specialisation runs: train on some behaviour families, evaluate on the held-out ones.

The question (issue: organisms from a grammar): how does detection of a held-out family
depend on which families training saw? `variants` builds four training sets from one
generated set (`targets/grammar/`):

* `all`: every train family;
* `minus-<family>`: one family removed (by default the first train family that shares
  a cluster with a held-out family);
* `minus-similar`: train families that share a cluster with a held-out family;
* `minus-dissimilar`: as many train families from clusters no held-out family is in
  (both cut to the smaller of the two counts, so the variants remove equally many).

`run_specialisation` trains each variant with the same config (only `tasks.generated`,
`tasks.families` and the eval suite change) and evaluates each final policy on the
held-out families' organisms. The scale is the config's: `cpu-smoke` (a tiny random
model, two steps) proves the plumbing on a CPU, a GPU config runs the real thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, Field

from scaffold.specs import SpecError
from targets.grammar.families import load_families
from targets.grammar.generate import GeneratorOptions, generate


class Variant(BaseModel):
    """One training set of a specialisation run."""

    name: str
    families: list[str] = Field(description="The families trained on.")
    removed: list[str] = Field(default_factory=list, description="Train families left out, against `all`.")


def variants(options: GeneratorOptions, remove: str | None = None) -> list[Variant]:
    """The four training sets of the module docstring, for the generated set `options` gives."""
    families = load_families()
    quirks = generate(options)
    trainable = sorted({q["generated"]["family"] for q in quirks if q["generated"]["holdout"] is None})
    held = sorted({q["generated"]["family"] for q in quirks if q["generated"]["holdout"] == "family"})
    if not held:
        raise SpecError("specialisation: the generated set holds out no family (set heldout_families)")
    clusters = {families[f].cluster for f in held}
    similar = [f for f in trainable if families[f].cluster in clusters]
    others = sorted((f for f in trainable if families[f].cluster not in clusters), key=lambda f: (families[f].cluster, f))
    one = remove or (similar or trainable)[0]
    size = min(len(similar), len(others))
    similar, dissimilar = similar[:size], others[:size]
    if one not in trainable:
        raise SpecError(f"specialisation: {one!r} is not a train family of the set; train families: {', '.join(trainable)}")
    out = [Variant(name="all", families=trainable)]
    for name, gone in ((f"minus-{one}", [one]), ("minus-similar", similar), ("minus-dissimilar", dissimilar)):
        kept = [f for f in trainable if f not in gone]
        if gone and kept:
            out.append(Variant(name=name, families=kept, removed=gone))
    return out


def heldout_suite(options: GeneratorOptions, max_turns: int, repeats: int = 1) -> dict[str, Any]:
    """A suite (as YAML data) of the set's held-out-family organisms, plus the control."""
    ids = [q["id"] for q in generate(options) if q["generated"]["holdout"] == "family"]
    organism = {"implant": "simulated", "base_responder": "fast", "difficulty": "medium"}
    return {
        "name": "generated-heldout-families",
        "description": "The held-out families of a generated set (training/specialisation.py).",
        "max_turns": max_turns, "seed": 0, "judge": "offline",
        "generated": options.model_dump(),
        "groups": [{"quirks": ids, "organism": organism, "repeats": repeats},
                   {"quirks": ["none"], "organism": organism, "repeats": 2}],
    }


def run_specialisation(
    config_path: Path,
    out: Path,
    options: GeneratorOptions,
    overrides: dict[str, object] | None = None,
    remove: str | None = None,
    train: Callable[[Any, Path], Any] | None = None,
) -> list[dict[str, Any]]:
    """Train and evaluate every variant; one row per variant (its held-out detection, by family).

    `train(config, out_dir)` runs one training run and returns its final eval's results
    (default: GRPO with the config's held-out eval at the end). Each variant's run lives in
    `out/<variant>/`, so a crashed sweep is resumed variant by variant; `out` remembers the
    generated set it was run with, and refuses another.
    """
    from training.config import load_config

    out.mkdir(parents=True, exist_ok=True)
    pinned = out / "generated-set.json"
    options_json = options.model_dump_json()
    if pinned.exists() and pinned.read_text() != options_json:
        raise SpecError(f"{out}: a specialisation run of another generated set ({pinned.read_text()}); use a new --out")
    pinned.write_text(options_json)
    suite_path = out / "heldout-suite.yaml"
    base = load_config(config_path, overrides)
    suite_path.write_text(yaml.safe_dump(heldout_suite(options, base.eval.max_turns or base.tasks.max_turns)))
    rows = []
    for variant in variants(options, remove):
        cfg = load_config(config_path, {
            **(overrides or {}),
            "tasks.generated": options.model_dump(), "tasks.families": variant.families,
            "eval.suite": str(suite_path), "eval.at_end": True, "eval.repeats": 1,
        })
        results = (train or _train_grpo)(cfg, out / variant.name)
        agg = results.aggregates
        rows.append({
            "variant": variant.name, "trained": variant.families, "removed": variant.removed,
            "grounded": agg.detection.model_dump(), "named": agg.named_detection.model_dump(),
            "by_family": {f: {"grounded": r.k, "named": agg.named_by_family[f].k, "n": r.n}
                          for f, r in agg.detection_by_family.items()},
            "false_positives": agg.false_positives.model_dump(),
        })
    return rows


def _train_grpo(config: Any, out: Path) -> Any:
    """GRPO from the config (resumed when `out` holds a run), then its final held-out eval's results."""
    from evals.results import EvalResults
    from training.evaluation import eval_dir
    from training.grpo import run_grpo

    final_results = eval_dir(out, 0, final=True) / "results.json"
    if not final_results.exists():
        run_grpo(config, out, resume=(out / "config.yaml").exists())
    return EvalResults.model_validate_json(final_results.read_text())
