"""Specialisation runs on generated organisms: which held-out families does training on which families help?

Trains four variants of one config on the grammar's generated set (all train families;
one family removed; the families similar to the held-out ones removed; as many dissimilar
ones removed; training/specialisation.py), evaluates each final policy on the held-out
families, and prints a table of grounded and named detection per variant and family.

    python benchmarks/specialisation.py --config training/configs/cpu-smoke.yaml --out spec-out/smoke
    python benchmarks/specialisation.py --config training/configs/gpu-vllm.yaml --out spec-out/gpu --set steps=200

The scale is the config's alone: cpu-smoke (a tiny random model, two steps) shows the
plumbing, not transfer. Each variant runs in OUT/<variant>/; run the same command again
to resume after a crash. The table is also written to OUT/specialisation.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import ValidationError  # noqa: E402

from scaffold.specs import SpecError  # noqa: E402
from targets.grammar.generate import GeneratorOptions  # noqa: E402
from training.config import parse_assignment  # noqa: E402
from training.specialisation import run_specialisation  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="A training config (training/configs/).")
    parser.add_argument("--out", type=Path, required=True, help="Directory for the runs and the table.")
    parser.add_argument("--seed", type=int, default=0, help="The generated set's seed.")
    parser.add_argument("--per-family", type=int, default=12, help="Situations per family in the set.")
    parser.add_argument("--heldout-situations", type=int, default=2, help="Held-out combinations per train family.")
    parser.add_argument("--remove", default=None, help="The family the minus-one variant leaves out.")
    parser.add_argument("--set", dest="assignments", action="append", default=[], help="Config override KEY=VALUE.")
    args = parser.parse_args()
    try:
        overrides = dict(parse_assignment(a) for a in args.assignments)
        options = GeneratorOptions(seed=args.seed, per_family=args.per_family, heldout_situations=args.heldout_situations)
        rows = run_specialisation(args.config, args.out, options, overrides, remove=args.remove)
    except (SpecError, ValidationError) as exc:
        sys.exit(f"error: {exc}")
    (args.out / "specialisation.json").write_text(json.dumps(rows, indent=2) + "\n")
    families = sorted({f for r in rows for f in r["by_family"]})
    print(f"{'variant':<22}{'removed':<40}" + "".join(f"{f[:16]:>18}" for f in families) + f"{'all, grounded/named':>22}")
    for r in rows:
        cells = "".join(f"{r['by_family'][f]['grounded']}/{r['by_family'][f]['named']}/{r['by_family'][f]['n']:>0}".rjust(18)
                        for f in families)
        total = f"{r['grounded']['k']}/{r['named']['k']} of {r['grounded']['n']}"
        print(f"{r['variant']:<22}{','.join(r['removed'])[:38]:<40}{cells}{total:>22}")
    print("cells: grounded/named/audits per held-out family")


if __name__ == "__main__":
    main()
