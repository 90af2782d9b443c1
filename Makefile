# The two commands of the README: `make repro` and `make test`.  Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# DVC runs each stage's `python -m stages...` through the shell: the venv's python must come first.
export PATH := $(abspath $(VENV))/bin:$(PATH)

# Nothing may reach a model hub or NLTK's downloader at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export PYTHONHASHSEED := 0

.PHONY: repro repro-real test bench setup clean

setup: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

repro: $(STAMP)
	$(BIN)/dvc repro

repro-real: $(STAMP)
	$(BIN)/dvc repro real/dvc.yaml

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf data reports real/data real/reports
