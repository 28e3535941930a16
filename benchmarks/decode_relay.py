"""The decode loop with and without re-laying its batch (finished rows leave, padding is squeezed out).

`scaffold.providers.decode` re-lays the batch's KV cache when that would leave fewer than
`COMPACT_BELOW` of its cells: rows that finished stop riding along in every pass, and the
padding that unequal chunks leave between a row's tokens goes. This prints, in one run on the
packaged SmolLM2 and after a warm-up, N concurrent constrained replies
(benchmarks/provider_replies.py) decoded never re-laying and re-laying: seconds, passes,
re-lays, rows a pass, padding, the ratio, and whether both sampled the same ids.

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
    concurrent_replies(2, 32)  # warm-up (thread pools, allocator, grammar masks): no setting pays it alone
    runs = {}
    for name, threshold in (("never", 0.0), ("re-lay", default)):
        decode.COMPACT_BELOW = threshold  # decode_batch reads it at each call
        runs[name] = concurrent_replies(args.replies, args.max_tokens)
    decode.COMPACT_BELOW = default
    for name, (seconds, records, chat) in runs.items():
        stats = chat.decode_stats.take()
        tokens = sum(len(r.completion_ids) for r in records)
        print(f"{name:<7} {seconds:7.1f} s   {stats['passes']} passes   {stats['relays']} re-lays   "
              f"{stats['rows_per_pass']:.1f} rows a pass   padding {stats['padding_share']:.0%}   "
              f"{len(records)} replies, {tokens} ids")
    (never_s, never, _), (relay_s, relaid, _) = runs["never"], runs["re-lay"]
    same = [r.completion_ids for r in never] == [r.completion_ids for r in relaid]
    print(f"ratio never / re-lay: {never_s / relay_s:.2f}x   same ids: {same}   re-lay threshold {default}")


if __name__ == "__main__":
    main()
