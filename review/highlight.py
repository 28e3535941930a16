"""Judge quotes located in message text, and the text cut into segments for templates.

A quote is found as the judge's citation matcher found it (rewards/citations.py):
verbatim, else after the same normalisation (case, quote marks, dashes, whitespace),
else by fuzzy alignment. The text is then split at the quote's ends into plain
segments; the template escapes every segment and wraps marked ones in <mark>, so
no model-written character is ever inserted into HTML unescaped.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from rewards.citations import DEFAULT_FUZZY_THRESHOLD, MIN_FUZZY_CHARS, normalise, normalise_quote


@dataclass(frozen=True)
class Segment:
    """A run of message text: plain, inside a highlighted quote (`mark` is its anchor), or prefilled."""

    text: str
    mark: str | None = None
    prefill: bool = False


@dataclass(frozen=True)
class Span:
    """Where a quote lies in a message's text, and the anchor id its highlight gets."""

    start: int
    end: int
    mark: str


def _normalised_with_positions(text: str) -> tuple[str, list[int]]:
    """`normalise(text)` and, for each of its characters, the index in `text` it came from."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for out in normalise(char):
            if out == " " and chars and chars[-1] == " ":
                continue  # whitespace runs collapse, as in normalise()
            chars.append(out)
            origin.append(index)
    return "".join(chars), origin


def locate(quote: str, text: str, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD) -> tuple[int, int] | None:
    """(start, end) of `quote` in `text`, or None when it is not there."""
    if not quote.strip():
        return None
    found = text.find(quote)
    if found >= 0:
        return found, found + len(quote)
    needle = normalise_quote(quote)
    if not needle:
        return None
    haystack, origin = _normalised_with_positions(text)
    at = haystack.find(needle)
    if at >= 0:
        return origin[at], origin[at + len(needle) - 1] + 1
    if len(needle) < MIN_FUZZY_CHARS or not haystack:
        return None
    aligned = fuzz.partial_ratio_alignment(needle, haystack)
    if aligned is None or aligned.score < fuzzy_threshold or aligned.dest_end <= aligned.dest_start:
        return None
    return origin[aligned.dest_start], origin[aligned.dest_end - 1] + 1


def segments(text: str, spans: list[Span], prefill_chars: int = 0) -> list[Segment]:
    """`text` cut at the ends of `spans` (overlaps dropped, first one kept) and of the prefill."""
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.end > span.start and (not kept or span.start >= kept[-1].end):
            kept.append(span)
    cuts = sorted({0, len(text), prefill_chars, *(s.start for s in kept), *(s.end for s in kept)})
    cuts = [c for c in cuts if 0 <= c <= len(text)]
    out: list[Segment] = []
    anchored: set[str] = set()
    for start, end in zip(cuts, cuts[1:]):
        mark = next((s.mark for s in kept if s.start <= start and end <= s.end), None)
        if mark:
            # Only the first piece of a quote (a prefill edge may cut it) carries its anchor.
            first = mark not in anchored
            anchored.add(mark)
            mark = mark if first else ""
        out.append(Segment(text[start:end], mark=mark, prefill=start < prefill_chars))
    return out or [Segment("")]
