"""Each chosen workload run with each scheduler in turn, on one local control plane.

Upstream runs every workload on a fresh integration-test cluster. Here the control plane stays
up and is swept between runs instead: every namespace the workload made is emptied (finalizers
that would hold a pod are lifted) and deleted, then every node, the PVs made for its claims and
the cluster-wide objects it created go too, so each run (either scheduler, any workload) starts
from a cluster without nodes or workload namespaces. The scheduler under test starts before the
first op, as upstream's does, and stops after the last; a watch of all pods, opened before it
starts, decides when ops complete and feeds the throughput collector. A scheduler gets
upstream's per-test 30 minutes for a workload's ops; past them its run fails. A run that fails
keeps the window it was measuring, marked cut short, so that a scheduler which falls behind for
good is shown with what it did.

Both schedulers get the benchmark's configuration (:mod:`bench.config`): default plugins, the
same client QPS and burst (upstream's scheduler_perf uses 5000/5000), leader election off.
Workload feature gates are recorded but not applied: the control plane and kube-scheduler run
v1.34.10's defaults, and kopf-scheduler has no such gates.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench import stats
from bench.cluster import BenchCluster
from bench.config import SCHEDULER_NAME, UPSTREAM_SCHEDULER_NAME
from bench.e2e import (
    CREATOR_CONCURRENCY,
    delete_namespace,
    delete_volumes,
    say,
    start_scheduler,
)
from bench.kube import MERGE_PATCH, Client, Endpoint, for_each
from bench.upstream import table
from bench.upstream.ops import Execution
from bench.upstream.podstate import PodState, follow
from bench.upstream.profiling import WindowProfiler
from bench.upstream.suite import PER_TEST_TIMEOUT, THROUGHPUT_METRIC, Op, Workload

SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
RUNNER_CONNECTIONS = CREATOR_CONCURRENCY + 16
"""The runner client's connection pool: the creators' connections, the pod watch's, and room for
what runs beside them (a churn's creations, paced deletions, metric scrapes). With the pool no
larger than the creators, a churn request waited for a connection while the creators took each
one freed: Unschedulable/5kNodes/20kInit/10kPods's churn made 23 pods in 80 s where it makes
one every 200 ms."""
SWEEP_STALL = 300.0
"""The sweep gives up once this long has passed with namespaces left and no pod or event gone:
a namespace of 20,000 pods takes longer than that to empty on two CPUs, but never stands still."""
LEFT_IN_NAMESPACES = ("/api/v1/pods", "/api/v1/events")


class RunLimitError(Exception):
    """A workload's ops were still running when the run's time limit passed."""


async def carry_out(
    execution: Execution, ops: Iterable[Op], limit: float | None, records: list[dict[str, Any]]
) -> None:
    """Each op in turn, its record appended to ``records``; :class:`RunLimitError` once
    ``limit`` seconds have passed."""
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            for op in ops:
                op_started = time.monotonic()
                detail = await execution.run(op)
                seconds = round(time.monotonic() - op_started, 3)
                records.append(
                    {"index": op.index, "opcode": op.opcode, "seconds": seconds, **detail}
                )
    except TimeoutError:
        if not deadline.expired():
            raise
        raise RunLimitError(
            f"ops still running after {limit:.0f} s (upstream's per-test timeout)"
        ) from None


def scheduler_name(which: str) -> str:
    return SCHEDULER_NAME if which == "kopf" else UPSTREAM_SCHEDULER_NAME


async def _lift_finalizers(client: Client, path: str) -> None:
    patch = {"metadata": {"finalizers": None}}
    await client.request("PATCH", path, patch, ok_statuses=(404,), content_type=MERGE_PATCH)


async def _release_pods(client: Client, namespace: str) -> None:
    """Lift the finalizers of the namespace's pods, which would keep it from going."""
    collection = f"/api/v1/namespaces/{namespace}/pods"
    pods, _ = await client.list_all(collection)
    held = [
        f"{collection}/{p['metadata']['name']}" for p in pods if p["metadata"].get("finalizers")
    ]
    await for_each(held, CREATOR_CONCURRENCY, functools.partial(_lift_finalizers, client))


async def sweep(client: Client, cluster_objects: Sequence[str] = ()) -> float:
    """Remove what workloads leave: namespaces (and their PVs), nodes, ``cluster_objects``."""
    started = time.monotonic()
    listed, _ = await client.list_all("/api/v1/namespaces")
    namespaces = [n["metadata"]["name"] for n in listed]
    namespaces = [n for n in namespaces if n not in SYSTEM_NAMESPACES]
    for namespace in namespaces:
        await _release_pods(client, namespace)
        await delete_namespace(client, namespace)
        await delete_volumes(client, namespace)
    for path in cluster_objects:
        await client.request("DELETE", path, ok_statuses=(404,))
    nodes, _ = await client.list_all("/api/v1/nodes")

    async def delete_node(node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        await client.request("DELETE", f"/api/v1/nodes/{name}", ok_statuses=(404,))

    await for_each(nodes, CREATOR_CONCURRENCY, delete_node)
    left, moved = await objects_left(client), time.monotonic()
    while namespaces:
        remaining, _ = await client.list_all("/api/v1/namespaces")
        namespaces = [
            n["metadata"]["name"] for n in remaining if n["metadata"]["name"] in namespaces
        ]
        if not namespaces:
            break
        now_left = await objects_left(client)
        if now_left < left:
            left, moved = now_left, time.monotonic()
        elif time.monotonic() - moved > SWEEP_STALL:
            raise RuntimeError(
                f"namespaces still terminating, {left} pods and events left and none gone "
                f"for {SWEEP_STALL:.0f} s: {namespaces}"
            )
        await asyncio.sleep(1.0)
    return time.monotonic() - started


async def objects_left(client: Client) -> int:
    """Pods and events left in the cluster, counted from one-item pages."""
    count = 0
    for path in LEFT_IN_NAMESPACES:
        page = await client.request("GET", path, params={"limit": "1"})
        count += len(page.get("items") or [])
        count += int((page.get("metadata") or {}).get("remainingItemCount") or 0)
    return count


def threshold_verdict(workload: Workload, collected: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Upstream's check: every collected SchedulingThroughput bucket at or above (or, with
    ``expectLower``, at or below) the threshold; 0 means no threshold."""
    selector = workload.threshold_selector
    value = workload.threshold.get()
    verdict: dict[str, Any] = {"threshold": value or None, "metric": selector.name}
    if not value:
        return verdict
    if selector.name != THROUGHPUT_METRIC:
        return {**verdict, "met": None, "reason": "only SchedulingThroughput is compared"}
    figures = [c["SchedulingThroughput"].get(selector.data_bucket) for c in collected]
    met = bool(figures) and all(
        f is not None and (f <= value if selector.expect_lower else f >= value) for f in figures
    )
    return {**verdict, "bucket": selector.data_bucket, "values": figures, "met": met}


async def run_one(
    cluster: BenchCluster,
    client: Client,
    workload: Workload,
    which: str,
    qps: float,
    burst: int,
    work: Path,
    profile_dir: Path | None = None,
    run_limit: float | None = PER_TEST_TIMEOUT,
) -> dict[str, Any]:
    """``workload`` with scheduler ``which`` on a swept cluster; swept again afterwards. With
    ``profile_dir``, kopf-scheduler is sampled over each collection window; past ``run_limit``
    seconds from the scheduler's readiness the run fails (see :func:`carry_out`)."""
    run_dir = work / f"{workload.id.replace('/', '_')}-{which}"
    run_dir.mkdir(parents=True, exist_ok=True)
    pods = PodState()
    listed = asyncio.Event()
    watch = asyncio.ensure_future(follow(client, pods, listed))
    await listed.wait()
    process = start_scheduler(which, cluster, qps, burst, run_dir)

    async def scrape() -> str:
        status, text = await asyncio.to_thread(process.get, "/metrics", 30.0)
        return text if status == 200 else ""

    profiler = None
    if profile_dir is not None and which == "kopf":
        prefix = profile_dir / f"{workload.id.replace('/', '_')}-{which}"
        profiler = WindowProfiler(process.pid, prefix)
    execution = Execution(
        client, pods, workload.test_case, scheduler_name(which), scrape, profiler=profiler
    )
    result: dict[str, Any] = {"scheduler": which, "ops": [], "ok": False}
    started = time.monotonic()
    try:
        result["ready_seconds"] = round(await asyncio.to_thread(process.wait_ready), 2)
        started = time.monotonic()
        await carry_out(execution, workload.ops(), run_limit, result["ops"])
        result["ok"] = True
    except RunLimitError as error:
        result["error"] = f"{type(error).__name__}: {error}"
    except Exception as error:
        traceback.print_exc()
        result["error"] = f"{type(error).__name__}: {error}"[:800]
    finally:
        result["wall_seconds"] = round(time.monotonic() - started, 2)
        result["background_errors"] = await execution.stop_background(cut_short=not result["ok"])
        for record in result["ops"]:
            record.update(execution.reported_later.get(record["index"], {}))
        if profiler is not None:
            profiler.close()
        result["exit_code"] = await asyncio.to_thread(process.stop)
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    result["collected"] = execution.collected
    result["adaptations"] = sorted(execution.adaptations)
    result["threshold"] = threshold_verdict(workload, execution.collected)
    result["sweep_seconds"] = round(await sweep(client, execution.cluster_objects), 1)
    return result


def collected_average(run: dict[str, Any]) -> float | None:
    """The last window's average throughput, for a run that finished its workload."""
    if not run.get("ok"):
        return None
    collected = run.get("collected") or [{}]
    value = (collected[-1].get("SchedulingThroughput") or {}).get("Average")
    return float(value) if isinstance(value, int | float) else None


async def run_workloads(
    cluster: BenchCluster,
    workloads: Sequence[Workload],
    schedulers: Sequence[str],
    qps: float,
    burst: int,
    work: Path,
    checkpoint: Callable[[list[dict[str, Any]]], None] | None = None,
    profile_dir: Path | None = None,
    run_limit: float | None = PER_TEST_TIMEOUT,
) -> list[dict[str, Any]]:
    """Every workload with every scheduler in turn; one record per workload."""
    endpoint = Endpoint(cluster.server, cluster.admin_token, str(cluster.ca_file))
    records = []
    async with Client(endpoint, "bench-upstream-runner", connections=RUNNER_CONNECTIONS) as client:
        await sweep(client)
        for workload in workloads:
            say(f"upstream {workload.id}")
            record: dict[str, Any] = {
                "workload": workload.id,
                "config": str(workload.test_case.config.parent.name),
                "labels": list(workload.labels),
                "params": dict(workload.params),
                "feature_gates": dict(workload.feature_gates),
                "runs": {},
            }
            started = time.monotonic()
            for which in schedulers:
                run = await run_one(
                    cluster, client, workload, which, qps, burst, work, profile_dir, run_limit
                )
                record["runs"][which] = run
                say(f"  {which}: {_brief(run)}")
            record["seconds"] = round(time.monotonic() - started, 1)
            runs = record["runs"]
            record["throughput_ratio"] = stats.ratio(
                collected_average(runs.get("kopf") or {}),
                collected_average(runs.get("upstream") or {}),
            )
            records.append(record)
            if checkpoint is not None:
                checkpoint(records)
    return records


def _brief(run: dict[str, Any]) -> str:
    windows = [table.window_brief(window) for window in run.get("collected") or ()]
    if not run.get("ok"):
        return "; ".join([f"failed: {run.get('error')}", *windows])
    parts = windows
    verdict = run["threshold"]
    if verdict.get("threshold"):
        parts.append(f"threshold {verdict['threshold']} met: {verdict.get('met')}")
    return "; ".join(parts) or "no collection"


def write(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(results, indent=1))
    tmp.replace(path)
