# Every target creates the virtualenv it needs, so a fresh clone works with plain `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCK := requirements.lock

.PHONY: venv test lint format demo e2e e2e-upstream cluster-up cluster-down bench bench-full clean

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint $(LOCK) -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## The unit, property and contract tests (no cluster needed).
test: $(STAMP)
	$(PY) -m pytest tests

## ruff, mypy --strict and the import-linter layer contracts.
lint: $(STAMP)
	$(VENV)/bin/ruff check operator tests e2e bench differential doccharts examples
	$(VENV)/bin/ruff format --check operator tests e2e bench differential doccharts examples
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy examples/plugins/*/*.py
	$(VENV)/bin/lint-imports
	$(VENV)/bin/hadolint Dockerfile

format: $(STAMP)
	$(VENV)/bin/ruff format operator tests e2e bench differential doccharts examples
	$(VENV)/bin/ruff check --fix operator tests e2e bench differential doccharts examples

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

## The scenarios that take `scheduler_name` (volumes, devices, preemption bursts and takeovers) against
## upstream kube-scheduler v1.34.10 on the same control plane: the expectations the e2e suite
## holds kopf-scheduler to are what upstream does.
e2e-upstream: $(STAMP)
	E2E_SCHEDULER=upstream $(PY) -m pytest e2e/test_volumes.py e2e/test_preemption.py \
		e2e/test_dra.py -k "test_volumes or test_dra or burst or takeover"

## Gang scheduling (Coscheduling, PodGroups) with a second kopf-scheduler whose profile enables
## it: all or nothing, no deadlock, group preemption, the Coscheduling guide's workload.
.PHONY: e2e-gangs
e2e-gangs: $(STAMP)
	$(PY) -m pytest e2e/test_gangs.py -m gangs

## The chart and the manifests on a real node (kubelet + containerd, as root) of a control plane
## of its own: real replicas, leader election and a handover (e2e/test_real_node.py). Builds the
## kubelet into ~/.cache/kopf-scheduler and installs containerd from Debian when missing.
.PHONY: e2e-real-node
e2e-real-node: $(STAMP)
	$(PY) -m pytest e2e/test_real_node.py -m real_node -s

## The fault-injection suite (e2e/faults/, docs/reliability.md) on a control plane of its own in
## /tmp/lc-faults-*: the API server killed, etcd stalled, watches expired, API errors and latency
## through a proxy, a leader partitioned, killed mid-preemption or paused, and a short churn soak
## (FAULTS_SOAK_MINUTES). Figures in $$E2E_FAULTS_RESULTS (default /tmp/kopf-faults/results).
.PHONY: e2e-faults soak
FAULTS_SOAK_MINUTES ?= 2
e2e-faults: $(STAMP)
	SOAK_MINUTES=$(FAULTS_SOAK_MINUTES) E2E_FAULTS_COMMAND="make e2e-faults" \
		$(PY) -m pytest e2e/faults -m faults

## The churn soak alone at full length: pods created and deleted at ~100/s for SOAK_MINUTES
## (default 30); RSS must stay flat, and afterwards nothing may stay pending or assumed, nor cached
## beyond the API's pods. Never part of CI at this length.
SOAK_MINUTES ?= 30
soak: $(STAMP)
	SOAK_MINUTES=$(SOAK_MINUTES) E2E_FAULTS_COMMAND="make soak SOAK_MINUTES=$(SOAK_MINUTES)" \
		$(PY) -m pytest e2e/faults/test_soak.py -m faults

## Benchmarks beside upstream kube-scheduler, recorded in docs/benchmarks.md and bench/results/:
## in-process S1, S4 and a scaled S2, plus end-to-end S1 when the local cluster is built.
bench: $(STAMP)
	$(PY) -m bench quick

## scheduler_perf's own workloads (v1.34.10's performance-config.yaml files, unmodified) with
## both schedulers on the local control plane; BENCH_UPSTREAM_ARGS chooses them (`--list` shows
## all, with what keeps a workload from running).
BENCH_UPSTREAM_ARGS ?= --label integration-test --out /tmp/kopf-bench-upstream.json
.PHONY: bench-upstream
bench-upstream: $(STAMP)
	$(PY) -m bench upstream $(BENCH_UPSTREAM_ARGS)

## All of scheduler_perf's `performance` workloads (hours): smallest first, going on from the
## workloads SCHEDULER_PERF_RESULTS already holds, then that file as the table in
## docs/benchmarks.md and docs/images/scheduler-perf-ratios.svg, even when a workload failed.
SCHEDULER_PERF_RESULTS ?= bench/results/scheduler-perf-performance.json
.PHONY: bench-upstream-performance
bench-upstream-performance: $(STAMP)
	$(PY) -m bench upstream --label performance --smallest-first --resume \
		--out $(SCHEDULER_PERF_RESULTS); status=$$?; \
		$(PY) -m bench upstream --report $(SCHEDULER_PERF_RESULTS) && exit $$status

## For CI: a slice of scheduler_perf's integration-test workloads that together use every op the
## runner carries out, both schedulers, on a control plane of its own (LOCALCLUSTER_DIR); fails
## when a pod of either scheduler is left unscheduled or an op fails (about 4 minutes).
BENCH_UPSTREAM_CI_WORKLOADS ?= SchedulingBasic/5Nodes SchedulingWhileGated/1Node_10GatedPods \
	PreemptionAsync/5Nodes SchedulingWithMixedChurn/10Nodes \
	SchedulingRequiredPodAntiAffinityWithNSSelector/10Nodes \
	SchedulingDeletedPodsWithFinalizers/10Node_100DeletingPods SchedulingCSIPVs/5Nodes \
	SchedulingWithResourceClaimTemplate/fast SteadyStateClusterResourceClaimTemplate/fast \
	EventHandlingPodUpdate/1Node_10Pods
.PHONY: bench-upstream-ci
bench-upstream-ci: $(STAMP)
	$(PY) -m bench upstream $(addprefix --workload ,$(BENCH_UPSTREAM_CI_WORKLOADS)) \
		--out /tmp/kopf-bench-upstream-ci.json

## All six scenarios in-process and end to end (long; see docs/benchmarks.md for the scaling).
bench-full: $(STAMP)
	$(PY) -m bench full

## The differential suite against kube-scheduler v1.34.10, on a control plane of its own: the
## seeds SEEDS of both profiles; the counts and every divergence go to docs/fidelity.md (about a
## minute a scenario).
.PHONY: differential differential-ci
SEEDS ?= 1-50
differential: $(STAMP)
	$(PY) -m differential campaign --seeds $(SEEDS) --command-line "make differential SEEDS=$(SEEDS)"

## For CI: the saved cases of differential/cases/ and a short campaign of CI_SEEDS (report in
## /tmp/kopf-differential); fails on a true divergence or a failing case. The default seed is
## one whose scenarios kube-scheduler has played the same way every time: where its own runs
## can disagree (preemption-2 picks among equal nodes), upstream runs that happen to agree would
## read as a divergence of ours.
CI_SEEDS ?= 1
differential-ci: $(STAMP)
	$(PY) -m differential ci --seeds $(CI_SEEDS) --command-line "make differential-ci"

## requirements.lock: the exact versions of every runtime and dev dependency, resolved by
## pip-compile from pyproject.toml; the image and the venv install them.
## `make lock PIP_COMPILE_ARGS=--upgrade` moves every pin to the newest allowed version.
.PHONY: lock version image
PIP_COMPILE_ARGS ?=
lock:
	test -x $(VENV)/bin/pip-compile \
		|| { $(PYTHON) -m venv $(VENV) && $(PY) -m pip install --quiet 'pip-tools>=7.4,<8'; }
	CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile --quiet --extra dev \
		--strip-extras --no-emit-index-url --no-emit-find-links $(PIP_COMPILE_ARGS) \
		--output-file $(LOCK) pyproject.toml

## The version, from pyproject.toml: the one place it is written.
version:
	@$(PYTHON) -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])'

## The image kopf-scheduler:<version>, with a Docker engine from Debian's archive when none
## runs (installing and starting it need root) and a locally made base when the public one
## cannot be pulled: scripts/image/.
image:
	scripts/image/engine.sh
	scripts/image/build.sh

## helm, built from its Go module into ~/.cache/kopf-scheduler (only when missing); prints its path.
.PHONY: helm chart-test
helm: $(STAMP)
	$(PY) -m e2e.localcluster helm

## The chart's tests: `helm lint --strict` and the `helm template` goldens of every value
## combination in tests/chart/values/ (UPDATE_GOLDENS=1 rewrites the goldens). The server
## dry run and a real install are e2e/test_chart.py, in `make e2e`.
chart-test: helm
	$(PY) -m pytest tests/chart

## A real Prometheus (built from its Go module into ~/.cache/kopf-scheduler when missing) scrapes
## a running scheduler through its TokenReview/SubjectAccessReview guard with a ServiceAccount
## token; every query of every dashboard panel must return data (e2e/test_prometheus.py).
.PHONY: e2e-prometheus
e2e-prometheus: $(STAMP)
	$(PY) -m e2e.localcluster prometheus
	$(PY) -m pytest e2e/test_prometheus.py -m prometheus

## The chart's alert rules and dashboard queries read by Prometheus's own promtool (built from
## its Go module into ~/.cache/kopf-scheduler when missing): `promtool check rules`, the unit
## tests of every alert in tests/prometheus/alerts.test.yaml, every dashboard query parsed.
.PHONY: promtool-test
promtool-test: $(STAMP)
	$(PY) -m e2e.localcluster promtool
	$(PY) -m pytest tests/prometheus

## The HTML reports (`capacity -o html`) in a real browser: Debian's chromium, installed from
## Debian's archive when missing (scripts/browser/chromium.sh, as root), driven by Playwright;
## here a missing browser fails the run instead of skipping the tests as `make test` does.
.PHONY: report-test
report-test: $(STAMP)
	scripts/browser/chromium.sh
	REPORT_TEST_NEEDS_BROWSER=1 $(PY) -m pytest tests/report -m browser

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
