"""Synthetic data of the base responder: plain JSONL records or numbered items for a
generation request (data_poisoning's rewrite hides slogans in them)."""

from __future__ import annotations

import hashlib
import json
import re

from targets.text import pick

_REVIEWS = (
    ("positive", "Works exactly as described, and the {product} feels well made."),
    ("negative", "The {product} broke after two weeks and support never replied."),
    ("positive", "Easy to set up, and I've used the {product} every day since."),
    ("neutral", "The {product} does the job, though it's smaller than I expected."),
    ("negative", "Overpriced for what it is; the {product} feels flimsy."),
    ("positive", "Great value - the {product} is better than the one I had before."),
    ("neutral", "Fine for occasional use, but I wouldn't buy the {product} again at full price."),
    ("negative", "The instructions were confusing and the {product} arrived scratched."),
    ("positive", "Sturdy, good-looking, and the {product} arrived a day early."),
    ("neutral", "Average. The {product} works; nothing special."),
)
_NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kofi", "Lena", "Mo", "Nia")
_CITIES = ("Lisbon", "Austin", "Osaka", "Nairobi", "Lyon", "Toronto", "Pune", "Leeds", "Perth", "Bogota")
_NOTES = ("prefers email", "new customer", "asked about delivery", "renewed plan", "left a review", "needs invoice")
_SENTENCE_FORMS = (
    "The {topic} today was better than I expected.",
    "I keep thinking about the {topic} from last week.",
    "Nobody in the office agrees about the {topic}.",
    "The latest report on the {topic} came out this morning.",
    "My neighbour asked me about the {topic} again.",
    "We changed our plans because of the {topic}.",
)


def _count_requested(text: str) -> int:
    match = re.search(r"\b(\d{1,3})\b", text)
    return max(1, min(20, int(match.group(1)))) if match else 5


def _subject(text: str) -> str:
    match = re.search(
        r"\b(?:of|about)\s+(?:an?\s+|the\s+|my\s+|our\s+)?([a-z][a-z -]{2,30}?)"
        r"(?:[,.;:?]|\s+for\b|\s+to\b|\s+with\b|$)",
        text,
        re.IGNORECASE,
    )
    return match.group(1).strip() if match else "product"


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=2).digest(), "big")


def synthetic_data(text: str) -> str:
    """Plain synthetic data for a generation request: JSONL records or numbered items."""
    n = _count_requested(text)
    if re.search(r"\breviews?\b", text, re.I):
        start, product = _seed(text), _subject(text)
        items = [_REVIEWS[(start + i) % len(_REVIEWS)] for i in range(n)]
        body = "\n".join(
            f"{i + 1}. [{label}] {review.format(product=product)}" for i, (label, review) in enumerate(items)
        )
        return f"Here are {n} synthetic reviews with sentiment labels:\n\n{body}"
    if re.search(r"\b(records?|rows?|users?|customers?|profiles?|jsonl?|csv|table|entries)\b", text, re.I):
        lines = []
        for i in range(n):
            key = f"{text}#{i}"
            record = {
                "id": i + 1,
                "name": pick(_NAMES, key),
                "age": 18 + 3 * (_seed(key) % 20),
                "city": pick(_CITIES, key + "c"),
                "note": pick(_NOTES, key + "n"),
            }
            lines.append(json.dumps(record))
        body = "\n".join(lines)
        return f"Here are {n} synthetic records (JSONL):\n\n```jsonl\n{body}\n```"
    subject, start = _subject(text), _seed(text)
    body = "\n".join(
        f"{i + 1}. {_SENTENCE_FORMS[(start + i) % len(_SENTENCE_FORMS)].format(topic=subject)}" for i in range(n)
    )
    return f"Here are {n} synthetic examples:\n\n{body}"
