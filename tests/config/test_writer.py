"""``run --write-config-to``: the defaulted configuration, shaped like kube-scheduler's, readable
back into the same configuration."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kopf_scheduler.config.loader import check_config, default_config, parse_config
from kopf_scheduler.config.writer import config_document, config_yaml, go_duration
from kopf_scheduler.plugins.registry import DEFAULT_MULTI_POINT

BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
CUSTOM = {
    **BASE,
    "parallelism": 4,
    "percentageOfNodesToScore": 20,
    "podInitialBackoffSeconds": 2,
    "podMaxBackoffSeconds": 30,
    "clientConnection": {"qps": -1, "burst": 0, "kubeconfig": "/k"},
    "leaderElection": {"leaseDuration": "1m30s", "renewDeadline": "250ms", "retryPeriod": "100ms"},
    "profiles": [
        {
            "schedulerName": "a",
            "percentageOfNodesToScore": 40,
            "plugins": {
                "multiPoint": {
                    "disabled": [{"name": "ImageLocality"}],
                    "enabled": [{"name": "NodeAffinity", "weight": 7}],
                },
                "score": {"enabled": [{"name": "TaintToleration", "weight": 9}]},
            },
            "pluginConfig": [
                {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}
            ],
        },
        {
            "schedulerName": "b",
            "plugins": {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [
                        {"name": "PrioritySort"},
                        {"name": "NodeResourcesFit", "weight": 3},
                        {"name": "DefaultBinder"},
                    ],
                }
            },
        },
    ],
    "kopfScheduler": {"explanations": {"annotate": "all"}, "fastPath": False},
}
UPSTREAM_TOP_LEVEL = {
    "apiVersion",
    "kind",
    "clientConnection",
    "delayCacheUntilActive",
    "enableContentionProfiling",
    "enableProfiling",
    "leaderElection",
    "parallelism",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
}
"""The top-level keys of kube-scheduler v1.34.10's --write-config-to output."""


@pytest.mark.parametrize(
    "raw", [pytest.param(BASE, id="defaults"), pytest.param(CUSTOM, id="custom")]
)
def test_the_written_file_reads_back_into_the_same_configuration(raw: dict[str, Any]) -> None:
    config = parse_config(raw)
    written = yaml.safe_load(config_yaml(config))
    assert config_document(parse_config(written)) == config_document(config)


def test_defaults_are_filled_in_like_kube_scheduler() -> None:
    document = config_document(default_config())
    assert set(document) == UPSTREAM_TOP_LEVEL | {"kopfScheduler"}
    assert document["leaderElection"] == {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "resourceLock": "leases",
        "resourceName": "kopf-scheduler",
        "resourceNamespace": "kube-system",
        "retryPeriod": "2s",
    }
    assert document["clientConnection"] == {
        "acceptContentTypes": "",
        "burst": 100,
        "contentType": "application/json",
        "kubeconfig": "",
        "qps": 50.0,
    }
    assert (document["parallelism"], document["percentageOfNodesToScore"]) == (16, 0)
    assert (document["podInitialBackoffSeconds"], document["podMaxBackoffSeconds"]) == (1, 10)
    assert (document["enableProfiling"], document["delayCacheUntilActive"]) == (False, False)
    [profile] = document["profiles"]
    assert profile["plugins"]["multiPoint"]["enabled"] == [
        {"name": name, "weight": weight} for name, weight in DEFAULT_MULTI_POINT
    ]


def test_multi_point_is_expanded_and_other_points_kept_as_given() -> None:
    document = config_document(parse_config(CUSTOM))
    first, second = document["profiles"]
    enabled = first["plugins"]["multiPoint"]["enabled"]
    assert {"name": "ImageLocality", "weight": 1} not in enabled
    assert {"name": "NodeAffinity", "weight": 7} in enabled
    assert first["plugins"]["multiPoint"]["disabled"] == [{"name": "ImageLocality", "weight": 0}]
    assert first["plugins"]["score"] == {
        "enabled": [{"name": "TaintToleration", "weight": 9}],
        "disabled": [],
    }
    assert first["pluginConfig"] == [
        {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}
    ]
    assert second["plugins"]["multiPoint"]["enabled"] == [
        {"name": "PrioritySort", "weight": 0},
        {"name": "NodeResourcesFit", "weight": 3},
        {"name": "DefaultBinder", "weight": 0},
    ]


def test_the_written_file_has_no_warnings_of_its_own() -> None:
    written = yaml.safe_load(config_yaml(default_config()))
    assert check_config(written).warnings == ()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(15, "15s", id="seconds"),
        pytest.param(90, "1m30s", id="minutes"),
        pytest.param(7200, "2h0m0s", id="hours"),
        pytest.param(1.5, "1.5s", id="fraction"),
        pytest.param(0.25, "250ms", id="milliseconds"),
        pytest.param(0.0005, "500µs", id="microseconds"),
        pytest.param(0, "0s", id="zero"),
    ],
)
def test_durations_print_as_go_prints_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
