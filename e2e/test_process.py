"""The ``kopf-scheduler run`` process itself: readiness, the secure port, metrics, clean stop.

It starts a replica next to the current leader (so it stays a follower with a warm cache), checks
what a kubelet probe and Prometheus would see, then stops it with SIGTERM: it must exit 0.

The port is kube-scheduler's secure port: HTTPS with a self-signed certificate, probes open to
anyone, ``/metrics`` only for users the API server authenticates (TokenReview) and authorizes
(SubjectAccessReview). The scraper here is a ServiceAccount bound to a ClusterRole with
``nonResourceURLs: ["/metrics"]``, as a Prometheus would be; the scheduler's own rights to ask
come from manifests/ alone.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from e2e.support import LEASE_NAME
from e2e.support.env import TestEnv
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers, Schedulers, unverified_tls

FORBIDDEN = '"message": "forbidden: User \\"system:anonymous\\" cannot get path \\"/metrics\\""'


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5, context=unverified_tls()) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def scraper_token(env: TestEnv) -> Iterator[str]:
    """A token of a ServiceAccount allowed to GET /metrics, and nothing else."""
    kube = env.kubectl
    name = f"e2e-metrics-reader-{env.id}"
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "scraper", "namespace": env.namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": env.namespace}],
        },
    )
    try:
        yield kube.run("create", "token", "scraper", "-n", env.namespace).stdout.strip()
    finally:
        kube.delete("clusterrolebinding", name)
        kube.delete("clusterrole", name)


def test_endpoints_metrics_and_clean_stop(
    env: TestEnv, schedulers: Schedulers, scraper_token: str
) -> None:
    if not isinstance(schedulers, LocalSchedulers):
        pytest.skip("needs a scheduler process started by the suite (local control plane)")
    [node] = env.create_nodes(1)
    env.create(env.pod("counted", cpu="500m"))
    assert env.wait_bound("counted") == node

    follower = schedulers.start("e2e-process-check")
    try:
        base = follower.url
        assert _get(f"{base}/healthz") == (200, "ok")
        assert _get(f"{base}/healthz", token="not-a-token") == (200, "ok")  # probes ask nobody
        status, body = _get(f"{base}/readyz")
        assert status == 200
        assert json.loads(body) == {"synced": True, "leader": False}

        status, body = _get(f"{base}/metrics")
        assert status == 403
        assert FORBIDDEN in body
        status, body = _get(f"{base}/metrics", token="not-a-token")
        assert status == 401
        assert '"reason": "Unauthorized"' in body

        status, metrics = _get(f"{base}/metrics", token=scraper_token)
        assert status == 200, metrics
        for name in (
            "scheduler_pending_pods",
            "scheduler_schedule_attempts_total",
            "scheduler_preemption_attempts_total",
            "scheduler_preemption_victims",
            "scheduler_pod_scheduling_sli_duration_seconds",
            "rest_client_requests_total",
            "rest_client_request_duration_seconds",
            "leader_election_master_status",
            "process_resident_memory_bytes",
        ):
            assert f"# TYPE {name}" in metrics, name
        assert f'leader_election_master_status{{name="{LEASE_NAME}"}} 0.0' in metrics
        # Gauges of the cache and queues are refreshed by the once-a-second flush.
        refreshed = wait_until(
            lambda: (
                'scheduler_cache_size{type="nodes"}'
                in _get(f"{base}/metrics", token=scraper_token)[1]
            ),
            timeout=10,
            what="scheduler_cache_size on /metrics",
        )
        assert refreshed
        log = follower.log_since_mark()
        assert "caches_synced" in log
        assert "ready" in log
    finally:
        schedulers.stop(follower)
