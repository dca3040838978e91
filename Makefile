# Every target creates the virtualenv it needs, so a fresh clone works with plain `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test lint format demo e2e cluster-up cluster-down bench bench-full clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest tests

lint: $(STAMP)
	$(VENV)/bin/ruff check operator tests e2e bench
	$(VENV)/bin/ruff format --check operator tests e2e bench
	$(VENV)/bin/mypy
	cd operator && ../$(VENV)/bin/lint-imports --config ../pyproject.toml

format: $(STAMP)
	$(VENV)/bin/ruff format operator tests e2e bench
	$(VENV)/bin/ruff check --fix operator tests e2e bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
