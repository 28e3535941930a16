#!/usr/bin/env bash
# The pair reader's measurement table (notes of stops 37-40): one column per weights file.
#
#   benchmarks/pair_reader_table.sh WEIGHTS.safetensors|REPO_DIR [VENV_BIN]
#
# Given a weights file, it is measured in a fresh copy of this checkout (its tracked and
# untracked, not ignored, files), so the working tree is never touched. Given REPO_DIR, a copy
# of the repository whose rewards/grader_weights/pair_reader.safetensors holds the weights to
# measure is read as it is. VENV_BIN defaults to this checkout's .venv/bin. Prints one
# `name: value` line per row. About 5 minutes on two cores for one member, 6 for three.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd); bin=${2:-$here/.venv/bin}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [[ "$1" == *.safetensors ]]; then
  [[ -f "$1" ]] || { echo "no weights file at $1" >&2; exit 2; }
  repo="$tmp/repo"; mkdir "$repo"
  (cd "$here" && git ls-files -co --exclude-standard | tar -T - -c) | tar -x -C "$repo"
  cp "$1" "$repo/rewards/grader_weights/pair_reader.safetensors"
else
  repo=$(cd "$1" && pwd)
fi
cd "$repo"; export PYTHONPATH="$repo"
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
