#!/usr/bin/env bash
# The pair reader's measurement table (notes of stops 37-38): one column per weights file.
#
#   benchmarks/pair_reader_table.sh REPO_DIR [VENV_BIN]
#
# REPO_DIR is a copy of the repository whose rewards/grader_weights/pair_reader.safetensors
# holds the weights to measure (copy them in first; never into the working tree while a job
# runs there). Prints one `name: value` line per row. About 6 minutes on two cores.
set -euo pipefail
repo=$(cd "$1" && pwd); bin=${2:-/work/main/.venv/bin}
cd "$repo"; export PYTHONPATH="$repo"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cal() { "$bin/audit" judge calibrate --judge offline --json "$@"; }
cal --set benchmarks/policy-text-cases.yaml >"$tmp/policy.json"
cal --set hard-negatives --half test >"$tmp/hn.json"
cal --set original --half test >"$tmp/orig.json"
cal --set benchmarks/topic-only-cases.yaml --quirks benchmarks/unseen-quirks >"$tmp/topic.json"
cal --set benchmarks/unseen-quirks-grader-cases.yaml --quirks benchmarks/unseen-quirks >"$tmp/unseen.json"
"$bin/audit" quirks generate --out "$tmp/gen" --check --grade --json >"$tmp/gen.json" || true
"$bin/python" - "$tmp" <<'PY'
import json, sys
from pathlib import Path
from rewards.embedding_grader import EmbeddingQuirkGrader
from rewards.grader_calibration import describe_cases, dev_cases, evaluate

tmp = Path(sys.argv[1])
read = lambda name: json.loads((tmp / f"{name}.json").read_text())
policy = read("policy")
print(f"policy texts, wrong accepted: {policy['confusion']['fp']} of {policy['confusion']['fp'] + policy['confusion']['tn']}"
      f"; true credited {policy['confusion']['tp']} of {policy['confusion']['tp'] + policy['confusion']['fn']}")
grader = EmbeddingQuirkGrader()
print(f"dev halves + ground truths, kappa: {evaluate(describe_cases(dev_cases(), grader), grader.rule)['kappa']:.3f}")
rows, _ = json.JSONDecoder().raw_decode((tmp / "gen.json").read_text())  # the missed goals follow the JSON
low = {r["family"]: r["names itself"] for r in rows[:-1] if not r["names itself"].startswith(r["quirks"] + "/")}
print(f"generator check, ground truths name their own quirk: {rows[-1]['names itself']}; short of all: {low}")
print(f"unseen quirks, kappa: {read('unseen')['kappa']:.3f}")
topic = read("topic")
print(f"topic-only accepted: {topic['confusion']['fp']} of {topic['n']}")
hn = read("hn")
cats = next(iter(hn["sets"].values()))["by_category"]
accepted = ", ".join(f"{name} {c['accepted']}/{c['n']}" for name, c in sorted(cats.items()))
print(f"hard-negative test half, kappa: {hn['kappa']:.3f}; accepted: {accepted}")
print(f"original test half, kappa: {read('orig')['kappa']:.3f}")
PY
