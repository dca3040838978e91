# Every target creates the virtualenv it needs, so a fresh clone works with plain `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test lint format demo e2e e2e-upstream cluster-up cluster-down bench bench-full clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## The unit, property and contract tests (no cluster needed).
test: $(STAMP)
	$(PY) -m pytest tests

## ruff, mypy --strict and the import-linter layer contracts.
lint: $(STAMP)
	$(VENV)/bin/ruff check operator tests e2e bench
	$(VENV)/bin/ruff format --check operator tests e2e bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/hadolint Dockerfile

format: $(STAMP)
	$(VENV)/bin/ruff format operator tests e2e bench
	$(VENV)/bin/ruff check --fix operator tests e2e bench

## The bundled preemption demo on the in-memory cluster, with explanations.
demo: $(STAMP)
	$(VENV)/bin/kopf-scheduler simulate --explain

## A local control plane (etcd, kube-apiserver, controller-manager, kwok) built from Go modules.
cluster-up: $(STAMP)
	$(PY) -m e2e.localcluster up

cluster-down: $(STAMP)
	$(PY) -m e2e.localcluster down

## The end-to-end suite against $$KUBECONFIG, or the local control plane when it is up.
e2e: $(STAMP)
	$(PY) -m pytest e2e

## The volume scenarios against upstream kube-scheduler v1.34.10 on the same control plane: the
## expectations the e2e suite holds kopf-scheduler to are what upstream does.
e2e-upstream: $(STAMP)
	E2E_SCHEDULER=upstream $(PY) -m pytest e2e/test_volumes.py

## Benchmarks beside upstream kube-scheduler, recorded in docs/benchmarks.md and bench/results/:
## in-process S1, S4 and a scaled S2, plus end-to-end S1 when the local cluster is built.
bench: $(STAMP)
	$(PY) -m bench quick

## All six scenarios in-process and end to end (long; see docs/benchmarks.md for the scaling).
bench-full: $(STAMP)
	$(PY) -m bench full

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
