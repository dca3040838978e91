"""A churn soak: pods created and deleted at a steady rate for ``SOAK_MINUTES`` (default 2).

Leaks in a scheduler show only over time: a cache entry per deleted pod, an assumed pod never
forgotten, a queue that keeps what it should drop. Pods are created at ``SOAK_RATE`` per second
(default 100) and each is deleted ``SOAK_WINDOW`` creations later, so the scheduler works
without pause while the number of live pods stays constant; its RSS (``/proc``) and
``scheduler_pending_pods`` (``/metrics``) are sampled every few seconds. The RSS must stay
flat: the last third of the run may not exceed the first third (after a warm-up) by more than a
generous margin. The pending figures are reported, not judged while the churn runs: on a slow
machine the pods created outrun the pods bound and the queue grows for that reason alone,
which says nothing about a leak. Leaks are judged once the churn stops: nothing may stay
pending, no assumption may stay in the cache, and the cache must hold exactly the assigned
pods the API server holds. ``make soak`` runs it for 30 minutes; ``make e2e-faults`` runs a
two-minute slice.

At this volume the admin's pod watch would hold every version of a hundred thousand pods, so
the soak judges from the scheduler's log (no pod logged as bound twice) and the final state
(every remaining pod bound once, within allocatable) instead.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from e2e.localcluster import LocalCluster
from e2e.support.env import TestEnv
from e2e.support.kubectl import events_for, node_name
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers, Schedulers, unverified_tls
from e2e.support.watch import WatchEvent

from .harness import bindings_logged
from .invariants import Record, judge
from .results import Results

pytestmark = pytest.mark.faults

MINUTES = float(os.environ.get("SOAK_MINUTES", "2"))
RATE = float(os.environ.get("SOAK_RATE", "100"))
WINDOW = int(os.environ.get("SOAK_WINDOW", "200"))
SAMPLE_SECONDS = 5.0
WARM_UP = 20.0
RSS_GROWTH = 1.3  # last third against the first third, plus RSS_SLACK
RSS_SLACK = 32 * 1024 * 1024
WORKERS = 8


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def pending_pods(metrics: str) -> float:
    """The sum of ``scheduler_pending_pods`` over its queues."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("scheduler_pending_pods{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def cache_size(metrics: str, kind: str) -> float:
    """``scheduler_cache_size{type=kind}``; a gauge never set reads as absent."""
    for line in metrics.splitlines():
        if line.startswith(f'scheduler_cache_size{{type="{kind}"}}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no scheduler_cache_size for {kind!r}")


def _metrics(url: str, token: str) -> str:
    request = urllib.request.Request(f"{url}/metrics")
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, context=unverified_tls(), timeout=10) as response:
        return str(response.read().decode())


class Churn:
    """Create pod ``i`` and delete pod ``i - window`` at ``rate`` per second, from a pool of
    threads (one request at a time each would not reach the rate)."""

    def __init__(self, local: LocalCluster, env: TestEnv, rate: float, window: int) -> None:
        self.local = local
        self.env = env
        self.rate = rate
        self.window = window
        self.created = 0
        self.failures = 0
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(WORKERS)
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def _pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.env.namespace}/pods"

    def _create(self, index: int) -> None:
        try:
            self.local.api("POST", self._pods_path(), self.env.pod(f"c-{index}", cpu="10m"))
        except (OSError, urllib.error.HTTPError):
            self.failures += 1

    def _delete(self, index: int) -> None:
        try:
            self.local.api("DELETE", f"{self._pods_path()}/c-{index}?gracePeriodSeconds=0")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                self.failures += 1
        except OSError:
            self.failures += 1

    def _step(self, index: int) -> None:
        try:
            self._create(index)
            if index >= self.window:
                self._delete(index - self.window)
        finally:
            self._slots.release()

    def _run(self) -> None:
        started = time.monotonic()
        with ThreadPoolExecutor(WORKERS) as pool:
            index = 0
            while not self._stop.is_set():
                due = started + index / self.rate
                time.sleep(max(0.0, due - time.monotonic()))
                # Never more steps queued than workers: when the API server cannot keep up,
                # the achieved rate drops (and is reported) instead of a backlog building up.
                self._slots.acquire()
                pool.submit(self._step, index)
                index += 1
                self.created = index

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def test_churn_soak(
    env: TestEnv,
    schedulers: Schedulers,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    env.watch.stop()  # see the module docstring
    leader = scheduler_pool.by_identity(scheduler_pool.wait_leader())
    assert leader is not None
    env.create_nodes(4, cpu="8")
    churn = Churn(local, env, RATE, WINDOW)
    samples: list[tuple[float, int, float]] = []  # (seconds, RSS, pending)
    started = time.monotonic()
    churn.start()
    try:
        while (elapsed := time.monotonic() - started) < MINUTES * 60:
            assert leader.alive(), leader.log_since_mark()[-3000:]
            pending = pending_pods(_metrics(leader.url, local.admin_token))
            samples.append((elapsed, rss_bytes(leader.popen.pid), pending))
            time.sleep(SAMPLE_SECONDS)
    finally:
        churn.stop()
    achieved = churn.created / (time.monotonic() - started)

    def drained() -> float | None:
        pending = pending_pods(_metrics(leader.url, local.admin_token))
        return None if pending else 1.0

    wait_until(drained, timeout=60, what="scheduler_pending_pods back to 0", interval=1)
    wait_until(
        lambda: all(node_name(p) for p in env.pods().values()),
        timeout=60,
        what="every remaining pod bound",
    )

    def cache_against_cluster() -> dict[str, float]:
        metrics = _metrics(leader.url, local.admin_token)
        return {
            "cached pods": cache_size(metrics, "pods"),
            "assumed pods": cache_size(metrics, "assumed_pods"),
            "assigned pods in the API": sum(1 for p in env.kubectl.items("pods") if node_name(p)),
        }

    def cache_matches_cluster() -> dict[str, float] | None:
        seen = cache_against_cluster()
        matches = seen["cached pods"] == seen["assigned pods in the API"]
        return seen if matches and not seen["assumed pods"] else None

    # The gauges are sampled every second; a leak keeps them apart for good.
    wait_until(
        cache_matches_cluster,
        timeout=60,
        what="the cache holding exactly the cluster's assigned pods and no assumption",
        interval=1,
        describe=cache_against_cluster,
    )

    steady = [s for s in samples if s[0] >= WARM_UP] or samples
    third = max(1, len(steady) // 3)
    first_rss = statistics.median(s[1] for s in steady[:third])
    last_rss = statistics.median(s[1] for s in steady[-third:])
    first_pending = max(s[2] for s in steady[:third])
    last_pending = max(s[2] for s in steady[-third:])
    logs = {leader.identity: leader.log_since_mark()}
    bound_lines = [
        line
        for line in leader.log_since_mark().splitlines()
        if "pod_bound" in line and f"pod={env.namespace}/" in line
    ]
    pods = env.pods()
    bound_names = [line.split(f"pod={env.namespace}/", 1)[1].split()[0] for line in bound_lines]
    repeated = sorted({n for n in bound_names if bound_names.count(n) > 1})
    # The final state stands in for the watch: one ADDED event per remaining pod.
    final = [WatchEvent(i, 0.0, "ADDED", pod) for i, pod in enumerate(pods.values())]
    record = Record(
        pod_events=final,
        node_events=[],
        final_pods=pods,
        final_nodes={
            n["metadata"]["name"]: n for n in env.kubectl.items("nodes", selector=env.selector)
        },
        events=env.events(),
        bindings_logged={
            name: bound
            for name, bound in bindings_logged(logs, env.namespace).items()
            if name in pods
        },
    )
    verdict = judge(record)
    scheduled_missing = [n for n in pods if not events_for(record.events, n, "Scheduled")]
    mib = 1024 * 1024
    results.add(
        f"churn soak {MINUTES:g} min",
        {
            "pods": churn.created,
            "bound_once": len(set(bound_names)) - len(repeated),
            "pending": 0,
            "lost": verdict.lost,
            "double_bound": len(repeated),
            "victims": 0,
            "recover_s": "",
        },
        [
            f"{achieved:.0f} pods/s created and deleted",
            f"RSS {first_rss / mib:.0f} -> {last_rss / mib:.0f} MiB",
            f"pending max {first_pending:.0f} -> {last_pending:.0f}",
            f"create/delete failures {churn.failures}",
        ],
    )
    assert not repeated, repeated[:10]
    assert verdict.ok, verdict.problems[:20]
    assert not scheduled_missing, scheduled_missing[:10]
    assert last_rss <= first_rss * RSS_GROWTH + RSS_SLACK, (first_rss, last_rss, samples)
