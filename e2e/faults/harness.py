"""The parts every fault scenario shares: a burst of pods, the wait for the cluster to settle,
and the judgement with its figures.

A fault is only interesting while the scheduler has work, so each scenario creates its pods in
a burst spread over a few seconds (:class:`Burst`, the admin's requests, retried while the API
server is down, so the burst itself survives the fault) and applies the fault in the middle of
it. :meth:`Scenario.finish` then waits, within a generous liveness timeout, until every pod is
bound or visibly unschedulable, reads the admin's record and judges it
(:mod:`e2e.faults.invariants`), writes the figures to the results file and fails the test on
any problem. Time to recover is measured, never asserted: from the end of the fault until the
last pod that fits was bound, as the admin's watch saw it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.localcluster import LocalCluster
from e2e.support.env import TestEnv
from e2e.support.faultproxy import FaultProxy
from e2e.support.kubectl import node_name, unschedulable_message
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers
from e2e.support.watch import ObjectWatch

from .invariants import Record, Verdict, judge
from .results import Results

SETTLE_TIMEOUT = 180.0  # liveness only: a healthy run settles in seconds
CREATE_TIMEOUT = 120.0

_BOUND_LINE = re.compile(r"\bpod_bound\b")
_POD = re.compile(r"\bpod=(\S+)")
_NODE = re.compile(r"\bnode=(\S+)")


def compact_etcd(cluster: LocalCluster) -> int:
    """Compact etcd at its current revision (etcd's JSON gateway); return that revision.

    Every older resourceVersion is then gone: a watch that resumes from one gets "too old
    resource version" (410) and must list again.
    """
    base = f"http://127.0.0.1:{cluster.ports['etcd-client']}/v3"
    status = _post_json(f"{base}/maintenance/status", {})
    revision = int(status["header"]["revision"])
    _post_json(f"{base}/kv/compaction", {"revision": str(revision), "physical": True})
    return revision


def _post_json(url: str, body: Mapping[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def proxy_kubeconfig(source: Path, proxy: FaultProxy, path: Path) -> Path:
    """``source`` (the scheduler's ServiceAccount kubeconfig) pointed at the proxy instead."""
    config = yaml.safe_load(source.read_text())
    cluster = config["clusters"][0]["cluster"]
    cluster.pop("certificate-authority", None)
    cluster["server"] = proxy.url
    cluster["certificate-authority-data"] = base64.b64encode(
        proxy.certificate.ca.read_bytes()
    ).decode()
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def bindings_logged(logs: Mapping[str, str], namespace: str) -> dict[str, dict[str, str]]:
    """Per pod of ``namespace``: the scheduler processes that logged its binding, and where."""
    found: dict[str, dict[str, str]] = {}
    prefix = f"{namespace}/"
    for identity, text in logs.items():
        for line in text.splitlines():
            if not _BOUND_LINE.search(line):
                continue
            pod, node = _POD.search(line), _NODE.search(line)
            if pod is None or node is None or not pod.group(1).startswith(prefix):
                continue
            found.setdefault(pod.group(1).removeprefix(prefix), {})[identity] = node.group(1)
    return found


class Burst:
    """Create pods at ``rate`` per second in a thread, retrying each until the API server has it.

    The admin's requests go straight to the API server, never through a fault proxy; while the
    API server is down or etcd stalls, a create is retried every half second (an
    ``AlreadyExists`` answer means an earlier try went through).
    """

    def __init__(
        self, cluster: LocalCluster, manifests: Sequence[Mapping[str, Any]], rate: float
    ) -> None:
        self.cluster = cluster
        self.manifests = list(manifests)
        self.rate = rate
        self.created: list[str] = []
        self.retries = 0
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name="burst", daemon=True)

    @property
    def names(self) -> list[str]:
        return [m["metadata"]["name"] for m in self.manifests]

    def start(self) -> Burst:
        self._thread.start()
        return self

    def wait_created(self, count: int, timeout: float = CREATE_TIMEOUT) -> None:
        wait_until(
            lambda: len(self.created) >= count, timeout=timeout, what=f"{count} pods created"
        )

    def join(self) -> None:
        self._thread.join(CREATE_TIMEOUT + 30)
        assert not self.errors, self.errors
        assert len(self.created) == len(self.manifests), (len(self.created), self.retries)

    def _run(self) -> None:
        for manifest in self.manifests:
            started = time.monotonic()
            self._create(manifest)
            time.sleep(max(0.0, 1 / self.rate - (time.monotonic() - started)))

    def _create(self, manifest: Mapping[str, Any]) -> None:
        path = f"/api/v1/namespaces/{manifest['metadata']['namespace']}/pods"
        deadline = time.monotonic() + CREATE_TIMEOUT
        while True:
            try:
                self.cluster.api("POST", path, manifest)
                break
            except urllib.error.HTTPError as error:
                if error.code == 409:
                    break
                last = f"HTTP {error.code}"
            except OSError as error:
                last = str(error)
            self.retries += 1
            if time.monotonic() > deadline:
                self.errors.append(f"{manifest['metadata']['name']}: {last}")
                return
            time.sleep(0.5)
        self.created.append(manifest["metadata"]["name"])


@dataclass
class Scenario:
    """One fault run: its pods, the admin's node watch, and the judgement at the end."""

    fault: str
    env: TestEnv
    pool: LocalSchedulers
    results: Results
    nodes: ObjectWatch
    deleted_by_test: set[str] = field(default_factory=set)
    preemption_expected: bool = False
    killed_at: float | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def begin(cls, fault: str, env: TestEnv, pool: LocalSchedulers, results: Results) -> Scenario:
        nodes = ObjectWatch(env.kubectl, env.namespace, "nodes", "Node")
        return cls(fault, env, pool, results, nodes)

    def settle(self, expected_bound: int, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait until ``expected_bound`` pods are bound and every other one is unschedulable."""

        def state() -> tuple[int, int, int]:
            pods = [p for p in self.env.pods().values() if p["metadata"]["name"]]
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            bound = sum(1 for p in live if node_name(p))
            waiting = sum(1 for p in live if not node_name(p) and not unschedulable_message(p))
            return bound, waiting, len(live)

        def settled() -> bool:
            bound, waiting, _ = state()
            return bound >= expected_bound and waiting == 0

        wait_until(
            settled,
            timeout=timeout,
            what=f"{expected_bound} pods bound, the rest PodScheduled=False",
            interval=0.5,
            describe=state,
        )

    def finish(self, fault_end: float, expected_bound: int, **figures: Any) -> Verdict:
        """Settle, judge, record the figures; fail the test on any problem."""
        self.settle(expected_bound)
        # Events are posted asynchronously after the binding: give them a moment to land.
        time.sleep(3)
        watch = self.env.watch
        bound_at = [
            e.received
            for e in watch.events()
            if e.type != "DELETED" and node_name(e.pod) is not None
        ]
        recovered = max(0.0, max(bound_at, default=fault_end) - fault_end)
        logs = {p.identity: p.log_since_mark() for p in self.pool.test_processes}
        record = Record(
            pod_events=watch.events(),
            node_events=self.nodes.events(),
            final_pods=self.env.pods(),
            final_nodes={
                n["metadata"]["name"]: n
                for n in self.env.kubectl.items("nodes", selector=self.env.selector)
            },
            events=self.env.events(),
            bindings_logged=bindings_logged(logs, self.env.namespace),
            deleted_by_test=frozenset(self.deleted_by_test),
            preemption_expected=self.preemption_expected,
            killed_at=self.killed_at,
        )
        self.nodes.stop()
        verdict = judge(record)
        self.results.add(
            self.fault,
            {**verdict.figures(), "recover_s": round(recovered, 1), **figures},
            self.notes,
        )
        assert verdict.ok, "\n".join(verdict.problems)
        return verdict
