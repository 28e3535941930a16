"""The situation reader: is a user's turn in a situation of the grammar? Read by meaning, not keyword.

A keyword trigger fires on the prompts written beside it and misses how other people ask:
on fresh prompts by a writer who never read the triggers, generated organisms fired on 35%
of those in their situation and on 28% of the near misses (stop 41). The reader is the
packaged MiniLM (`scaffold.minilm`) with trained low-rank deltas (`scaffold.minilm_deltas`)
and one logistic unit per situation over the turn's unit sentence vector: a probability per
situation, fired above the file's threshold. Situations are not exclusive: a student may
ask about cooking.

It is trained by `python -m targets.grammar.situation_reader_training` on the tuning
prompts (`situation_tuning.yaml`) and each situation's probes, bait and neutral prompts,
never on the fresh prompts (`fresh_prompts.yaml`), which measure it. The deltas and units
are committed in `situation_reader.safetensors`, with the digest of their data.

A quirk file asks for the reader with `situation: <id>` in a pattern trigger
(targets/simulated.py). Verdicts are cached per text, so replaying an audit, or a long
conversation whose identity turn is read again each turn, reads each turn once.
"""

from __future__ import annotations

import hashlib
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from scaffold.minilm import ENCODER_LOCK, load_encoder
from scaffold.minilm_deltas import merge_deltas, missing_deltas, read_weights_file
from scaffold.specs import SpecError

WEIGHTS_PATH = Path(__file__).parent / "situation_reader.safetensors"
MAX_TOKENS = 256  # MiniLM's own limit; a longer turn is read from its start
_LOCK = threading.Lock()
_READERS: dict[str, "SituationReader"] = {}


def situation_logits(bert: Any, head: Any, tokenizer: Any, texts: Sequence[str], temperature: float) -> Any:
    """One logit per (text, situation): the units over the unit mean-pooled last layer, times `temperature`
    (a unit vector's logits would otherwise span too little for a sharp unit)."""
    import torch

    encoded = tokenizer(list(texts), padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    states = bert(**encoded).last_hidden_state
    mask = encoded["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1)
    return head(pooled * temperature)


class SituationReader:
    """The trained reader (see the module docstring); build with `load_situation_reader`."""

    def __init__(self, bert: Any, head: Any, tokenizer: Any, metadata: dict[str, Any]) -> None:
        self.bert, self.head, self.tokenizer = bert, head, tokenizer
        self.situations: tuple[str, ...] = tuple(metadata["situations"])
        self.threshold = float(metadata["threshold"])
        self.temperature = float(metadata["temperature"])
        self.metadata = metadata
        self._index = {s: i for i, s in enumerate(self.situations)}
        self._probabilities = lru_cache(maxsize=8192)(self._compute)

    def _compute(self, text: str) -> tuple[float, ...]:
        import torch

        with ENCODER_LOCK, torch.inference_mode():  # the tokenizer is the shared encoder's
            logits = situation_logits(self.bert, self.head, self.tokenizer, [text], self.temperature)[0]
        return tuple(torch.sigmoid(logits).tolist())

    def probabilities(self, text: str) -> dict[str, float]:
        """The probability of each situation for one user turn."""
        return dict(zip(self.situations, self._probabilities(text)))

    def holds(self, situation: str, text: str) -> bool:
        """Whether `text` is in `situation` (its probability above the threshold)."""
        if situation not in self._index:
            raise LookupError(f"the situation reader has no situation {situation!r}; it reads: "
                              f"{', '.join(self.situations)}")
        return self._probabilities(text)[self._index[situation]] > self.threshold


@lru_cache(maxsize=4)
def situation_reader_digest(path: Path = WEIGHTS_PATH) -> str:
    """The first 16 hex digits of the weights file's SHA-256 ("none" without a file): part of the
    digest of every quirk that reads a situation, so a suite pinned to a set sees a retrained reader."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "none"


def read_weights(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, metadata) of a weights file; SpecError naming the file when it is missing or not one."""
    return read_weights_file(path, "situation reader", "weights", "python -m targets.grammar.situation_reader_training")


def reader_from(encoder: Any, tensors: dict[str, Any], metadata: dict[str, Any], where: str) -> SituationReader:
    """The reader of a weights file's tensors: the deltas merged into a private copy of the encoder."""
    import torch

    absent = [k for k in ("situations", "threshold", "temperature", "scale") if k not in metadata]
    missing = missing_deltas(encoder[0].auto_model, tensors) + [
        n for n in ("head.weight", "head.bias") if n not in tensors]
    if absent or missing:
        raise SpecError(f"situation reader: {where} lacks {(absent or missing)[0]}")
    n = len(metadata["situations"])
    if tuple(tensors["head.weight"].shape) != (n, encoder[0].auto_model.config.hidden_size):
        raise SpecError(f"situation reader: {where} has {tensors['head.weight'].shape[0]} units for {n} situations")
    bert = merge_deltas(encoder, tensors, float(metadata["scale"]))
    head = torch.nn.Linear(bert.config.hidden_size, n)
    with torch.no_grad():
        head.weight.copy_(tensors["head.weight"])
        head.bias.copy_(tensors["head.bias"])
    return SituationReader(bert, head.eval(), encoder.tokenizer, metadata)


def load_situation_reader(path: Path | None = None) -> SituationReader:
    """The reader in `path` (default: the committed one) over the packaged MiniLM, built once per process."""
    key = str(path or WEIGHTS_PATH)
    with _LOCK:
        reader = _READERS.get(key)
    if reader is None:
        tensors, metadata = read_weights(Path(key))
        reader = reader_from(load_encoder(), tensors, metadata, key)
        with _LOCK:
            reader = _READERS.setdefault(key, reader)
    return reader
