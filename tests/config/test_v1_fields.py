"""Every field of the v1 KubeSchedulerConfiguration is honoured, warned about, or refused.

The field list is kube-scheduler v1.34.10's (``k8s.io/kube-scheduler/config/v1/types.go`` and the
component-base types it embeds). A config copied from kube-scheduler must never mean less than it
says without a word: a field either reaches the scheduler, or reading the file warns about it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import check_config, check_config_file
from kopf_scheduler.config.types import SchedulerConfig

BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
UPSTREAM_V1_FIELDS = {
    "parallelism",
    "leaderElection.leaderElect",
    "leaderElection.leaseDuration",
    "leaderElection.renewDeadline",
    "leaderElection.retryPeriod",
    "leaderElection.resourceLock",
    "leaderElection.resourceName",
    "leaderElection.resourceNamespace",
    "clientConnection.kubeconfig",
    "clientConnection.acceptContentTypes",
    "clientConnection.contentType",
    "clientConnection.qps",
    "clientConnection.burst",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
}
"""Every field of v1.34.10's KubeSchedulerConfiguration (apiVersion and kind aside)."""


def with_field(path: str, value: Any) -> dict[str, Any]:
    """The minimal config with ``value`` at the dotted ``path``."""
    raw: dict[str, Any] = dict(BASE)
    target = raw
    *parents, leaf = path.split(".")
    for parent in parents:
        target = target.setdefault(parent, {})
    target[leaf] = value
    return raw


Honoured = Callable[[SchedulerConfig], object]

HONOURED: list[Any] = [
    pytest.param("parallelism", 16, lambda c: c.parallelism == 16, id="parallelism-default"),
    pytest.param(
        "percentageOfNodesToScore",
        30,
        lambda c: c.percentage_of_nodes_to_score == 30,
        id="percentageOfNodesToScore",
    ),
    pytest.param(
        "podInitialBackoffSeconds",
        2,
        lambda c: c.pod_initial_backoff_seconds == 2,
        id="podInitialBackoffSeconds",
    ),
    pytest.param(
        "podMaxBackoffSeconds", 20, lambda c: c.pod_max_backoff_seconds == 20, id="podMaxBackoff"
    ),
    pytest.param(
        "profiles",
        [{"schedulerName": "a", "percentageOfNodesToScore": 40}],
        lambda c: c.profiles[0].percentage_of_nodes_to_score == 40,
        id="profiles",
    ),
    pytest.param("extenders", [], lambda c: True, id="extenders-empty"),
    pytest.param("enableProfiling", False, lambda c: True, id="enableProfiling-off"),
    pytest.param("enableContentionProfiling", False, lambda c: True, id="contention-off"),
    pytest.param("delayCacheUntilActive", False, lambda c: True, id="delayCacheUntilActive-off"),
    pytest.param(
        "leaderElection.leaderElect",
        False,
        lambda c: c.leader_election.leader_elect is False,
        id="leaderElect",
    ),
    pytest.param(
        "leaderElection.leaseDuration",
        "30s",
        lambda c: c.leader_election.lease_duration == 30,
        id="leaseDuration",
    ),
    pytest.param(
        "leaderElection.renewDeadline",
        "5s",
        lambda c: c.leader_election.renew_deadline == 5,
        id="renewDeadline",
    ),
    pytest.param(
        "leaderElection.retryPeriod",
        "1s",
        lambda c: c.leader_election.retry_period == 1,
        id="retryPeriod",
    ),
    pytest.param(
        "leaderElection.resourceLock",
        "leases",
        lambda c: c.leader_election.resource_lock == "leases",
        id="resourceLock",
    ),
    pytest.param(
        "leaderElection.resourceName",
        "mine",
        lambda c: c.leader_election.resource_name == "mine",
        id="resourceName",
    ),
    pytest.param(
        "leaderElection.resourceNamespace",
        "ops",
        lambda c: c.leader_election.resource_namespace == "ops",
        id="resourceNamespace",
    ),
    pytest.param(
        "clientConnection.kubeconfig",
        "/etc/k.conf",
        lambda c: c.client_connection.kubeconfig == "/etc/k.conf",
        id="kubeconfig",
    ),
    pytest.param(
        "clientConnection.contentType",
        "application/json",
        lambda c: c.client_connection.content_type == "application/json",
        id="contentType-json",
    ),
    pytest.param(
        "clientConnection.acceptContentTypes",
        "application/json,application/vnd.kubernetes.protobuf",
        lambda c: True,
        id="acceptContentTypes-with-json",
    ),
    pytest.param("clientConnection.qps", 20.5, lambda c: c.client_connection.qps == 20.5, id="qps"),
    pytest.param(
        "clientConnection.qps", 0, lambda c: c.client_connection.qps == 50, id="qps-zero-defaults"
    ),
    pytest.param(
        "clientConnection.qps",
        -1,
        lambda c: c.client_connection.qps == -1,
        id="qps-negative-means-no-client-side-limit",
    ),
    pytest.param("clientConnection.burst", 7, lambda c: c.client_connection.burst == 7, id="burst"),
    pytest.param(
        "clientConnection.burst",
        0,
        lambda c: c.client_connection.burst == 100,
        id="burst-zero-defaults",
    ),
]


def test_every_upstream_field_is_read() -> None:
    assert {case.values[0] for case in HONOURED} == UPSTREAM_V1_FIELDS


