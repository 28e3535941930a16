"""The decode loop's padding levers, side by side: re-laying the batch, and a trainer's sampler.

`scaffold.providers.decode` re-lays the batch's KV cache when fewer than `COMPACT_BELOW` of
its cells would remain: rows that finished stop riding along in every pass, and the padding
that unequal chunks leave between a row's tokens goes. A sampler that does not score forced ids
(`score_forced=False`, as training's) also reads long chunks in parts (`pass_width`). This prints,
in one run on the packaged SmolLM2, N concurrent constrained replies
(benchmarks/provider_replies.py) decoded never re-laying, re-laying, and re-laying without
scoring forced ids: seconds, passes, re-lays, padding, the ratios, and whether all sampled the
same ids.

    python benchmarks/decode_relay.py [--replies 16] [--max-tokens 640]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

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
    settings = {"never": (0.0, True), "re-lay": (default, True), "re-lay, forced unscored": (default, False)}
    runs = {}
    for name, (threshold, score_forced) in settings.items():
        decode.COMPACT_BELOW = threshold  # decode_batch reads it at each call

        def configure(chat: Any, score_forced: bool = score_forced) -> None:
            chat.score_forced = score_forced

        runs[name] = concurrent_replies(args.replies, args.max_tokens, configure)
    decode.COMPACT_BELOW = default
    for name, (seconds, records, chat) in runs.items():
        stats = chat.decode_stats.take()
        tokens = sum(len(r.completion_ids) for r in records)
        print(f"{name:<24} {seconds:7.1f} s   {stats['passes']} passes   {stats['relays']} re-lays   "
              f"{stats['rows_per_pass']:.1f} rows a pass   padding {stats['padding_share']:.0%}   "
              f"{len(records)} replies, {tokens} ids")
    never_s, never, _ = runs["never"]
    for name, (seconds, records, _) in list(runs.items())[1:]:
        same = [r.completion_ids for r in never] == [r.completion_ids for r in records]
        print(f"ratio never / {name}: {never_s / seconds:.2f}x   same ids: {same}")

if __name__ == "__main__":
    main()
