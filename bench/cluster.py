"""The local control plane for the benchmarks: the e2e one, plus two identities and an audit log.

The two schedulers are told apart in the API server's audit log by who they are:
``bench-kopf-scheduler`` and ``bench-kube-scheduler``, two static token users that are added to
the token file before the API server starts. Both are in ``system:masters`` like the admin, so
both are exempt from API Priority and Fairness and skip RBAC evaluation alike: neither scheduler
gets a different API-server path. (``apiserver_request_total`` has no client label, so /metrics
cannot attribute requests to a client; the audit log can.) The audit policy records only these
two users, at the Metadata level, once per request when the response is complete.

This subclasses :class:`e2e.localcluster.LocalCluster` and hooks its ``_launch`` step for the
API server (and, for scheduler_perf's workloads, the controller manager:
:class:`SchedulerPerfCluster`); nothing in ``e2e/`` changes. It uses its own state directory
(``LOCALCLUSTER_DIR`` or ``/tmp/lc-bench``), so it never touches the clusters of other test runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from e2e.localcluster.build import binaries
from e2e.localcluster.cluster import LocalCluster

DEFAULT_STATE_DIR = "/tmp/lc-bench"
KOPF_USER = "bench-kopf-scheduler"
UPSTREAM_USER = "bench-kube-scheduler"
BENCH_USERS = (KOPF_USER, UPSTREAM_USER)
AUDIT_LOG = "audit.log"
AUDIT_POLICY = "audit-policy.yaml"
BENCH_STATE = "bench.json"
WITHOUT_NODE_LIFECYCLE = "without-node-lifecycle"
"""A file in the state directory: the running controller manager has no node lifecycle."""
NODE_LIFECYCLE_CONTROLLERS = frozenset({"nodelifecycle", "taint-eviction-controller"})
UPSTREAM_CLIENT_QPS = 5000
"""The QPS and burst of scheduler_perf's test clients (``cfg.QPS``, ``cfg.Burst``, util.go)."""
DELETE_COLLECTION_WORKERS = 4


def state_dir() -> Path:
    return Path(os.environ.get("LOCALCLUSTER_DIR") or DEFAULT_STATE_DIR).resolve()


def binaries_available() -> bool:
    found = binaries()
    return all(
        Path(p).exists()
        for p in (
            found.etcd,
            found.kube_apiserver,
            found.kube_controller_manager,
            found.kube_scheduler,
            found.kwok,
        )
    )


def audit_policy() -> dict[str, Any]:
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [
            {"level": "Metadata", "users": list(BENCH_USERS)},
            {"level": "None"},
        ],
    }


class BenchCluster(LocalCluster):
    """A :class:`LocalCluster` whose API server also knows the two scheduler identities."""

    without_node_lifecycle = False
    """Whether the controller manager runs without node lifecycle (see
    :class:`SchedulerPerfCluster`)."""

    @property
    def audit_log(self) -> Path:
        return self.log_dir / AUDIT_LOG

    def _bench_state_path(self) -> Path:
        return self.state_dir / BENCH_STATE

    def bench_tokens(self) -> dict[str, str]:
        path = self._bench_state_path()
        if not path.exists():
            return {}
        return dict(json.loads(path.read_text())["tokens"])

    def user_kubeconfig(self, user: str) -> Path:
        return self.state_dir / f"{user}.kubeconfig"

    def _launch(self, name: str, args: Sequence[str]) -> None:
        if name == "kube-apiserver":
            args = [*args, *self._prepare_bench()]
        super()._launch(name, args)

    def _prepare_bench(self) -> list[str]:
        tokens = {user: secrets.token_hex(16) for user in BENCH_USERS}
        with (self.state_dir / "tokens.csv").open("a") as out:
            for user, token in tokens.items():
                out.write(f'{token},{user},uid-{user},"system:masters"\n')
        self._bench_state_path().write_text(json.dumps({"tokens": tokens}))
        for user, token in tokens.items():
            self._write_kubeconfig(self.user_kubeconfig(user), user, token)
        policy = self.state_dir / AUDIT_POLICY
        policy.write_text(yaml.safe_dump(audit_policy(), sort_keys=False))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=100000",
            "--audit-log-maxbackup=1",
            # The sweep between runs deletes tens of thousands of pods by collection; one
            # worker (the default) leaves a CPU idle while it does.
            f"--delete-collection-workers={DELETE_COLLECTION_WORKERS}",
        ]

    def down(self, timeout: float = 10, keep_logs: bool = False) -> None:
        super().down(timeout=timeout, keep_logs=keep_logs)
        extras = (BENCH_STATE, AUDIT_POLICY, WITHOUT_NODE_LIFECYCLE)
        for extra in (*extras, *(f"{u}.kubeconfig" for u in BENCH_USERS)):
            with contextlib.suppress(OSError):
                (self.state_dir / extra).unlink()
        with contextlib.suppress(OSError):
            self.state_dir.rmdir()

    def ready_for_bench(self) -> bool:
        return (
            self.is_healthy()
            and bool(self.bench_tokens())
            and self.audit_log.parent.exists()
            and (self.state_dir / WITHOUT_NODE_LIFECYCLE).exists() == self.without_node_lifecycle
        )


