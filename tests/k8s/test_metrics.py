"""Prometheus metrics: every upstream definition registered, values reach the registry."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import pytest
from prometheus_client import REGISTRY, generate_latest

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.metrics import PrometheusMetrics


def test_every_definition_is_exposed_in_a_registry_of_its_own() -> None:
    metrics = PrometheusMetrics()

    families = {family.name: family for family in metrics.registry.collect()}

    for definition in m.DEFINITIONS:
        name = definition.name.removesuffix("_total") if definition.kind == "counter" else None
        family = families[name or definition.name]
        assert family.type == definition.kind
        assert family.documentation == definition.exposed_help
    assert REGISTRY.get_sample_value(m.PREEMPTION_ATTEMPTS) is None


def test_two_instances_do_not_collide() -> None:
    first, second = PrometheusMetrics(), PrometheusMetrics()
    first.inc(m.PREEMPTION_ATTEMPTS)

    assert first.registry.get_sample_value(m.PREEMPTION_ATTEMPTS) == 1
    assert second.registry.get_sample_value(m.PREEMPTION_ATTEMPTS) == 0


def test_counters_add_per_label_set() -> None:
    metrics = PrometheusMetrics()

    metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": "scheduled", "profile": "my-scheduler"})
    metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": "scheduled", "profile": "my-scheduler"}, 2)
    metrics.inc(m.SCHEDULE_ATTEMPTS, {"profile": "my-scheduler", "result": "unschedulable"})

    sample = metrics.registry.get_sample_value
    labels = {"result": "scheduled", "profile": "my-scheduler"}
    assert sample(m.SCHEDULE_ATTEMPTS, labels) == 3
    assert sample(m.SCHEDULE_ATTEMPTS, {**labels, "result": "unschedulable"}) == 1


def test_gauges_set_and_move() -> None:
    metrics = PrometheusMetrics()

    metrics.set(m.PENDING_PODS, 7, {"queue": "active"})
    metrics.inc(m.PENDING_PODS, {"queue": "active"}, -2)

    assert metrics.registry.get_sample_value(m.PENDING_PODS, {"queue": "active"}) == 5


def test_histograms_use_the_upstream_buckets() -> None:
    metrics = PrometheusMetrics()

    metrics.observe(m.PREEMPTION_VICTIMS, 3)

    sample = metrics.registry.get_sample_value
    assert sample(f"{m.PREEMPTION_VICTIMS}_bucket", {"le": "2.0"}) == 0
    assert sample(f"{m.PREEMPTION_VICTIMS}_bucket", {"le": "4.0"}) == 1
    assert sample(f"{m.PREEMPTION_VICTIMS}_bucket", {"le": "64.0"}) == 1
    assert sample(f"{m.PREEMPTION_VICTIMS}_count") == 1
    text = generate_latest(metrics.registry).decode()
    assert f'{m.PREEMPTION_VICTIMS}_bucket{{le="128.0"}}' not in text


@pytest.mark.parametrize(
    ("call", "complaint"),
    [
        pytest.param(lambda x: x.inc("scheduler_typo_total"), "not a known metric", id="unknown"),
        pytest.param(lambda x: x.set(m.SCHEDULE_ATTEMPTS, 1), "is a counter", id="set-counter"),
        pytest.param(lambda x: x.observe(m.PENDING_PODS, 1), "is a gauge", id="observe-gauge"),
        pytest.param(
            lambda x: x.inc(m.SCHEDULE_ATTEMPTS, {"result": "error"}), "takes labels", id="missing"
        ),
        pytest.param(
            lambda x: x.inc(m.PREEMPTION_ATTEMPTS, {"result": "error"}), "no labels", id="extra"
        ),
        pytest.param(lambda x: x.inc(m.PREEMPTION_ATTEMPTS, None, -1), "negative", id="negative"),
    ],
)
def test_misuse_is_logged_once_and_dropped(
    caplog: pytest.LogCaptureFixture,
    call: Callable[[PrometheusMetrics], None],
    complaint: str,
) -> None:
    metrics = PrometheusMetrics()

    with caplog.at_level(logging.ERROR, logger="kopf_scheduler.k8s.metrics"):
        call(metrics)
        call(metrics)

    records = [r for r in caplog.records if r.name == "kopf_scheduler.k8s.metrics"]
    assert len(records) == 1
    entry = cast(dict[str, Any], records[0].msg)
    assert entry["event"] == "metric_value_dropped"
    assert complaint in entry["reason"]
    assert metrics.registry.get_sample_value(m.PREEMPTION_ATTEMPTS) == 0
