"""The Grafana dashboard and the alert rules shipped in the chart query only metrics we export.

A query of a metric that does not exist is silent: the panel stays empty and the alert never
fires. So every metric name in every PromQL expression of ``files/dashboard.json`` and
``files/alerts.yaml`` must be one of the series our /metrics exposes (``up`` is Prometheus's own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.metrics import PrometheusMetrics

FILES = Path(__file__).resolve().parents[2] / "charts" / "kopf-scheduler" / "files"
PROMETHEUS_OWN = {"up"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or"}
KEYWORDS |= {"unless", "bool", "offset", "inf", "nan"}

_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\()?)")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords and labels dropped)."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGES.sub("", text)
    text = _GROUPING.sub("", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name = match.group(0)
        if match.group(1) or name.lower() in KEYWORDS:
            continue  # a function call or an operator
        names.add(name)
    return names


def exported_series() -> set[str]:
    """Every series name our /metrics can show: counters with _total, histograms' three."""
    metrics = PrometheusMetrics()
    for definition in m.DEFINITIONS:
        labels = {label: "x" for label in definition.labels}
        if definition.kind == "histogram":
            metrics.observe(definition.name, 1.0, labels)
        else:
            metrics.inc(definition.name, labels)
    text = generate_latest(metrics.registry).decode()
    return {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }


def dashboard_queries() -> Iterator[tuple[str, str]]:
    dashboard = json.loads((FILES / "dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query["query"])
            assert inner is not None, query
            yield f"variable {variable['name']!r}", inner.group(1)


def alert_queries() -> Iterator[tuple[str, str]]:
    rules: dict[str, Any] = yaml.safe_load((FILES / "alerts.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"alert {rule['alert']}", rule["expr"]


QUERIES = [*dashboard_queries(), *alert_queries()]


@pytest.mark.parametrize(("where", "expr"), QUERIES, ids=[where for where, _ in QUERIES])
def test_every_queried_metric_is_exported(where: str, expr: str) -> None:
    names = metric_names(expr)

    assert names, f"{where}: no metric found in {expr!r}"
    assert names <= exported_series() | PROMETHEUS_OWN, names - exported_series()


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param(
            'sum by (job) (rate(scheduler_preemption_victims_sum{job=~"a|b"}[10m])) * 60 > 10',
            {"scheduler_preemption_victims_sum"},
            id="aggregation",
        ),
        pytest.param(
            "max by (job) (x_total) < 1 and on (job) delta(sum by (job, instance) (y)[15m:1m]) > 0",
            {"x_total", "y"},
            id="binary-operators-and-subquery",
        ),
        pytest.param('absent(up{job=~".*kopf.*"} == 1)', {"up"}, id="absent"),
        pytest.param("histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))", {"h_bucket"}),
    ],
)
def test_the_metric_name_reader(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_the_alerts_cover_what_an_sre_is_paged_for() -> None:
    alerts = {where.removeprefix("alert "): expr for where, expr in alert_queries()}

    assert "scheduler_pending_pods" in alerts["KopfSchedulerPendingPodsGrowing"]
    assert 'result="error"' in alerts["KopfSchedulerSchedulingErrors"]
    assert "leader_election_master_status" in alerts["KopfSchedulerNoLeader"]
    assert "scheduler_preemption_victims" in alerts["KopfSchedulerPreemptionStorm"]
