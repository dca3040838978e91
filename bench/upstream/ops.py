"""Carrying out a workload's ops on the local control plane, as upstream's executor does.

:class:`Execution` holds what upstream's workload executor holds while it runs a workload: the
pods it expects per namespace (for barriers), the namespaces it made, the open metrics
collection, the work left running in the background (churn, deletions started with
``skipWaitToCompletion``), plus what the runner must remove afterwards. Each op kind has one
coroutine here; they follow upstream's semantics (see the op's docstring) with the objects made
by :mod:`bench.upstream.manifests`.

Upstream waits up to ten minutes for pods to be scheduled; here a wait fails once ten minutes
pass without one more pod getting there, so that large workloads on a slow machine are not cut
short while they still progress.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.localcluster import node_ready
from e2e.support import dra

from bench.e2e import (
    CREATOR_CONCURRENCY,
    SLICES_PATH,
    create_namespace,
    wait_claims_bound,
)
from bench.kube import (
    MERGE_PATCH,
    VOLUMES_PATH,
    ApiError,
    Client,
    claims_path,
    create_many,
    for_each,
    nodes_path,
    pods_path,
)
from bench.upstream import manifests, schedmetrics, throughput
from bench.upstream.claim_allocation import ClaimAllocationError, allocate_claims
from bench.upstream.podstate import PodRecord, PodState, selects
from bench.upstream.profiling import WindowProfiler
from bench.upstream.resources import ResourceMap
from bench.upstream.suite import Op, TestCase
from bench.upstream.ticker import Ticker

Raw = dict[str, Any]
STALL_SECONDS = 600.0
POLL_SECONDS = 0.25
"""How often a wait counts its pods (upstream: every second); each count reads every pod."""
CREATE_ANY_RETRY_SECONDS = 20.0
DEFAULT_CHURN_INTERVAL_MS = 500
PRIORITY_CLASSES_PATH = "/apis/scheduling.k8s.io/v1/priorityclasses"
CSI_NODES_PATH = "/apis/storage.k8s.io/v1/csinodes"


class OpError(RuntimeError):
    """An op that did not complete as upstream's would have."""


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def _lift_not_ready(node: Raw) -> list[Raw] | None:
    """The node's taints without the not-ready one, if the node is Ready and still carries it;
    ``None`` otherwise.

    The API server taints every new node not-ready, and the node lifecycle controller lifts the
    taint once the node reports Ready: about 23 nodes a second here (kwok makes 500 nodes Ready
    within a second), which made thousands of nodes take minutes. Upstream's test nodes carry no
    taint at all.
    """
    taints = (node.get("spec") or {}).get("taints") or []
    if not any(taint.get("key") == NOT_READY_TAINT for taint in taints):
        return None
    conditions = (node.get("status") or {}).get("conditions") or []
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return None
    return [taint for taint in taints if taint.get("key") != NOT_READY_TAINT]


@dataclass
class Collection:
    """One metrics collection: its pods (namespaces and selector), how many of them were seen
    scheduled, the throughput sampler over that count and the scheduler's /metrics when it
    started. A relist of the pods inside the window (``pod_relists`` in the results) means the
    count caught up in one jump, and the samples around it are not per-second rates."""

    name: str
    op_index: int
    namespaces: list[str]
    selector: Mapping[str, str]
    metrics_before: str
    scheduled: int
    pod_lists_before: int
    """How many times the runner had listed the pods when the collection started."""
    started: float = field(default_factory=time.monotonic)
    unsubscribe: Callable[[], None] = lambda: None

    def __post_init__(self) -> None:
        self.collector = throughput.ThroughputCollector(lambda: self.scheduled, time.monotonic)
        self.task = asyncio.ensure_future(self.collector.run())

    def count(self, record: PodRecord) -> None:
        if record.namespace in self.namespaces and selects(self.selector, record.labels):
            self.scheduled += 1


