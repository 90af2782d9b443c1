# The two commands of the README: `make repro` and `make test`.  Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make test` leaves out the tests marked slow (a few minutes); CI runs them too: `make test SLOW=1`
SLOW ?=
PYTEST_MARKS := $(if $(SLOW),,-m "not slow")

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

# dvc.yaml is generated from the params files: regenerated first, so a params key added is tracked
repro: $(STAMP)
	$(BIN)/python -m stages.dvc_yaml
	$(BIN)/dvc repro

repro-real: $(STAMP)
	$(BIN)/python -m stages.dvc_yaml
	$(BIN)/dvc repro real/dvc.yaml

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_MARKS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the docs site into site/; --strict turns a broken link or a page missing from the nav into an error
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# what the pipeline regenerates: the ignored files under its output folders (git clean -X), never a
# tracked file (the committed metrics, real/reports/audit.json) nor an untracked one of the user's
OUTPUTS := data reports models real/data real/reports

clean:
	git clean -fdX -- $(OUTPUTS)