@pytest.mark.parametrize(("path", "value", "honoured"), HONOURED)
def test_honoured_fields_reach_the_configuration_silently(
    path: str, value: Any, honoured: Honoured
) -> None:
    loaded = check_config(with_field(path, value))
    assert honoured(loaded.config)
    assert loaded.warnings == ()


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        pytest.param("parallelism", 4, "filters and scores run on one core", id="parallelism"),
        pytest.param(
            "enableProfiling", True, "no profiling endpoints are served", id="enableProfiling"
        ),
        pytest.param(
            "enableContentionProfiling",
            True,
            "no profiling endpoints are served",
            id="enableContentionProfiling",
        ),
        pytest.param(
            "delayCacheUntilActive",
            True,
            "every replica fills its caches at start",
            id="delayCacheUntilActive",
        ),
        pytest.param(
            "clientConnection.contentType",
            "application/vnd.kubernetes.protobuf",
            "requests and replies are JSON",
            id="contentType-protobuf",
        ),
        pytest.param(
            "clientConnection.acceptContentTypes",
            "application/vnd.kubernetes.protobuf",
            "replies are always requested as application/json",
            id="acceptContentTypes-without-json",
        ),
        pytest.param(
            "profiles",
            [{"schedulerName": "default-scheduler"}],
            "'default-scheduler' is the name kube-scheduler serves",
            id="default-scheduler-profile",
        ),
    ],
)
def test_fields_without_effect_are_warned_about(path: str, value: Any, reason: str) -> None:
    loaded = check_config(with_field(path, value))
    [warning] = loaded.warnings
    field = "profiles[0].schedulerName" if path == "profiles" else path
    assert warning.field == field
    assert reason in warning.reason


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        pytest.param("parallelism", 0, "parallelism", "at least 1", id="parallelism-zero"),
        pytest.param(
            "parallelism", 2**31, "parallelism", "at most 2147483647", id="parallelism-int32"
        ),
        pytest.param(
            "podInitialBackoffSeconds",
            2**63,
            "podInitialBackoffSeconds",
            "at most 9223372036854775807",
            id="backoff-int64",
        ),
        pytest.param(
            "percentageOfNodesToScore",
            1.5,
            "percentageOfNodesToScore",
            "must be an integer",
            id="fractional-percentage",
        ),
        pytest.param(
            "enableProfiling", "yes", "enableProfiling", "true or false", id="profiling-string"
        ),
        pytest.param("extenders", {"a": 1}, "extenders", "must be a list", id="extenders-map"),
        pytest.param(
            "clientConnection.contentType",
            "text/plain",
            "clientConnection.contentType",
            "must be application/json or application/vnd.kubernetes.protobuf",
            id="contentType-unknown",
        ),
        pytest.param(
            "clientConnection.qps",
            float("inf"),
            "clientConnection.qps",
            "finite 32-bit float",
            id="qps-infinite",
        ),
        pytest.param(
            "clientConnection.qps",
            1e39,
            "clientConnection.qps",
            "finite 32-bit float",
            id="qps-beyond-float32",
        ),
        pytest.param(
            "clientConnection.qps", "fast", "clientConnection.qps", "a number", id="qps-string"
        ),
        pytest.param(
            "clientConnection.burst",
            2**31,
            "clientConnection.burst",
            "at most 2147483647",
            id="burst-int32",
        ),
        pytest.param(
            "podMaxInUnschedulablePodsDuration",
            "5m",
            "podMaxInUnschedulablePodsDuration",
            "unknown field; not part of the v1 API (kube-scheduler has it only as the deprecated "
            "flag --pod-max-in-unschedulable-pods-duration)",
            id="not-a-v1-field-with-a-hint",
        ),
        pytest.param(
            "schedulerName",
            "mine",
            "schedulerName",
            "moved into profiles[].schedulerName",
            id="pre-v1-scheduler-name",
        ),
    ],
)
def test_bad_values_are_refused(path: str, value: Any, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_config(with_field(path, value))
    assert info.value.field == field
    assert reason in info.value.reason


def test_an_empty_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(ConfigError) as info:
        check_config_file(path)
    assert str(info.value) == (
        f"{path}: the configuration is empty; it needs apiVersion kubescheduler.config.k8s.io/v1"
    )


def test_long_values_are_cut_short_in_messages() -> None:
    with pytest.raises(ConfigError) as info:
        check_config(with_field("parallelism", "x" * 500))
    assert len(str(info.value)) < 120


def test_file_warnings_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "enableProfiling: true\n"
    )
    [warning] = check_config_file(path).warnings
    assert (
        str(warning) == f"{path}: enableProfiling: has no effect: no profiling endpoints are served"
    )


def test_file_errors_name_the_line_of_a_duplicate_key(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: first\n"
        "profiles:\n"
        "- schedulerName: second\n"
    )
    with pytest.raises(ConfigError) as info:
        check_config_file(path)
    assert str(info.value) == f'{path}: line 5: duplicate key "profiles" (first at line 3)'


def test_file_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: \xe9\n")
    with pytest.raises(ConfigError) as info:
        check_config_file(path)
    assert str(info.value) == (
        f"{path}: not UTF-8 text: byte 0xe9 at offset 49 (invalid continuation byte)"
    )
