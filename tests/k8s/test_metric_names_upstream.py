"""Every metric family on our /metrics has the name, type and label names kube-scheduler v1.34.10
exports under that name, so dashboards and alerts written for kube-scheduler work unchanged; the
few metrics of our own carry the ``kopf_scheduler_`` prefix and no stability level, so none passes
for upstream's.

The table below is upstream's, written down from the sources (paths under the Go module cache:
``k8s.io/kubernetes@v1.34.10``, ``k8s.io/component-base@v0.34.10``,
``github.com/prometheus/client_golang``) and checked against a running kube-scheduler v1.34.10's
/metrics. Note v1.34 removed ``scheduler_scheduler_cache_size`` in favour of
``scheduler_cache_size`` (CHANGELOG-1.34, kubernetes#131425).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.metrics import PrometheusMetrics

SCHEDULER = "kubernetes pkg/scheduler/metrics/metrics.go"
REST_CLIENT = "component-base metrics/prometheus/restclient/metrics.go"
LEADER_ELECTION = "component-base metrics/prometheus/clientgo/leaderelection/metrics.go"
PROCESS = "client_golang prometheus/process_collector*.go, via component-base legacyregistry"


@dataclass(frozen=True)
class Upstream:
    kind: str
    labels: frozenset[str]
    source: str


def _u(kind: str, labels: tuple[str, ...], source: str) -> Upstream:
    return Upstream(kind, frozenset(labels), source)


UPSTREAM: dict[str, Upstream] = {
    "scheduler_schedule_attempts_total": _u("counter", ("result", "profile"), SCHEDULER),
    "scheduler_scheduling_attempt_duration_seconds": _u(
        "histogram", ("result", "profile"), SCHEDULER
    ),
    "scheduler_scheduling_algorithm_duration_seconds": _u("histogram", (), SCHEDULER),
    "scheduler_event_handling_duration_seconds": _u("histogram", ("event",), SCHEDULER),
    "scheduler_preemption_victims": _u("histogram", (), SCHEDULER),
    "scheduler_preemption_attempts_total": _u("counter", (), SCHEDULER),
    "scheduler_pending_pods": _u("gauge", ("queue",), SCHEDULER),
    "scheduler_inflight_events": _u("gauge", ("event",), SCHEDULER),
    "scheduler_goroutines": _u("gauge", ("operation",), SCHEDULER),
    "scheduler_pod_scheduling_sli_duration_seconds": _u("histogram", ("attempts",), SCHEDULER),
    "scheduler_pod_scheduling_attempts": _u("histogram", (), SCHEDULER),
    "scheduler_framework_extension_point_duration_seconds": _u(
        "histogram", ("extension_point", "status", "profile"), SCHEDULER
    ),
    "scheduler_plugin_execution_duration_seconds": _u(
        "histogram", ("plugin", "extension_point", "status"), SCHEDULER
    ),
    "scheduler_queueing_hint_execution_duration_seconds": _u(
        "histogram", ("plugin", "event", "hint"), SCHEDULER
    ),
    "scheduler_queue_incoming_pods_total": _u("counter", ("queue", "event"), SCHEDULER),
    "scheduler_permit_wait_duration_seconds": _u("histogram", ("result",), SCHEDULER),
    "scheduler_cache_size": _u("gauge", ("type",), SCHEDULER),
    "scheduler_unschedulable_pods": _u("gauge", ("plugin", "profile"), SCHEDULER),
    "scheduler_plugin_evaluation_total": _u(
        "counter", ("plugin", "extension_point", "profile"), SCHEDULER
    ),
    "scheduler_preemption_goroutines_duration_seconds": _u("histogram", ("result",), SCHEDULER),
    "scheduler_preemption_goroutines_execution_total": _u("counter", ("result",), SCHEDULER),
    "rest_client_requests_total": _u("counter", ("code", "method", "host"), REST_CLIENT),
    "rest_client_request_duration_seconds": _u("histogram", ("verb", "host"), REST_CLIENT),
    "leader_election_master_status": _u("gauge", ("name",), LEADER_ELECTION),
    "leader_election_slowpath_total": _u("counter", ("name",), LEADER_ELECTION),
    "process_cpu_seconds_total": _u("counter", (), PROCESS),
    "process_open_fds": _u("gauge", (), PROCESS),
    "process_max_fds": _u("gauge", (), PROCESS),
    "process_virtual_memory_bytes": _u("gauge", (), PROCESS),
    "process_virtual_memory_max_bytes": _u("gauge", (), PROCESS),
    "process_resident_memory_bytes": _u("gauge", (), PROCESS),
    "process_start_time_seconds": _u("gauge", (), PROCESS),
    "process_network_receive_bytes_total": _u("counter", (), PROCESS),
    "process_network_transmit_bytes_total": _u("counter", (), PROCESS),
}


def exported_families() -> dict[str, tuple[str, frozenset[str]]]:
    """Name → (type, label names) of every family on /metrics, each labelled one given a value."""
    metrics = PrometheusMetrics()
    for definition in m.DEFINITIONS:
        labels = {label: "x" for label in definition.labels}
        if definition.kind == "histogram":
            metrics.observe(definition.name, 1.0, labels)
        else:
            metrics.inc(definition.name, labels)
    exported: dict[str, tuple[str, frozenset[str]]] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        name = f"{family.name}_total" if family.type == "counter" else family.name
        labels = frozenset(label for s in family.samples for label in s.labels if label != "le")
        exported[name] = (family.type, labels)
    return exported


EXPORTED = exported_families()


OURS = sorted(name for name in EXPORTED if name.startswith(m.OWN_PREFIX))
THEIRS = sorted(name for name in EXPORTED if not name.startswith(m.OWN_PREFIX))


@pytest.mark.parametrize("name", THEIRS, ids=THEIRS)
def test_an_exported_metric_is_upstreams(name: str) -> None:
    assert name in UPSTREAM, f"{name} is not a kube-scheduler v1.34.10 metric"
    kind, labels = EXPORTED[name]
    expected = UPSTREAM[name]
    assert (kind, labels) == (expected.kind, expected.labels), expected.source


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(m.CACHE_SIZE, id="cache-size"),
        pytest.param(m.REST_CLIENT_REQUESTS, id="rest-client-requests"),
        pytest.param(m.REST_CLIENT_REQUEST_DURATION, id="rest-client-duration"),
        pytest.param(m.LEADER_ELECTION_MASTER_STATUS, id="leader-status"),
        pytest.param(m.PLUGIN_EXECUTION_DURATION, id="plugin-execution"),
        pytest.param("process_resident_memory_bytes", id="process-memory"),
        pytest.param("process_cpu_seconds_total", id="process-cpu"),
    ],
)
def test_the_metrics_an_sre_looks_for_are_exported(name: str) -> None:
    assert name in EXPORTED


@pytest.mark.parametrize("name", OURS, ids=OURS)
def test_a_metric_of_our_own_does_not_pass_for_upstreams(name: str) -> None:
    """Named apart, and no component-base stability level in its help."""
    assert not any(theirs.startswith(m.OWN_PREFIX) for theirs in UPSTREAM)
    [family] = [
        family
        for family in text_string_to_metric_families(
            generate_latest(PrometheusMetrics().registry).decode()
        )
        if family.name == name.removesuffix("_total")
    ]
    assert not family.documentation.startswith("["), family.documentation


def test_our_own_metrics_are_few_and_known() -> None:
    known = [
        m.EVENTS_DROPPED,
        m.WATCH_DELIVERY_LAG,
        m.QUEUE_WAIT_BEFORE_FIRST_ATTEMPT,
        m.BINDING_REQUEST_DELAY,
        m.BINDING_REQUEST_DURATION,
        m.EVENT_LOOP_LAG,
    ]
    assert sorted(known) == OURS


def test_no_created_series_that_upstream_does_not_have() -> None:
    text = generate_latest(PrometheusMetrics().registry).decode()
    assert "_created" not in text
