"""What reading a situation costs a target turn: the situation reader against the keyword trigger it
replaced, on the same fresh prompts, in one run (milliseconds per uncached turn, and the ratio).

    python benchmarks/situation_trigger_speed.py

The keyword trigger is rebuilt from git history's pattern (cooking's, stop 41); the reader is the
committed one. A verdict is cached per text, so a replayed audit or a long conversation pays once
per distinct turn; this measures the first reading.
"""

from __future__ import annotations

import statistics
import time

from scaffold.messages import Message
from targets.grammar.checks import FRESH_PATH
from targets.grammar.situation_reader import load_situation_reader
from targets.grammar.situations import load_situation_prompts
from targets.simulated import PatternTrigger, pattern_trigger

KEYWORDS = PatternTrigger(topic=[r"\w*cook(?:s|ing|ed)?", "risotto", "recipes?", r"bak(?:e|es|ing|ed)",
                                 r"roast(?:s|ing|ed)?", r"simmer(?:ing)?", "oven", "marinade", "pasta", "soup",
                                 "dinner", "frying pan", "dough"])


def per_turn_ms(trigger, texts: list[str], clear=None) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for text in texts:
        if clear is not None:
            clear()
        started = time.perf_counter()
        trigger([Message(role="user", content=text)])
        out.append(1000 * (time.perf_counter() - started))
    return out


def main() -> None:
    texts = [t for p in load_situation_prompts(FRESH_PATH).values() for t in (*p.in_situation, *p.near_miss)]
    reader = load_situation_reader()
    reading = pattern_trigger(PatternTrigger(situation="cooking"))
    reading([Message(role="user", content="warm up")])
    keywords = pattern_trigger(KEYWORDS)
    read_ms = per_turn_ms(reading, texts, clear=reader._probabilities.cache_clear)
    key_ms = per_turn_ms(keywords, texts)
    per_turn_ms(reading, texts)  # every text read once, so the next pass finds each in the cache
    cached_ms = per_turn_ms(reading, texts)
    for name, ms in (("keyword trigger", key_ms), ("situation reader, first reading", read_ms),
                     ("situation reader, cached", cached_ms)):
        print(f"{name:34s} median {statistics.median(ms):8.3f} ms   p95 {sorted(ms)[int(0.95 * len(ms))]:8.3f} ms")
    print(f"first reading / keyword trigger: {statistics.median(read_ms) / statistics.median(key_ms):.0f}x "
          f"({len(texts)} fresh prompts)")


if __name__ == "__main__":
    main()
