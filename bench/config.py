"""The scheduler configurations the benchmarks run with, for ours and for upstream.

Both get the default plugins and the same ``clientConnection`` QPS/burst, and leader election
off. Ours keeps its own profile name so that the two schedulers never race on one pod; upstream
keeps ``default-scheduler``.
"""

from __future__ import annotations

from typing import Any

SCHEDULERS = ("kopf", "upstream")
"""The two schedulers of a pair, in the order they run by default."""
SCHEDULER_NAME = "kopf-scheduler"
UPSTREAM_SCHEDULER_NAME = "default-scheduler"
API_VERSION = "kubescheduler.config.k8s.io/v1"


def scheduler_config(
    qps: float | None = None, burst: int | None = None, kubeconfig: str | None = None
) -> dict[str, Any]:
    """Our KubeSchedulerConfiguration (ours accepts the same file format as upstream)."""
    raw: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
        "leaderElection": {"leaderElect": False},
    }
    connection = _client_connection(qps, burst, kubeconfig)
    if connection:
        raw["clientConnection"] = connection
    return raw


def upstream_config(qps: float, burst: int, kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": UPSTREAM_SCHEDULER_NAME}],
        "leaderElection": {"leaderElect": False},
        "clientConnection": _client_connection(qps, burst, kubeconfig),
    }


def _client_connection(
    qps: float | None, burst: int | None, kubeconfig: str | None
) -> dict[str, Any]:
    connection: dict[str, Any] = {}
    if kubeconfig:
        connection["kubeconfig"] = kubeconfig
    if qps is not None:
        connection["qps"] = qps
    if burst is not None:
        connection["burst"] = burst
    return connection
