"""The ``kopf-scheduler run`` process itself: readiness, endpoints, metrics, clean stop.

It starts a replica next to the current leader (so it stays a follower with a warm cache), checks
what a kubelet probe and Prometheus would see, then stops it with SIGTERM: it must exit 0.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from e2e.support.env import TestEnv
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers, Schedulers


def _get(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return response.status, response.read().decode()


def test_endpoints_metrics_and_clean_stop(env: TestEnv, schedulers: Schedulers) -> None:
    if not isinstance(schedulers, LocalSchedulers):
        pytest.skip("needs a scheduler process started by the suite (local control plane)")
    [node] = env.create_nodes(1)
    env.create(env.pod("counted", cpu="500m"))
    assert env.wait_bound("counted") == node

    follower = schedulers.start("e2e-process-check")
    try:
        status, body = _get(follower.port, "/healthz")
        assert (status, body) == (200, "ok")
        status, body = _get(follower.port, "/readyz")
        assert status == 200
        assert json.loads(body) == {"synced": True, "leader": False}
        status, metrics = _get(follower.port, "/metrics")
        assert status == 200
        for name in (
            "scheduler_pending_pods",
            "scheduler_schedule_attempts_total",
            "scheduler_preemption_attempts_total",
            "scheduler_preemption_victims",
            "scheduler_pod_scheduling_sli_duration_seconds",
        ):
            assert f"# TYPE {name}" in metrics, name
        # Gauges of the cache and queues are refreshed by the once-a-second flush.
        refreshed = wait_until(
            lambda: 'scheduler_cache_size{type="nodes"}' in _get(follower.port, "/metrics")[1],
            timeout=10,
            what="scheduler_cache_size on /metrics",
        )
        assert refreshed
        log = follower.log_since_mark()
        assert "caches_synced" in log
        assert "ready" in log
    finally:
        schedulers.stop(follower)