@dataclass
class Execution:
    client: Client
    pods: PodState
    test_case: TestCase
    scheduler_name: str
    scrape: Callable[[], Awaitable[str]]
    rng: random.Random = field(default_factory=random.Random)
    """Node name suffixes and the node order claims are allocated in: fresh each run, as
    upstream's are random."""
    node_names: set[str] = field(default_factory=set)
    """The names given to nodes so far, which a generated name must not repeat."""
    pods_per_namespace: dict[str, int] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    cluster_objects: list[str] = field(default_factory=list)
    """Item paths of the cluster-scoped objects made (not nodes), to delete afterwards."""
    background: list[asyncio.Task[Any]] = field(default_factory=list)
    collection: Collection | None = None
    collected: list[dict[str, Any]] = field(default_factory=list)
    adaptations: set[str] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)
    profiler: WindowProfiler | None = None
    """Samples the scheduler over each collection window (``--profile``)."""
    reported_later: dict[int, dict[str, Any]] = field(default_factory=dict)
    """What an op's background work found once it was done, by op index (how long paced
    deletions took, with ``skipWaitToCompletion``)."""

    def __post_init__(self) -> None:
        self.resources = ResourceMap(self.client)

    # -- shared steps ---------------------------------------------------------------------

    async def ensure_namespace(self, name: str, template: Raw | None = None) -> None:
        """The namespace (with the template's labels and annotations), once per run."""
        if name in self.namespaces:
            return
        await create_namespace(self.client, name)
        self.namespaces.append(name)
        metadata = (template or {}).get("metadata") or {}
        extra = {k: metadata[k] for k in ("labels", "annotations") if metadata.get(k)}
        if extra:
            await self.client.request(
                "PATCH", f"/api/v1/namespaces/{name}", {"metadata": extra}, content_type=MERGE_PATCH
            )

    async def adapt(self, raw: Raw) -> Raw:
        """An object as it is created here (see :mod:`bench.upstream.manifests`)."""
        kind = raw.get("kind")
        if kind == "Node":
            self.adaptations.add("Node: kwok's annotation")
            return manifests.kwok_node(raw)
        if kind != "Pod":
            return raw
        pod, needed = manifests.for_scheduler(raw, self.scheduler_name)
        self.adaptations.add("Pod: schedulerName, default ServiceAccount without token")
        if needed is not None:
            name = needed["metadata"]["name"]
            self.adaptations.add(f"Pod: spec.priority {needed['value']} through PriorityClass")
            if name not in self.priority_classes:
                await self.client.request("POST", PRIORITY_CLASSES_PATH, needed, ok_statuses=(409,))
                self.priority_classes.add(name)
        return pod

    async def wait_for(
        self, progress: Callable[[], int], wanted: int, what: str, stall: float = STALL_SECONDS
    ) -> None:
        """Until ``progress()`` reaches ``wanted``; fails after ``stall`` seconds without gain."""
        best, since = progress(), time.monotonic()
        while best < wanted:
            await asyncio.sleep(POLL_SECONDS)
            now = progress()
            if now > best:
                best, since = now, time.monotonic()
            elif time.monotonic() - since > stall:
                raise OpError(f"{what}: {best} of {wanted} after {stall:.0f} s without progress")

    # -- metrics collection ---------------------------------------------------------------

    async def start_collecting(
        self, op_index: int, name: str, namespaces: Sequence[str], selector: Mapping[str, str]
    ) -> None:
        if self.collection is not None:
            raise OpError("a metrics collection is already running")
        before = await self.scrape()
        # Counted and subscribed with no await in between, so that no pod is missed.
        scheduled = self.pods.scheduled(namespaces, selector)
        collection = Collection(
            name, op_index, list(namespaces), dict(selector), before, scheduled, self.pods.lists
        )
        collection.unsubscribe = self.pods.on_scheduled(collection.count)
        self.collection = collection
        if self.profiler is not None:
            self.profiler.start()

    async def stop_collecting(self, cut_short: bool = False) -> None:
        """Close the open collection into :attr:`collected`; ``cut_short`` marks a window closed
        before its pods were all scheduled (the run failed or passed its time limit)."""
        collection = self.collection
        if collection is None:
            raise OpError("no metrics collection is running")
        self.collection = None
        collection.task.cancel()
        await asyncio.gather(collection.task, return_exceptions=True)
        collection.unsubscribe()
        after = await self.scrape()
        window = {
            "name": collection.name,
            "op": collection.op_index,
            "namespaces": collection.namespaces,
            "scheduled": collection.scheduled,
            "seconds": round(time.monotonic() - collection.started, 3),
            "SchedulingThroughput": throughput.summary(collection.collector.rates),
            "pod_relists": self.pods.lists - collection.pod_lists_before,
            "scheduler_metrics": schedmetrics.window(collection.metrics_before, after),
        }
        if cut_short:
            window["cut_short"] = True
        if self.profiler is not None:
            window["profile"] = await asyncio.to_thread(self.profiler.stop)
        self.collected.append(window)

    # -- ops ------------------------------------------------------------------------------

    def handlers(self) -> dict[str, Callable[[Op], Awaitable[dict[str, Any]]]]:
        """The coroutine of every op kind the runner carries out (``createPodSets`` is unrolled
        into ``createPods`` before the ops run)."""
        return {
            "createNodes": self.create_nodes,
            "createNamespaces": self.create_namespaces,
            "createPods": self.create_pods,
            "deletePods": self.delete_pods,
            "churn": self.churn,
            "createAny": self.create_any,
            "updateAny": self.update_any,
            "barrier": self.barrier,
            "sleep": self.sleep,
            "startCollectingMetrics": self.start_collecting_metrics,
            "stopCollectingMetrics": self.stop_collecting_metrics,
            "createResourceDriver": self.create_resource_driver,
            "allocResourceClaims": self.alloc_resource_claims,
        }

    async def run(self, op: Op) -> dict[str, Any]:
        """Carry out one op; what it did, for the run's record."""
        handler = self.handlers().get(op.opcode)
        if handler is None:
            raise OpError(f"op {op.index} {op.opcode}: not carried out by this runner")
        return await handler(op)

    async def _lift_not_ready_taint(self, lifted: tuple[Raw, list[Raw]]) -> None:
        """Give a node kwok made Ready its taints without the not-ready one (as the node lifecycle
        controller would); a node changed meanwhile (409) is left to it."""
        node, remaining = lifted
        metadata = node["metadata"]
        patch = {
            "metadata": {"resourceVersion": metadata["resourceVersion"]},
            "spec": {"taints": remaining or None},
        }
        await self.client.request(
            "PATCH",
            f"/api/v1/nodes/{metadata['name']}",
            patch,
            ok_statuses=(404, 409),
            content_type=MERGE_PATCH,
        )

    async def create_nodes(self, op: Op) -> dict[str, Any]:
        """``count`` nodes from the template (or upstream's default node), each named and
        labelled with its hostname, prepared by the op's strategy, then Ready through kwok."""
        count = op.count()
        template = op.path("nodeTemplatePath")
        labels = op.get("labelNodePrepareStrategy") or {}
        unique = op.get("uniqueNodeLabelStrategy") or {}
        allocatable = op.get("nodeAllocatableStrategy") or {}
        nodes = []
        for index in range(count):
            raw = (
                manifests.from_template(template, index, count)
                if template
                else manifests.default_node(op.index)
            )
            node = manifests.prepared_node(raw, self.rng, self.node_names)
            if labels:
                values = labels["labelValues"]
                manifests.with_label(node, labels["labelKey"], values[index % len(values)])
            if unique:
                manifests.with_label(node, unique["labelKey"], str(uuid.uuid4()))
            if allocatable:
                manifests.with_allocatable(node, allocatable.get("nodeAllocatable") or {})
            nodes.append(node)

        async def create(node: Raw) -> None:
            stored = await self.client.request("POST", nodes_path(node), node)
            if allocatable:
                csi = manifests.csi_node(stored, allocatable)
                await self.client.request("POST", CSI_NODES_PATH, csi, ok_statuses=(409,))

        self.adaptations.add("Node: kwok's annotation")
        creation = await for_each(nodes, CREATOR_CONCURRENCY, create)
        names = {n["metadata"]["name"] for n in nodes}

        self.adaptations.add("Node: not-ready taint lifted by the runner once Ready")

        async def ready_count() -> int:
            listed, _ = await self.client.list_all("/api/v1/nodes")
            made = [n for n in listed if n["metadata"]["name"] in names]
            liftable = [(n, taints) for n in made if (taints := _lift_not_ready(n)) is not None]
            await for_each(liftable, CREATOR_CONCURRENCY, self._lift_not_ready_taint)
            return sum(1 for n in made if node_ready(n))

        started = time.monotonic()
        while await ready_count() < count:
            if time.monotonic() - started > STALL_SECONDS:
                raise OpError(f"createNodes: not all {count} nodes Ready")
            await asyncio.sleep(1.0)
        ready = round(time.monotonic() - started, 2)
        return {"count": count, "creation": creation, "ready_seconds": ready}

    async def create_namespaces(self, op: Op) -> dict[str, Any]:
        template_path = op.path("namespaceTemplatePath")
        template = manifests.from_file(template_path) if template_path else None
        names = [f"{op.get('prefix', '')}-{i}" for i in range(op.count())]
        for name in names:
            await self.ensure_namespace(name, template)
            self.pods_per_namespace.setdefault(name, 0)
        return {"namespaces": names}

    def _pod_template(self, op: Op) -> Path | None:
        return op.path("podTemplatePath") or self.test_case.default_pod_template

    async def _pods(self, op: Op, namespace: str, count: int) -> list[Raw]:
        path = self._pod_template(op)
        pods = []
        for index in range(count):
            raw = manifests.from_template(path, index, count) if path else manifests.default_pod()
            pod = await self.adapt(raw)
            pod.setdefault("metadata", {})["namespace"] = namespace
            pods.append(pod)
        return pods

    async def _create_with_volumes(self, op: Op, namespace: str, pods: list[Raw]) -> None:
        """Each pod's claim and PV, bound both ways, and only then the pods (once the PV
        controller agrees that every pair is Bound)."""
        claim_path = op.path("persistentVolumeClaimTemplatePath")
        volume_path = op.path("persistentVolumeTemplatePath")
        assert claim_path is not None and volume_path is not None
        claim_template = manifests.from_file(claim_path)
        volume_template = manifests.from_file(volume_path)
        self.adaptations.add("PV/PVC: claimRef with the claim's UID, claim status filled")

        async def pair(index: int) -> None:
            claim, volume = manifests.volume_pair(claim_template, volume_template, namespace, index)
            claim["metadata"]["namespace"] = namespace
            name = claim["metadata"]["name"]
            path = claims_path(claim)
            stored = await self.client.request("POST", path, claim, ok_statuses=(409,))
            stored = stored or await self.client.request("GET", f"{path}/{name}")
            status = manifests.claim_status(claim, volume)
            await self.client.request(
                "PATCH", f"{path}/{name}/status", {"status": status}, content_type=MERGE_PATCH
            )
            bound = manifests.bind_volume(volume, stored)
            await self.client.request("POST", VOLUMES_PATH, bound, ok_statuses=(409,))
            await self.client.request(
                "PATCH",
                f"{VOLUMES_PATH}/{bound['metadata']['name']}/status",
                {"status": bound["status"]},
                content_type=MERGE_PATCH,
            )
            manifests.with_claim(pods[index], name)

        await for_each(list(range(len(pods))), CREATOR_CONCURRENCY, pair)
        claims, _ = await self.client.list_all(
            f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        )
        await wait_claims_bound(self.client, namespace, len(claims))

    async def create_pods(self, op: Op) -> dict[str, Any]:
        """Create the pods (with a bound claim each when the op names volume templates); then
        wait until they are scheduled, or count them for a later barrier
        (``skipWaitToCompletion``), or keep the namespace at ``count`` pods for ``duration``
        (``steadyState``). ``collectMetrics`` measures from just before the first pod is
        created until the wait ends; the claims are made and Bound before that, since here a
        PV controller has to agree with them first and upstream has none to wait for."""
        namespace = str(op.get("namespace") or f"namespace-{op.index}")
        if namespace not in self.pods_per_namespace:
            await self.ensure_namespace(namespace)
            self.pods_per_namespace[namespace] = 0
        count = op.count()
        pods = [] if op.get("steadyState") else await self._pods(op, namespace, count)
        if pods and op.get("persistentVolumeClaimTemplatePath"):
            await self._create_with_volumes(op, namespace, pods)
        if op.get("collectMetrics"):
            await self.start_collecting(op.index, namespace, [namespace], {})
        if op.get("steadyState"):
            detail = await self._steady_state(op, namespace, count)
        else:
            creation = await create_many(self.client, pods_path, pods, CREATOR_CONCURRENCY)
            detail = {"creation": creation}
            if op.get("skipWaitToCompletion"):
                self.pods_per_namespace[namespace] += count
            else:
                await self.wait_for(
                    lambda: self.pods.scheduled([namespace]),
                    count,
                    f"pods scheduled in {namespace}",
                )
        if op.get("collectMetrics"):
            await self.stop_collecting()
        return {"namespace": namespace, "count": count, **detail}

    async def _steady_state(self, op: Op, namespace: str, count: int) -> dict[str, Any]:
        """``count`` pods; each time ``count`` more of them got scheduled, all pods of the
        namespace are deleted and ``count`` new ones created, until ``duration`` is over."""
        scheduled: asyncio.Queue[PodRecord] = asyncio.Queue()
        unsubscribe = self.pods.on_scheduled(
            lambda record: scheduled.put_nowait(record) if record.namespace == namespace else None
        )
        deadline = time.monotonic() + op.seconds()
        seen = rounds = 0
        try:
            await create_many(
                self.client, pods_path, await self._pods(op, namespace, count), CREATOR_CONCURRENCY
            )
            while (left := deadline - time.monotonic()) > 0:
                try:
                    await asyncio.wait_for(scheduled.get(), left)
                except TimeoutError:
                    break
                seen += 1
                if seen % count == 0:
                    await self.client.request(
                        "DELETE",
                        pods_path({"metadata": {"namespace": namespace}}),
                        params={"gracePeriodSeconds": "0", "propagationPolicy": "Background"},
                    )
                    pods = await self._pods(op, namespace, count)
                    await create_many(self.client, pods_path, pods, CREATOR_CONCURRENCY)
                    rounds += 1
        finally:
            unsubscribe()
        return {"scheduled": seen, "rounds": rounds}

    async def delete_pods(self, op: Op) -> dict[str, Any]:
        """Delete the namespace's pods that match the selector, as they were when the op
        started: all at once, or one request per tick of a ticker at ``deletePodsPerSecond``
        (:mod:`bench.upstream.ticker`); in the background with ``skipWaitToCompletion``, and
        then how long the deletions took is reported with the op once they are done."""
        namespace = str(op.get("namespace"))
        selector = dict(op.get("labelSelector") or {})
        names = [r.name for r in self.pods.select([namespace], selector)]
        rate = int(op.get("deletePodsPerSecond") or 0)
        path = pods_path({"metadata": {"namespace": namespace}})

        async def delete() -> None:
            if rate <= 0:
                query = {"labelSelector": ",".join(f"{k}={v}" for k, v in selector.items())}
                await self.client.request("DELETE", path, params=query, ok_statuses=(404,))
                return
            started = time.monotonic()
            ticker = Ticker(1.0 / rate)
            for name in names:
                await ticker.tick()
                await self.client.request("DELETE", f"{path}/{name}", ok_statuses=(404,))
            self.reported_later[op.index] = {
                "deleting_seconds": round(time.monotonic() - started, 3)
            }

        if op.get("skipWaitToCompletion"):
            self.background.append(asyncio.ensure_future(delete()))
        else:
            await delete()
        return {"namespace": namespace, "pods": len(names), "per_second": rate}

    async def churn(self, op: Op) -> dict[str, Any]:
        """In the background until the workload ends, every ``intervalMilliseconds``: create one
        object of each template (``create``, up to ``number`` rounds, 0 for no end), or take
        turns over ``number`` slots per template, deleting the slot's object when it has one
        and creating one when it has none (``recreate``)."""
        namespace = str(op.get("namespace") or f"namespace-{op.index}")
        await self.ensure_namespace(namespace)
        kinds = []
        for path in op.get("templatePaths") or ():
            raw = await self.adapt(manifests.from_file(Path(path)))
            resource = await self.resources.of(raw)
            kinds.append((raw, resource.collection(namespace if resource.namespaced else None)))
        interval = int(op.get("intervalMilliseconds") or DEFAULT_CHURN_INTERVAL_MS) / 1000.0
        mode, number = str(op.get("mode")), int(op.get("number") or 0)

        async def create(raw: Raw, collection: str) -> str:
            try:
                stored = await self.client.request("POST", collection, raw, retries=0)
            except ApiError:
                return ""  # upstream ignores failed churn creations too
            return str(stored["metadata"]["name"])

        async def turns() -> None:
            slots = [[""] * max(number, 1) for _ in kinds]
            tick = 0
            ticker = Ticker(interval)
            while mode == "recreate" or number == 0 or tick < number:
                await ticker.tick()
                for (raw, collection), ring in zip(kinds, slots, strict=True):
                    if mode == "create":
                        await create(raw, collection)
                        continue
                    slot = tick % number
                    if ring[slot]:
                        await self.client.request(
                            "DELETE", f"{collection}/{ring[slot]}", ok_statuses=(404,)
                        )
                        ring[slot] = ""
                    else:
                        ring[slot] = await create(raw, collection)
                tick += 1

        self.background.append(asyncio.ensure_future(turns()))
        return {"namespace": namespace, "mode": mode, "templates": len(kinds)}

    async def _object_op(self, op: Op) -> tuple[str | None, Path, int]:
        """A createAny or updateAny op's namespace (made if missing), template and count."""
        namespace = str(op.get("namespace") or "") or None
        if namespace:
            await self.ensure_namespace(namespace)
        template = op.path("templatePath")
        if template is None:
            raise OpError(f"op {op.index} {op.opcode}: no templatePath")
        return namespace, template, int(op.get("count", 1))

    async def create_any(self, op: Op) -> dict[str, Any]:
        """``count`` (default 1) objects of the template, each rendered with its index,
        created in the op's namespace or cluster-wide as the kind requires."""
        namespace, template, count = await self._object_op(op)
        for index in range(count):
            raw = await self.adapt(manifests.from_template(template, index, count))
            resource = await self.resources.of(raw)
            if resource.namespaced != bool(namespace):
                raise OpError(f"{template.name}: {resource.plural} and namespace {namespace!r}")
            stored = await self._create_retrying(resource.collection(namespace), raw)
            name = stored["metadata"]["name"]
            if not resource.namespaced and raw.get("kind") != "Node":  # nodes go in the sweep
                self.cluster_objects.append(resource.item(name))
        return {"template": template.name, "count": count}

    async def _create_retrying(self, collection: str, raw: Raw) -> Raw:
        """Upstream retries a createAny for 20 s (a type may not be served yet)."""
        deadline = time.monotonic() + CREATE_ANY_RETRY_SECONDS
        while True:
            try:
                stored: Raw = await self.client.request(
                    "POST", collection, raw, params={"fieldValidation": "Strict"}, retries=0
                )
                return stored
            except ApiError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(1.0)

    async def update_any(self, op: Op) -> dict[str, Any]:
        """Replace ``count`` (default 1) objects by the template rendered with each index, then
        their status the same way; ``updatePerSecond`` of them a second, or all at once. A
        ``subresources`` list sends the first update to those subresources instead."""
        namespace, template, count = await self._object_op(op)
        rate = int(op.get("updatePerSecond") or 0)
        subresources = [str(s) for s in op.get("subresources") or ()]
        for index in range(count):
            if rate:
                await asyncio.sleep(1.0 / rate)
            raw = manifests.from_template(template, index, count)
            resource = await self.resources.of(raw)
            item = resource.item(raw["metadata"]["name"], namespace)
            if raw.get("kind") == "Pod":
                live = await self.client.request("GET", item)
                raw = manifests.pod_update(raw, live)
                self.adaptations.add("Pod update: what admission added at creation kept")
                if "resize" in subresources:
                    status = manifests.resize_capable_status(live)
                    await self.client.request(
                        "PATCH", f"{item}/status", status, content_type=MERGE_PATCH
                    )
                    self.adaptations.add("Pod resize: container statuses report resources")
            raw = await self.adapt(raw)
            target = "/".join([item, *subresources])
            await self.client.request("PUT", target, raw, params={"fieldValidation": "Strict"})
            await self.client.request("PUT", f"{item}/status", raw)
        return {"template": template.name, "count": count, "per_second": rate}

    async def barrier(self, op: Op) -> dict[str, Any]:
        """Wait until the pods the earlier ops counted (``skipWaitToCompletion``) are
        scheduled (``Scheduled``, then forget them) or at least tried (``Attempted``)."""
        namespaces = list(op.get("namespaces") or self.pods_per_namespace)
        selector = dict(op.get("labelSelector") or {})
        unknown = [n for n in namespaces if n not in self.pods_per_namespace]
        if unknown:
            raise OpError(f"barrier: unknown namespaces {unknown}")
        attempted = op.get("stageRequirement") == "Attempted"
        count = self.pods.attempted if attempted else self.pods.scheduled
        stage = "attempted" if attempted else "scheduled"
        for namespace in namespaces:
            await self.wait_for(
                functools.partial(count, [namespace], selector),
                self.pods_per_namespace[namespace],
                f"pods {stage} in {namespace}",
            )
        if not attempted:
            for namespace in namespaces:
                del self.pods_per_namespace[namespace]
        return {"namespaces": namespaces, "stage": "Attempted" if attempted else "Scheduled"}

    async def sleep(self, op: Op) -> dict[str, Any]:
        await asyncio.sleep(op.seconds())
        return {"seconds": op.seconds()}

    async def start_collecting_metrics(self, op: Op) -> dict[str, Any]:
        namespaces = [str(n) for n in op.get("namespaces") or ()]
        selector = dict(op.get("labelSelector") or {})
        await self.start_collecting(op.index, str(op.get("name", "")), namespaces, selector)
        return {"namespaces": namespaces}

    async def stop_collecting_metrics(self, op: Op) -> dict[str, Any]:
        await self.stop_collecting()
        return {}

    async def create_resource_driver(self, op: Op) -> dict[str, Any]:
        """A ResourceSlice of ``maxClaimsPerNode`` devices for every node whose name matches
        the ``nodes`` glob: what a DRA driver publishes (:func:`e2e.support.dra.perf_slice`)."""
        pattern = str(op.get("nodes"))
        driver = str(op.get("driverName"))
        devices = int(op.get("maxClaimsPerNode") or 0)
        listed, _ = await self.client.list_all("/api/v1/nodes")
        names = [n["metadata"]["name"] for n in listed]
        matching = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
        slices = [dra.perf_slice(name, devices, driver=driver) for name in matching]
        await create_many(self.client, lambda _: SLICES_PATH, slices, CREATOR_CONCURRENCY)
        self.cluster_objects.extend(f"{SLICES_PATH}/{s['metadata']['name']}" for s in slices)
        return {"nodes": len(matching), "devices_per_node": devices}

    async def alloc_resource_claims(self, op: Op) -> dict[str, Any]:
        """Allocate the claims of ``namespace`` (every namespace when empty) that have no
        allocation, without a pod, as upstream's allocator library does for the op
        (:mod:`bench.upstream.claim_allocation`)."""
        self.adaptations.add(
            "allocResourceClaims: claims allocated by kopf-scheduler's restatement of "
            "upstream's structured allocator"
        )
        try:
            return await allocate_claims(self.client, str(op.get("namespace") or ""), self.rng)
        except ClaimAllocationError as error:
            raise OpError(f"op {op.index} allocResourceClaims: {error}") from error

    async def stop_background(self, cut_short: bool = False) -> list[str]:
        """Stop what still runs in the background; the errors it met, if any. A collection
        still open is closed; ``cut_short`` (the run failed) marks its window so."""
        if self.collection is not None:
            await self.stop_collecting(cut_short)
        for task in self.background:
            task.cancel()
        results = await asyncio.gather(*self.background, return_exceptions=True)
        return [
            f"{type(r).__name__}: {r}"
            for r in results
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
        ]
