# The README's two commands: `make run` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# bfcl-eval is only test data (its function definitions); its own dependencies (torch, …) are not needed.
BFCL := bfcl-eval==2026.3.23

.PHONY: run test bench lint install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/pip install --quiet --no-deps '$(BFCL)'
	@for script in scripts/install-node-tools scripts/install-conformance; do \
		if [ -x $$script ]; then ./$$script || exit 1; fi; \
	done
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tooldeck serve --home .tooldeck

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

clean:
	rm -rf $(VENV) .pytest_cache
