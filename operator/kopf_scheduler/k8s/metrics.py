"""The ``Metrics`` port on prometheus_client, with kube-scheduler's metric names and buckets.

Every metric in :data:`kopf_scheduler.metric_names.DEFINITIONS` is registered up front in a
registry of its own (not prometheus_client's global one, so tests and several schedulers in one
process do not collide), next to prometheus_client's process collector (``process_*``, as
component-base registers client_golang's); ``/metrics`` serves
:attr:`PrometheusMetrics.registry`. Labelled children are cached per label-value tuple, so a
hot-path ``inc`` is a dict lookup and an addition.

prometheus_client adds a ``*_created`` series to every counter and histogram unless told not to;
kube-scheduler exposes none, so they are switched off (a process-wide setting of the library).

A call with an unknown name, the wrong kind, or wrong labels is a bug in the caller; it is logged
once per name and otherwise ignored, because a metric must never fail a scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)

from kopf_scheduler.metric_names import DEFINITIONS, MetricDef

logger = structlog.get_logger("kopf_scheduler.k8s.metrics")

_KINDS = ("counter", "gauge", "histogram")

disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped in prometheus_client


class PrometheusMetrics:
    """:class:`kopf_scheduler.ports.Metrics` backed by a dedicated ``CollectorRegistry``."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        definitions: Iterable[MetricDef] = DEFINITIONS,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._defs: dict[str, MetricDef] = {}
        self._metrics: dict[str, Any] = {}
        self._children: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._seen_children: dict[tuple[str, tuple[str, ...], tuple[Any, ...]], Any] = {}
        self._complained: set[str] = set()
        for definition in definitions:
            self._register(definition)
        ProcessCollector(registry=self.registry)

    def _register(self, definition: MetricDef) -> None:
        if definition.kind not in _KINDS:
            raise ValueError(f"metric {definition.name}: unknown kind {definition.kind!r}")
        labels = list(definition.labels)
        help_text = definition.exposed_help
        metric: Any
        if definition.kind == "counter":
            metric = Counter(definition.name, help_text, labels, registry=self.registry)
        elif definition.kind == "gauge":
            metric = Gauge(definition.name, help_text, labels, registry=self.registry)
        elif definition.buckets:
            metric = Histogram(
                definition.name,
                help_text,
                labels,
                registry=self.registry,
                buckets=definition.buckets,
            )
        else:
            metric = Histogram(definition.name, help_text, labels, registry=self.registry)
        self._defs[definition.name] = definition
        self._metrics[definition.name] = metric

    def _child(self, name: str, kinds: tuple[str, ...], labels: Mapping[str, str] | None) -> Any:
        # The scheduling queue updates a few labelled series for every pod it moves; a child seen
        # before with the same labels (in the same order) is found with one lookup.
        seen_key = (name, kinds, tuple(labels.items()) if labels else ())
        seen = self._seen_children.get(seen_key)
        if seen is not None:
            return seen
        child = self._validated_child(name, kinds, labels)
        if child is not None:
            self._seen_children[seen_key] = child
        return child

    def _validated_child(
        self, name: str, kinds: tuple[str, ...], labels: Mapping[str, str] | None
    ) -> Any:
        definition = self._defs.get(name)
        if definition is None:
            self._complain(name, "is not a known metric")
            return None
        if definition.kind not in kinds:
            self._complain(name, f"is a {definition.kind}, not a {' or '.join(kinds)}")
            return None
        metric = self._metrics[name]
        if not definition.labels:
            if labels:
                self._complain(name, f"takes no labels, got {sorted(labels)}")
                return None
            return metric
        given = labels or {}
        if len(given) != len(definition.labels) or any(k not in given for k in definition.labels):
            self._complain(name, f"takes labels {list(definition.labels)}, got {sorted(given)}")
            return None
        values = tuple(str(given[label]) for label in definition.labels)
        key = (name, values)
        child = self._children.get(key)
        if child is None:
            child = metric.labels(*values)
            self._children[key] = child
        return child

    def _complain(self, name: str, problem: str) -> None:
        if name not in self._complained:
            self._complained.add(name)
            logger.error("metric_value_dropped", metric=name, reason=problem)

    def inc(self, name: str, labels: Mapping[str, str] | None = None, value: float = 1) -> None:
        child = self._child(name, ("counter", "gauge"), labels)
        if child is not None:
            try:
                child.inc(value)
            except ValueError as error:  # a counter given a negative amount
                self._complain(name, str(error))

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        child = self._child(name, ("histogram",), labels)
        if child is not None:
            child.observe(value)

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        child = self._child(name, ("gauge",), labels)
        if child is not None:
            child.set(value)
