"""Probe themes: what the auditor asked the target about, as clusters of its messages.

Every distinct probe (`send_message` text) is embedded with the packaged MiniLM and
clustered greedily: probes taken most frequent first (then alphabetically), each joins
the theme whose leader it is nearest, when within `SIMILARITY` (cosine), or starts a new
one. Deterministic across processes, and linear in probes times themes. A theme is
labelled by its most frequent content words (ties alphabetical; a repeated label gets a
number), with an example; a rollout shows `theme:<label>` when one of its probes is in it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from rewards.hypothesis_text import STOPWORDS, words
from traces.load import TracedRollout

SIMILARITY = 0.6
LABEL_WORDS = 3
MIN_ROLLOUTS = 3  # a theme becomes a behaviour when this many rollouts probe it


@dataclass
class Theme:
    label: str
    example: str
    probes: list[str]


def _label(texts: Sequence[str]) -> str:
    # dict.fromkeys, not set: a set's order follows the string hash, which changes per process.
    counts = Counter(w for t in texts for w in dict.fromkeys(words(t.lower())) if w not in STOPWORDS and len(w) > 2)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return " ".join(w for w, _ in ranked[:LABEL_WORDS]) or "(no words)"


def probe_themes(rollouts: Sequence[TracedRollout], encode=None) -> tuple[list[Theme], dict[str, str]]:  # type: ignore[no-untyped-def]
    """The themes, and each probe's theme label. `encode(texts) -> unit vectors` (default: MiniLM)."""
    counts = Counter(p for r in rollouts for p in set(r.probes))
    texts = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if not texts:
        return [], {}
    if encode is None:
        from scaffold.minilm import encode_texts

        def encode(batch):  # type: ignore[no-untyped-def]
            return encode_texts(batch, batch_size=64)

    vectors = encode(texts)
    leaders: list[int] = []
    members: list[list[str]] = []
    for i, text in enumerate(texts):
        best, score = -1, SIMILARITY
        for k, lead in enumerate(leaders):
            s = float(vectors[i] @ vectors[lead])
            if s >= score:
                best, score = k, s
        if best < 0:
            leaders.append(i)
            members.append([text])
        else:
            members[best].append(text)
    themes, seen = [], Counter()
    for m in members:
        label = _label(m)
        seen[label] += 1
        themes.append(Theme(label if seen[label] == 1 else f"{label} ({seen[label]})", m[0], m))
    return themes, {p: t.label for t in themes for p in t.probes}


def theme_behaviours(rollouts: Sequence[TracedRollout], probe_theme: dict[str, str]) -> list[set[str]]:
    """Per rollout, `theme:<label>` for each theme it probed (themes probed by fewer than MIN_ROLLOUTS left out)."""
    found = [{probe_theme[p] for p in r.probes if p in probe_theme} for r in rollouts]
    support = Counter(label for f in found for label in f)
    return [{f"theme:{label}" for label in f if support[label] >= MIN_ROLLOUTS} for f in found]
