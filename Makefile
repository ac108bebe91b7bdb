# perfsuite developer entry points. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# torch is pinned to the CPU build that lies on this project's machines; an unpinned torch
# would download a multi-GB CUDA build. TORCH is pip arguments, so it may name an index too.
TORCH ?= torch==2.13.0
# The CPU build of TensorFlow, so the TensorFlow tests run in CI (docs/tensorflow.md).
TENSORFLOW ?= tensorflow-cpu==2.21.0

.PHONY: setup demo test lint bench fuzz gpu-evidence clean

# pip byte-compiles every module it installs: about a minute of one core for torch, TensorFlow
# and Ray, most of which no program imports. It is skipped (uv's default too) and Python caches
# the bytecode of what is imported, on first import; except where the environment forbids that
# cache (PYTHONDONTWRITEBYTECODE), where every import would compile its source again.
PIP_COMPILE := $(if $(PYTHONDONTWRITEBYTECODE),--compile,--no-compile)

$(STAMP): pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check $(PIP_COMPILE) \
	  $(TORCH) -e '.[capture,test,ray,ncu,mlperf,history]' "$(TENSORFLOW)"
	touch $(STAMP)

setup: $(STAMP)

# Main job on the embedded default: train `digits` to 98% under instrumentation, then print
# its roofline and write a shareable HTML report.
demo: setup
	@run_dir=$$($(BIN)/perfsuite run digits) && \
	echo "run folder: $$run_dir" && \
	$(BIN)/perfsuite roofline "$$run_dir" && \
	$(BIN)/perfsuite report "$$run_dir" -o reports/demo.html && \
	echo "report: reports/demo.html"

# Two pytest-xdist workers: one per core of the CI machine. Each test file stays on one worker
# and files that share a slow session fixture share one (tests/conftest.py); TEST_WORKERS=0
# runs everything in one process.
TEST_WORKERS ?= 2
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The property-based fuzz suite at full length (CI runs it with 40 cases per target).
FUZZ_EXAMPLES ?= 10000
fuzz: setup
	PERFSUITE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_fuzz.py

bench: setup
	$(BIN)/python -m bench

# The GPU figures in one command, about 12 minutes on one H100 (docs/gpu-evidence.md); writes
# docs/results/<date>-<device>.md and .json. Not the setup venv: a GPU machine brings its own
# CUDA build of PyTorch (setup pins the CPU one), so the checkout is installed (editable, no
# dependencies fetched) into $(GPU_VENV), a venv that sees $(PY)'s packages: built with the
# machine's own setuptools where it can (no network needed), else with PyPI's.
# GPU_EVIDENCE_ARGS=--dry-run runs every section at toy size on a CPU.
GPU_VENV ?= .venv-gpu
GPU_PIP = $(GPU_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-deps
gpu-evidence:
	$(PY) -m venv --system-site-packages $(GPU_VENV)
	$(GPU_PIP) --no-build-isolation -e . 2>/dev/null || $(GPU_PIP) -e .
	$(GPU_VENV)/bin/python -m bench gpu_evidence $(GPU_EVIDENCE_ARGS)

clean:
	rm -rf .pytest_cache .ruff_cache build dist *.egg-info $(GPU_VENV)
