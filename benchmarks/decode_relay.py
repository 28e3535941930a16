"""The decode loop with and without re-laying its batch (finished rows leave, padding is squeezed out).

`scaffold.providers.decode` re-lays the batch's KV cache when fewer than `COMPACT_BELOW` of
its cells would remain: rows that finished stop riding along in every pass, and the padding
that unequal chunks leave between a row's tokens goes. This prints, in one run on the
packaged SmolLM2, N concurrent constrained replies (benchmarks/provider_replies.py) decoded
once never re-laying and once as the provider does: seconds, passes, re-lays, the share of
row-passes in which a row was still decoding, the ratio, and whether both sampled the same ids.

    python benchmarks/decode_relay.py [--replies 16] [--max-tokens 640]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.provider_replies import concurrent_replies  # noqa: E402
from scaffold.providers import decode  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replies", type=int, default=16, help="concurrent replies, decoded as one batch")
    parser.add_argument("--max-tokens", type=int, default=640, help="per reply")
    args = parser.parse_args()
    default = decode.COMPACT_BELOW
    runs = {}
    for name, threshold in (("never", 0.0), ("re-lay", default)):
        decode.COMPACT_BELOW = threshold  # decode_batch reads it at each call
        runs[name] = concurrent_replies(args.replies, args.max_tokens)
    decode.COMPACT_BELOW = default
    for name, (seconds, records, chat) in runs.items():
        # A row is in a pass per id it chose (forced ids ride with the next choice), plus its prompt's.
        active = sum(sum(r.completion_mask) + 1 for r in records)
        tokens = sum(len(r.completion_ids) for r in records)
        print(f"{name:<7} {seconds:7.1f} s   {chat.forward_passes} passes   {chat.compactions} re-lays   "
              f"{len(records)} replies, {tokens} ids; a row decoding in {active / (len(records) * chat.forward_passes):.0%} "
              f"of the batch's row-passes")
    (never_s, never, _), (relay_s, relaid, _) = runs["never"], runs["re-lay"]
    same = [r.completion_ids for r in never] == [r.completion_ids for r in relaid]
    print(f"ratio never/re-lay {never_s / relay_s:.2f}x   same ids: {same}   re-lay threshold {default}")

if __name__ == "__main__":
    main()
