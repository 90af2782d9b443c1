# The two commands of the README: `make repro` and `make test`.  Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make test` leaves out the tests marked slow (a few minutes); CI runs them too: `make test SLOW=1`
SLOW ?=
PYTEST_MARKS := $(if $(SLOW),,-m "not slow")
# test processes (pytest-xdist): one per core, each test file on one of them (its module fixtures,
# a trained model or a pipeline run, built once); `make test JOBS=0` runs in one process
JOBS ?= auto

# DVC runs each stage's `python -m stages...` through the shell: the venv's python must come first.
export PATH := $(abspath $(VENV))/bin:$(PATH)

# Nothing may reach a model hub or NLTK's downloader at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export PYTHONHASHSEED := 0

.PHONY: repro repro-real test lint docs dvc-yaml bench setup clean

setup: $(STAMP)

# the pinned set, NeMo's inverse normalizer (the spoken-form round trip; its pynini pin conflicts,
# so without deps), then the project itself (editable: the console command `punct-corpora`, the
# reader plugins and the lexicons package resolve to this checkout)
$(STAMP): requirements.txt requirements-itn.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-itn.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# A trained model's float sums in one order on every x86 CPU, so that the sample model's weights
# match the committed dvc.lock wherever `make repro` runs: one thread, ATen's portable kernels (not
# the AVX2 or AVX-512 ones the CPU would pick), MKL's SSE2 path (its conditional numerical
# reproducibility), oneDNN capped at SSE4.1.  Slower; the sample model is small.
REPRODUCIBLE_CPU := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default \
	ONEDNN_MAX_CPU_ISA=SSE41

# dvc.yaml is generated from the params files: regenerated first, so a params key added is tracked
repro: $(STAMP)
	$(BIN)/python -m stages.dvc_yaml
	$(REPRODUCIBLE_CPU) $(BIN)/dvc repro

repro-real: $(STAMP)
	$(BIN)/python -m stages.dvc_yaml
	$(BIN)/dvc repro real/dvc.yaml

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_MARKS) -n $(JOBS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the documentation site, every warning an error (a broken link, a page missing from the nav)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# what the pipeline regenerates: the ignored files under its output folders (git clean -X), never a
# tracked file (the committed metrics, real/reports/audit.json) nor an untracked one of the user's
OUTPUTS := data reports models real/data real/reports

clean:
	git clean -fdX -- $(OUTPUTS)