class SchedulerPerfCluster(BenchCluster):
    """The bench cluster as scheduler_perf's test server has it: no node lifecycle controller,
    and controllers whose API requests are not held back by a client-side rate limit.

    kwok renews every node's heartbeat; with thousands of nodes and tens of thousands of pods on
    two shared CPUs it falls behind, and the node lifecycle controller then taints the nodes
    unreachable (Unschedulable/5kNodes/20kInit/10kPods: 2,690 of 5,000 nodes tainted while the
    measured pods waited), and the taint controller evicts their pods. Upstream's test server
    runs no controller manager, so none of its nodes is ever tainted; here the runner lifts the
    not-ready taint of new nodes itself, and the PV binder and the other controllers still run.

    The controllers upstream's test server does run (the resource-claim controller, the garbage
    collector) share its client of :data:`UPSTREAM_CLIENT_QPS`. The controller manager's
    controllers share one client too, limited to 100 requests a second in the e2e cluster; the
    workloads with claim templates wait for the resource-claim controller's claims, and a limit
    upstream does not have has no place in front of them. Here the limit is upstream's.
    """

    without_node_lifecycle = True

    def _launch(self, name: str, args: Sequence[str]) -> None:
        if name == "kube-controller-manager":
            args = without_controllers(args, NODE_LIFECYCLE_CONTROLLERS)
            args = with_client_rate(args, UPSTREAM_CLIENT_QPS)
            (self.state_dir / WITHOUT_NODE_LIFECYCLE).touch()
        super()._launch(name, args)


def without_controllers(args: Sequence[str], dropped: frozenset[str]) -> list[str]:
    """The controller manager's ``args`` with ``dropped`` taken out of ``--controllers``."""
    kept: list[str] = []
    for arg in args:
        if arg.startswith("--controllers="):
            names = arg.removeprefix("--controllers=").split(",")
            kept.append("--controllers=" + ",".join(n for n in names if n not in dropped))
        else:
            kept.append(arg)
    return kept


def with_client_rate(args: Sequence[str], qps: int) -> list[str]:
    """The controller manager's ``args`` with its client's QPS and burst both set to ``qps``."""
    kept = [a for a in args if not a.startswith(("--kube-api-qps=", "--kube-api-burst="))]
    return [*kept, f"--kube-api-qps={qps}", f"--kube-api-burst={qps}"]


def start_bench_cluster(
    nodes: int = 0, fresh: bool = False, kind: type[BenchCluster] = BenchCluster
) -> BenchCluster:
    """Start (or reuse) a benchmark cluster of ``kind`` in its own state directory (one of
    another kind running there is stopped first)."""
    directory = state_dir()
    existing = kind(directory)
    if existing.is_running() and (fresh or not existing.ready_for_bench()):
        existing.down()
    if existing.is_running() and existing.ready_for_bench():
        return existing
    return kind.up(nodes=nodes, state_dir=directory)  # type: ignore[return-value]
