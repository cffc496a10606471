# The README's two commands: `make run` and `make test`. Both create .venv and install what they need,
# saying at each step what it installs (the first install downloads for a minute or two; pip prints a
# line per package). `make run` stops on Ctrl-C or SIGTERM, quietly (tooldeck serve exits 0).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The home `make run` serves (workspaces, records, config).
TOOLDECK_HOME ?= .tooldeck
# bfcl-eval is only test data (its function definitions); its own dependencies (torch, …) are not needed.
BFCL := bfcl-eval==2026.3.23
STEP := @printf '\n==> %s\n'

.PHONY: run test bench lint install node-tools clean

$(BIN)/python:
	$(STEP) "[1/4] creating the virtual environment $(VENV) ($(PYTHON))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(STEP) "[2/4] installing tooldeck (editable) and its test dependencies into $(VENV)"
	$(BIN)/pip install -e '.[test]'
	$(STEP) "[3/4] installing $(BFCL), test data only (--no-deps)"
	$(BIN)/pip install --no-deps '$(BFCL)'
	touch $(STAMP)
	$(STEP) "installed: $(BIN)/tooldeck ($$($(BIN)/tooldeck --version))"

# Checked on every `make install` and `make test` (both scripts do nothing when up to date), so a deleted
# .node/ or an npm installed later is noticed. Without npm or node the scripts stop and say what to install.
node-tools:
	$(STEP) "[4/4] installing the Node MCP servers and the conformance kit the tests drive (needs node and npm)"
	./scripts/install-node-tools
	./scripts/install-conformance

install: $(STAMP) node-tools

run: $(STAMP)
	$(BIN)/tooldeck serve --home $(TOOLDECK_HOME)

# TOOLDECK_REQUIRE_NODE=1: a test that needs Node (server-everything, the conformance kit) fails instead of
# skipping, so a green `make test` means the whole suite ran. Plain `pytest` may still skip them.
# TEST_WORKERS: pytest-xdist workers (--dist loadfile: a file's tests on one worker, so a module-scoped server
# starts once). Four take the suite from 16-19 minutes in one process to 8-9 on two cores (most tests wait on the
# processes they start; past four the suite is CPU-bound). TEST_WORKERS=0: one process, as plain pytest.
TEST_WORKERS ?= 4
test: $(STAMP) node-tools
	$(BIN)/ruff check src tests bench
	TOOLDECK_REQUIRE_NODE=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(STEP) "installing the benchmark peers ([bench] extra)"
	$(BIN)/pip install -e '.[test,bench]'
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

clean:
	rm -rf $(VENV) .pytest_cache
