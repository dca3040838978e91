"""End-to-end runs: ours and upstream kube-scheduler, one after the other, on one local cluster.

For each scheduler the run starts from the same state: the same kwok nodes (created once,
shared), a fresh namespace, the scenario's init pods created already bound (and Running via
kwok) before the scheduler starts. Then the scheduler starts and syncs, the external watcher
(:mod:`bench.watcher`, its own process) opens its watch, and the creator posts the measured
pods with many requests in flight while S5/S6 arrivals are posted at their rate. The run ends
when the watcher has seen every measured pod bound. Afterwards the scheduler's /metrics are
scraped, the scheduler is stopped, its API requests are counted from the audit log by its
identity, and the namespace is deleted with grace period 0.

For S7 the nodes also get their CSI volume limit and a CSINode (once; both are kept), every
pod's claim and PV are created bound before the init pods, the measured pods' pairs included,
and the run waits until all of them are Bound before the scheduler starts; its PVs are deleted
with its namespace.

For DRA1 every node also publishes its devices in a ResourceSlice, and the DeviceClass is made
(once; both are kept); each run creates the ResourceClaimTemplate in its namespace and, before
the init pods, their claims, which it allocates and reserves for them once the pods exist. The
measured pods' claims are made by kube-controller-manager's resource-claim controller. After the
run the namespace's claims must be gone before the next run starts, so that it finds every
device free; the check ``devices`` holds every bound measured pod to an allocation on its node
and no device to two claims.

Both schedulers get the same ``clientConnection`` QPS/burst, leader election off, the default
plugins and low log verbosity (ours at ``warning``, kube-scheduler at ``--v=1``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from e2e.localcluster import node_ready, procfs, spawn_logged, unverified_tls
from e2e.localcluster.cluster import ALWAYS_ALLOW_PATHS
from e2e.localcluster.listen_ports import free_port

from bench import promtext, shapes, stats
from bench.cluster import KOPF_USER, UPSTREAM_USER, BenchCluster
from bench.config import (
    SCHEDULER_NAME,
    SCHEDULERS,
    UPSTREAM_SCHEDULER_NAME,
    scheduler_config,
    upstream_config,
)
from bench.kube import (
    CSI_NODES_PATH,
    MERGE_PATCH,
    VOLUMES_PATH,
    Client,
    Endpoint,
    claims_path,
    create_many,
    for_each,
    nodes_path,
    pods_path,
)
from bench.neighbours import BusyNeighbours
from bench.report import top_processes
from bench.scenarios import ZONE_LABEL, Scenario, check

REPO = Path(__file__).resolve().parent.parent
RESOURCE_PATH = "/apis/resource.k8s.io/v1"
DEVICE_CLASSES_PATH = f"{RESOURCE_PATH}/deviceclasses"
SLICES_PATH = f"{RESOURCE_PATH}/resourceslices"
CREATOR_CONCURRENCY = 48


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# -- processes ------------------------------------------------------------------------------


def proc_status_mb(pid: int, key: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


@dataclass
class SchedulerProcess:
    which: str
    popen: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                self.base_url + path, timeout=timeout, context=unverified_tls()
            ) as response:
                return int(response.status), response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return int(error.code), ""
        except OSError:
            return 0, ""

    def wait_ready(self, timeout: float = 300.0) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.which} scheduler exited: see {self.log_path}")
            status, _ = self.get("/readyz", timeout=2.0)
            if status == 200:
                return time.monotonic() - started
            time.sleep(0.2)
        raise RuntimeError(f"{self.which} scheduler not ready after {timeout:.0f}s")

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


def start_scheduler(
    which: str,
    cluster: BenchCluster,
    qps: float,
    burst: int,
    work: Path,
    config: Mapping[str, Any] | None = None,
    source: Path | None = None,
) -> SchedulerProcess:
    """``which`` scheduler against ``cluster``; ``config`` replaces kopf-scheduler's benchmark
    configuration (a profile with other plugins); ``source`` is a directory whose ``operator/``
    holds the kopf_scheduler package to run instead of this checkout's (another revision)."""
    port = free_port()
    log_path = work / f"{which}-scheduler.log"
    config_path = work / f"{which}-config.yaml"
    if which == "kopf":
        chosen = config if config is not None else scheduler_config(qps, burst)
        config_path.write_text(yaml.safe_dump(dict(chosen)))
        command = [
            str(REPO / ".venv" / "bin" / "kopf-scheduler"),
            "run",
            f"--kubeconfig={cluster.user_kubeconfig(KOPF_USER)}",
            f"--config={config_path}",
            "--health-host=127.0.0.1",
            f"--health-port={port}",
            f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
            "--log-level=warning",
            "--log-format=console",
        ]
    else:
        kubeconfig = str(cluster.user_kubeconfig(UPSTREAM_USER))
        config_path.write_text(yaml.safe_dump(upstream_config(qps, burst, kubeconfig)))
        admin = str(cluster.kubeconfig)
        command = [
            str(cluster.binaries.kube_scheduler),
            f"--config={config_path}",
            f"--authentication-kubeconfig={admin}",
            f"--authorization-kubeconfig={admin}",
            f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={work / 'kube-scheduler-certs'}",
            "--v=1",
        ]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONUNBUFFERED"] = "1"
    if which == "kopf" and source is not None:
        env["PYTHONPATH"] = str(source / "operator")
    popen = spawn_logged(command, log_path, cwd=REPO, env=env)
    return SchedulerProcess(which, popen, port, log_path)


# -- audit log ------------------------------------------------------------------------------


def audit_counts(path: Path, offset: int, user: str) -> dict[str, Any]:
    """Requests by verb and by verb+resource for ``user``, from ``offset`` on."""
    by_verb: Counter[str] = Counter()
    by_resource: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    try:
        with path.open("rb") as log:
            log.seek(offset)
            for line in log:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if (event.get("user") or {}).get("username") != user:
                    continue
                verb = str(event.get("verb", ""))
                ref = event.get("objectRef") or {}
                resource = str(ref.get("resource", event.get("requestURI", "")))
                if ref.get("subresource"):
                    resource += "/" + str(ref["subresource"])
                by_verb[verb] += 1
                by_resource[f"{verb} {resource}"] += 1
                code = (event.get("responseStatus") or {}).get("code")
                codes[str(code)] += 1
    except OSError as error:
        return {"error": str(error)}
    return {
        "total": sum(by_verb.values()),
        "by_verb": dict(by_verb.most_common()),
        "by_verb_resource": dict(by_resource.most_common()),
        "by_code": dict(codes.most_common()),
    }


def audit_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# -- cluster state --------------------------------------------------------------------------


async def ensure_nodes(client: Client, count: int, timeout: float = 900.0) -> dict[str, Any]:
    """Exactly ``count`` kwok nodes, all Ready and untainted."""
    started = time.monotonic()
    nodes, _ = await client.list_all("/api/v1/nodes")
    existing = {n["metadata"]["name"] for n in nodes}
    wanted = [shapes.node(i) for i in range(count)]
    wanted_names = {n["metadata"]["name"] for n in wanted}
    extra = sorted(existing - wanted_names)
    for name in extra:
        await client.request("DELETE", f"/api/v1/nodes/{name}", ok_statuses=(404,))
    missing = [n for n in wanted if n["metadata"]["name"] not in existing]
    created: dict[str, Any] = {}
    if missing:
        say(f"creating {len(missing)} nodes")
        created = await create_many(client, nodes_path, missing, CREATOR_CONCURRENCY)
    while True:
        nodes, _ = await client.list_all("/api/v1/nodes")
        ready = [n for n in nodes if n["metadata"]["name"] in wanted_names and node_ready(n)]
        if len(ready) == count and len(nodes) == count:
            break
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"only {len(ready)}/{count} nodes ready after {timeout:.0f}s")
        await asyncio.sleep(2.0)
    return {
        "count": count,
        "created": len(missing),
        "deleted": len(extra),
        "creation": created,
        "ready_seconds": round(time.monotonic() - started, 1),
    }


async def ensure_volume_limits(client: Client, count: int) -> dict[str, Any]:
    """The first ``count`` kwok nodes allow 39 CSI volumes: in their allocatable and in a
    CSINode they own. Both stay for later scenarios, whose pods mount no volumes."""
    started = time.monotonic()
    nodes, _ = await client.list_all("/api/v1/nodes")
    wanted = {shapes.node(i)["metadata"]["name"] for i in range(count)}
    nodes = [n for n in nodes if n["metadata"]["name"] in wanted]
    csi_nodes, _ = await client.list_all(CSI_NODES_PATH)
    owned_by = {
        c["metadata"]["name"]: {o.get("uid") for o in c["metadata"].get("ownerReferences") or []}
        for c in csi_nodes
    }
    limit_value = str(shapes.CSI_VOLUME_LIMIT)
    unlimited = [
        n
        for n in nodes
        if (n.get("status") or {}).get("allocatable", {}).get(shapes.ATTACHABLE_VOLUMES)
        != limit_value
    ]
    # A CSINode owned by an earlier node of the same name is about to be collected: replace it.
    stale = [
        n
        for n in nodes
        if n["metadata"]["name"] in owned_by
        and n["metadata"]["uid"] not in owned_by[n["metadata"]["name"]]
    ]
    missing = [n for n in nodes if n["metadata"]["name"] not in owned_by] + stale

    async def limit(node: dict[str, Any]) -> None:
        await client.request(
            "PATCH",
            f"/api/v1/nodes/{node['metadata']['name']}/status",
            {"status": {"allocatable": {shapes.ATTACHABLE_VOLUMES: limit_value}}},
            content_type=MERGE_PATCH,
        )

    async def replace(node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        await client.request("DELETE", f"{CSI_NODES_PATH}/{name}", ok_statuses=(404,))

    async def create(node: dict[str, Any]) -> None:
        raw = shapes.csi_node(node["metadata"]["name"], node["metadata"]["uid"])
        await client.request("POST", CSI_NODES_PATH, raw)

    if unlimited:
        say(f"setting the CSI volume limit of {len(unlimited)} nodes")
        await for_each(unlimited, CREATOR_CONCURRENCY, limit)
    await for_each(stale, CREATOR_CONCURRENCY, replace)
    if missing:
        say(f"creating {len(missing)} CSINodes")
        await for_each(missing, CREATOR_CONCURRENCY, create)
    return {
        "allocatable_set": len(unlimited),
        "csi_nodes_replaced": len(stale),
        "csi_nodes_created": len(missing),
        "seconds": round(time.monotonic() - started, 1),
    }


async def create_bound_claims(client: Client, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The claims the pods mount, each bound to a PV of its own, as scheduler_perf makes them:
    the claim, its status, the PV (whose ``claimRef`` needs the claim's UID), its status. The
    API server resets ``status`` on creation, so the Bound phases are written afterwards."""
    claims = [claim for pod in pods for claim in shapes.pod_claims(pod)]

    async def create_pair(claim: dict[str, Any]) -> None:
        path = claims_path(claim)
        name = claim["metadata"]["name"]
        stored = await client.request("POST", path, claim, ok_statuses=(409,))
        if stored is None:  # a retried request that had already succeeded
            stored = await client.request("GET", f"{path}/{name}")
        await client.request(
            "PATCH", f"{path}/{name}/status", {"status": claim["status"]}, content_type=MERGE_PATCH
        )
        volume = shapes.bound_volume(stored)
        await client.request("POST", VOLUMES_PATH, volume, ok_statuses=(409,))
        await client.request(
            "PATCH",
            f"{VOLUMES_PATH}/{volume['metadata']['name']}/status",
            {"status": volume["status"]},
            content_type=MERGE_PATCH,
        )

    return await for_each(claims, CREATOR_CONCURRENCY, create_pair)


async def wait_claims_bound(
    client: Client, namespace: str, count: int, timeout: float = 300.0
) -> float:
    """Wait until the namespace's ``count`` claims and their PVs are all Bound.

    The PV controller may see a claim before its PV exists and mark it Lost; it binds it again
    at its next periodic sync once the PV is there (every 15 s by default).
    """
    started = time.monotonic()
    selector = {"labelSelector": f"{shapes.VOLUME_NAMESPACE_LABEL}={namespace}"}
    while time.monotonic() - started < timeout:
        claims, _ = await client.list_all(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
        volumes, _ = await client.list_all(VOLUMES_PATH, selector)
        bound = [o for o in (*claims, *volumes) if (o.get("status") or {}).get("phase") == "Bound"]
        if len(bound) == 2 * count:
            return time.monotonic() - started
        await asyncio.sleep(2.0)
    raise RuntimeError(f"claims and PVs of {namespace} not all Bound after {timeout:.0f}s")


async def delete_volumes(
    client: Client, namespace: str | None, timeout: float = 600.0
) -> dict[str, Any]:
    """Delete the PVs made for ``namespace``'s claims (for any bench namespace when None) and
    wait until they are gone.

    A PV goes once the PV controller has released it (its claim is gone) and the protection
    controller has lifted its finalizer. Those left after ``timeout`` (on a control plane
    without these controllers) have their finalizers removed here.
    """
    started = time.monotonic()
    label = shapes.VOLUME_NAMESPACE_LABEL
    selector = {"labelSelector": f"{label}={namespace}" if namespace else label}
    volumes, _ = await client.list_all(VOLUMES_PATH, selector)
    result = {"deleted": len(volumes), "finalizers_removed": 0}
    if volumes:
        await client.request("DELETE", VOLUMES_PATH, params=selector, ok_statuses=(404,))
    while volumes and time.monotonic() - started < timeout:
        await asyncio.sleep(2.0)
        volumes, _ = await client.list_all(VOLUMES_PATH, selector)

    async def release(volume: dict[str, Any]) -> None:
        await client.request(
            "PATCH",
            f"{VOLUMES_PATH}/{volume['metadata']['name']}",
            {"metadata": {"finalizers": None}},
            ok_statuses=(404,),
            content_type=MERGE_PATCH,
        )

    if volumes:
        say(f"  {len(volumes)} PVs still there after {timeout:.0f}s: removing their finalizers")
        await for_each(volumes, CREATOR_CONCURRENCY, release)
        result["finalizers_removed"] = len(volumes)
    return {**result, "seconds": round(time.monotonic() - started, 1)}


async def ensure_devices(client: Client, scenario: Scenario) -> dict[str, Any]:
    """The DeviceClass and exactly one ResourceSlice per node, with the scenario's devices."""
    started = time.monotonic()
    await client.request("POST", DEVICE_CLASSES_PATH, shapes.device_class(), ok_statuses=(409,))
    wanted = {s["metadata"]["name"]: s for s in scenario.node_slices()}
    existing, _ = await client.list_all(SLICES_PATH)

    async def delete(stale: dict[str, Any]) -> None:
        await client.request(
            "DELETE", f"{SLICES_PATH}/{stale['metadata']['name']}", ok_statuses=(404,)
        )

    def current(found: dict[str, Any]) -> bool:
        raw = wanted.get(found["metadata"]["name"])
        return raw is not None and all(
            found["spec"].get(key) == raw["spec"][key] for key in ("driver", "nodeName", "devices")
        )

    stale = [found for found in existing if not current(found)]
    await for_each(stale, CREATOR_CONCURRENCY, delete)
    kept = {found["metadata"]["name"] for found in existing if current(found)}
    missing = [raw for name, raw in wanted.items() if name not in kept]
    created = await create_many(client, lambda _: SLICES_PATH, missing, CREATOR_CONCURRENCY)
    return {
        "slices": len(wanted),
        "created": len(missing),
        "deleted": len(stale),
        "creation": created,
        "seconds": round(time.monotonic() - started, 1),
    }


async def create_init_claims(client: Client, init: list[dict[str, Any]]) -> dict[str, Any]:
    """The claims of the bound init pods, before the pods (which name them)."""
    claims = [
        shapes.init_claim(pod["metadata"]["name"], pod["metadata"]["namespace"])
        for pod in init
        if pod["metadata"]["labels"].get(shapes.KIND_LABEL) in shapes.DEVICE_KINDS
    ]
    return await create_many(client, resource_claims_path, claims, CREATOR_CONCURRENCY)


async def allocate_init_claims(
    client: Client, scenario: Scenario, namespace: str
) -> dict[str, Any]:
    """Allocate each init pod's claim to the next free device of its node and reserve it for
    the pod, as the scheduler would have done (init pod ``i`` is on node ``i mod nodes``)."""
    pods, _ = await client.list_all(f"/api/v1/namespaces/{namespace}/pods")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    index = {p["metadata"]["name"]: i for i, p in enumerate(scenario.init_pods(namespace, ""))}
    claimed = [
        p
        for p in pods
        if p["metadata"]["labels"].get(shapes.KIND_LABEL) in shapes.DEVICE_KINDS
        and p["metadata"]["labels"].get(shapes.ROLE_LABEL) == shapes.ROLE_INIT
    ]

    async def allocate(pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        status = shapes.init_claim_status(
            pod["spec"]["nodeName"], index[name] // scenario.nodes, name, uids[name]
        )
        claim_name = shapes.init_claim_name(name)
        await client.request(
            "PATCH",
            f"{namespace_claims_path(namespace)}/{claim_name}/status",
            {"status": status},
            content_type=MERGE_PATCH,
        )

    return await for_each(claimed, CREATOR_CONCURRENCY, allocate)


async def wait_resource_claims_gone(
    client: Client, namespace: str, timeout: float = 600.0
) -> float:
    """After the namespace's pods: its claims go once the resource-claim controller has lifted
    their finalizer, and only then are their devices free for the next run."""
    started = time.monotonic()
    path = namespace_claims_path(namespace)
    while time.monotonic() - started < timeout:
        page = await client.request("GET", path, params={"limit": "1"})
        if not page.get("items"):
            return time.monotonic() - started
        await asyncio.sleep(1.0)
    raise RuntimeError(f"resource claims of {namespace} still there after {timeout:.0f}s")


def namespace_claims_path(namespace: str) -> str:
    """The ResourceClaims of one namespace."""
    return f"{RESOURCE_PATH}/namespaces/{namespace}/resourceclaims"


def resource_claims_path(raw: Mapping[str, Any]) -> str:
    """The ResourceClaims of the namespace of ``raw``, a claim."""
    return namespace_claims_path(raw["metadata"]["namespace"])


def device_check(pods: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """Every bound measured pod's claim is allocated on the pod's node; no device is in two
    claims."""
    allocated: dict[str, tuple[str, list[tuple[str, str, str]]]] = {}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            continue
        terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        node = next(
            (v for t in terms for f in t.get("matchFields") or [] for v in f.get("values") or []),
            "",
        )
        results = (allocation.get("devices") or {}).get("results") or []
        allocated[claim["metadata"]["name"]] = (
            node,
            [(r["driver"], r["pool"], r["device"]) for r in results],
        )
    devices = Counter(d for _, listed in allocated.values() for d in listed)
    shared = sum(1 for count in devices.values() if count > 1)
    wrong = 0
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or shapes.pod_role(pod) != shapes.ROLE_MEASURED:
            continue
        names = [
            s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        ]
        if not names or any(allocated.get(str(n), ("", []))[0] != node for n in names):
            wrong += 1
    return {
        "bound_without_allocation_on_node": wrong,
        "devices_in_two_claims": shared,
        "ok": wrong == 0 and shared == 0,
    }


async def ensure_priority_class(client: Client) -> None:
    await client.request(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        shapes.priority_class(),
        ok_statuses=(409,),
    )


async def create_namespace(client: Client, name: str) -> None:
    await client.request(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    # ServiceAccount admission rejects pods until the controller made the default account.
    for _ in range(300):
        found = await client.request(
            "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default", ok_statuses=(404,)
        )
        if found is not None:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no default ServiceAccount in {name}")


async def wait_all_running(client: Client, namespace: str, timeout: float = 900.0) -> float:
    started = time.monotonic()
    path = f"/api/v1/namespaces/{namespace}/pods"
    params = {"fieldSelector": "status.phase!=Running", "limit": "1"}
    while time.monotonic() - started < timeout:
        page = await client.request("GET", path, params=params)
        if not page.get("items"):
            return time.monotonic() - started
        await asyncio.sleep(1.0)
    raise RuntimeError(f"init pods in {namespace} not Running after {timeout:.0f}s")


async def delete_namespace(client: Client, namespace: str, timeout: float = 600.0) -> float:
    """Delete the namespace's pods, wait until none is left, then the namespace; seconds taken."""
    started = time.monotonic()
    path = f"/api/v1/namespaces/{namespace}/pods"
    await _delete_pods(client, path)
    while time.monotonic() - started < timeout:
        page = await client.request("GET", path, params={"limit": "1"})
        if not page.get("items"):
            break
        await asyncio.sleep(1.0)
        await _delete_pods(client, path)
    await client.request("DELETE", f"/api/v1/namespaces/{namespace}", ok_statuses=(404, 409))
    return time.monotonic() - started


async def _delete_pods(client: Client, path: str) -> None:
    """One collection DELETE of the pods under ``path``, allowed to end without an answer.

    On a loaded machine the API server can spend longer than its request timeout deleting ten
    thousand pods, then answer 504 or drop the connection: what it deleted stays deleted, and the
    caller lists what is left and asks again rather than failing the run after its measurements.
    """
    with contextlib.suppress(
        TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError
    ):
        await client.request(
            "DELETE", path, params={"gracePeriodSeconds": "0"}, ok_statuses=(404, 504), retries=2
        )


async def delete_leftovers(client: Client) -> list[str]:
    """Namespaces an interrupted run left behind: their bound pods would take node room."""
    namespaces, _ = await client.list_all("/api/v1/namespaces")
    names = [
        n["metadata"]["name"] for n in namespaces if n["metadata"]["name"].startswith("bench-")
    ]
    left = []
    for name in names:
        page = await client.request("GET", f"/api/v1/namespaces/{name}/pods", params={"limit": "1"})
        if page.get("items"):
            say(f"deleting the pods of {name}, left by an interrupted run")
            left.append(name)
        await delete_namespace(client, name)
    volumes = await delete_volumes(client, None)
    if volumes["deleted"]:
        say(f"deleted {volumes['deleted']} PVs left by an interrupted run")
    return left


# -- the watcher ----------------------------------------------------------------------------


class Watcher:
    def __init__(self, cluster: BenchCluster, namespace: str, expect: int, out: Path) -> None:
        self.out = out
        env = {**os.environ, "BENCH_WATCH_TOKEN": cluster.admin_token, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "operator"), str(REPO)])
        self.popen = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.watcher",
                f"--server={cluster.server}",
                f"--ca={cluster.ca_file}",
                f"--namespace={namespace}",
                f"--expect={expect}",
                f"--out={out}",
            ],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=REPO,
        )

    async def ready(self, timeout: float = 120.0) -> None:
        assert self.popen.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.popen.stdout.readline), timeout)
        if line.strip() != b"READY":
            raise RuntimeError(f"watcher did not start: {line!r}")

    async def finished(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.to_thread(self.popen.wait), timeout)
            return True
        except TimeoutError:
            return False

    def stop(self) -> dict[str, Any]:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return dict(json.loads(self.out.read_text())) if self.out.exists() else {}


# -- one run --------------------------------------------------------------------------------


def _control_plane_cpu(cluster: BenchCluster) -> dict[str, float]:
    result = {}
    for name, proc in cluster.processes().items():
        seconds = procfs.cpu_seconds(proc.pid)
        if seconds is not None:
            result[name] = seconds
    return result


QUIET_CORES = 0.35
"""Control-plane CPU (cores) below which the cluster counts as settled before a run starts."""
PLATEAU = 0.9
"""A window using more than this fraction of the previous one's CPU: the load stopped falling."""
QUIET_WINDOW = 5.0
QUIET_TIMEOUT = 240.0


async def wait_until_quiet(
    sample: Callable[[], float],
    *,
    window: float = QUIET_WINDOW,
    threshold: float = QUIET_CORES,
    timeout: float = QUIET_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> dict[str, float]:
    """Wait until the control plane's CPU use over one ``window`` falls below ``threshold``
    or stops falling (a large cluster has a steady load of its own: kwok renews every node's
    Lease).

    ``sample()`` returns the control plane's CPU seconds so far. After nodes are created, or
    after the previous run's namespace was deleted, kwok and the API server keep working for a
    minute or more (leases, node and pod status stages): a run started then shares the two cores
    with that work, and the scheduler that runs first in a pair would be measured on a busier
    machine than the second one. Returns the seconds waited and the last rate seen.
    """
    started = clock()
    before = sample()
    rate = float("inf")
    while clock() - started < timeout:
        await sleep(window)
        after = sample()
        previous, rate = rate, (after - before) / window
        before = after
        if rate < threshold or rate > PLATEAU * previous:
            break
    return {"seconds": round(clock() - started, 1), "cores": round(rate, 3)}


def _control_plane_seconds(cluster: BenchCluster) -> float:
    return sum(_control_plane_cpu(cluster).values())


def _timeout_for(scenario: Scenario, qps: float) -> float:
    per_second = min(qps, 50.0) if qps <= 100 else 20.0
    return 300.0 + scenario.measured_count / max(per_second / 2, 5.0)


async def run_one(
    cluster: BenchCluster,
    client: Client,
    scenario: Scenario,
    which: str,
    qps: float,
    burst: int,
    work: Path,
    source: Path | None = None,
    neighbours: int = 0,
    creation_rate: float | None = None,
) -> dict[str, Any]:
    """One scheduler's run of ``scenario`` (see the module's docstring); with ``neighbours``,
    that many busy processes (:mod:`bench.neighbours`) run from its start to its end; with
    ``creation_rate``, the measured pods are created at that many a second instead of as fast as
    the API server takes them."""
    scheduler_name = SCHEDULER_NAME if which == "kopf" else UPSTREAM_SCHEDULER_NAME
    namespace = f"bench-{scenario.id.lower()}-{which}-{secrets.token_hex(3)}"
    run_dir = work / namespace
    run_dir.mkdir(parents=True, exist_ok=True)
    say(f"{scenario.label} {which} qps={qps:g}/{burst}: namespace {namespace}")
    await create_namespace(client, namespace)
    init = scenario.init_pods(namespace, scheduler_name)
    measured = scenario.measured_pods(namespace, scheduler_name)
    volumes: dict[str, Any] = {}
    if scenario.volumes:
        volumes["creation"] = await create_bound_claims(client, [*init, *measured])
        say(f"  {volumes['creation']['count']} claims with their PVs created")
    devices: dict[str, Any] = {}
    if scenario.devices:
        await client.request(
            "POST",
            f"{RESOURCE_PATH}/namespaces/{namespace}/resourceclaimtemplates",
            shapes.claim_template(namespace),
        )
        devices["claims"] = await create_init_claims(client, init)
    init_creation = await create_many(client, pods_path, init, CREATOR_CONCURRENCY)
    init_running = await wait_all_running(client, namespace)
    say(f"  {len(init)} init pods created ({init_creation['per_second']}/s) and Running")
    if scenario.devices:
        devices["allocation"] = await allocate_init_claims(client, scenario, namespace)
        say(f"  {devices['claims']['count']} init claims allocated and reserved")
    if scenario.volumes:
        count = volumes["creation"]["count"]
        volumes["bound_seconds"] = round(await wait_claims_bound(client, namespace, count), 1)
        say(f"  claims and PVs Bound after {volumes['bound_seconds']} s more")

    watcher: Watcher | None = None
    backlog: tuple[Watcher, dict[str, Any]] | None = None
    if scenario.drain:
        # The watcher sees the backlog arrive; the scheduler starts once it is all there.
        watcher = Watcher(cluster, namespace, scenario.measured_count, run_dir / "watch.json")
        await watcher.ready()
        backlog = watcher, await create_many(client, pods_path, measured, CREATOR_CONCURRENCY)
        say(f"  {len(measured)} measured pods pending before the scheduler starts")
    quiet = await wait_until_quiet(lambda: _control_plane_seconds(cluster))
    say(f"  control plane quiet after {quiet['seconds']} s ({quiet['cores']} cores)")
    audit_offset = audit_size(cluster.audit_log)
    plane_before = _control_plane_cpu(cluster)
    load_before = os.getloadavg()
    busy = BusyNeighbours(neighbours)
    busy.start()
    spawned = time.time()
    process = start_scheduler(which, cluster, qps, burst, run_dir, source=source)
    result: dict[str, Any] = {"scheduler": which, "namespace": namespace, "settle": quiet}
    if volumes:
        result["volumes"] = volumes
    try:
        ready_seconds = await asyncio.to_thread(process.wait_ready)
        if backlog is not None:
            # Draining: the clock and the counters run from the scheduler's start, start-up
            # and cache sync included, as an admin restarting it in front of a backlog sees it.
            cpu_before, t0, (measuring, creation) = 0.0, spawned, backlog
        else:
            measuring = watcher = Watcher(
                cluster, namespace, scenario.measured_count, run_dir / "watch.json"
            )
            await measuring.ready()
            audit_offset = audit_size(cluster.audit_log)
            cpu_before = procfs.cpu_seconds(process.pid) or 0.0
            plane_before = _control_plane_cpu(cluster)
            load_before = os.getloadavg()
            t0 = time.time()
        stop_arrivals = asyncio.Event()
        arrivals = asyncio.ensure_future(
            _post_arrivals(client, scenario, namespace, scheduler_name, stop_arrivals)
        )
        if backlog is None:
            creation = await create_many(
                client, pods_path, measured, CREATOR_CONCURRENCY, rate=creation_rate
            )
            say(f"  {len(measured)} measured pods created ({creation['per_second']}/s)")
        finished = await measuring.finished(_timeout_for(scenario, qps))
        stop_arrivals.set()
        injected = await arrivals
        t_end = time.time()
        cpu_after = procfs.cpu_seconds(process.pid) or 0.0
        plane_after = _control_plane_cpu(cluster)
        load_after = os.getloadavg()
        peak_rss = proc_status_mb(process.pid, "VmHWM")
        status, metrics_text = process.get("/metrics", timeout=30.0)
        observed = measuring.stop()
        result.update(
            ready_seconds=round(ready_seconds, 2),
            finished=finished,
            t0=t0,
            wall_seconds=round(t_end - t0, 3),
            creation=creation,
            init_creation=init_creation,
            init_running_seconds=round(init_running, 1),
            arrivals_injected=injected,
            cpu_seconds=round(cpu_after - cpu_before, 2),
            peak_rss_mb=peak_rss,
            control_plane_cpu_seconds={
                k: round(plane_after.get(k, v) - v, 2) for k, v in plane_before.items()
            },
            loadavg={"before": load_before, "after": load_after},
            scheduler_metrics=scheduler_metrics(metrics_text) if status == 200 else {},
        )
        result.update(watch_figures(scenario, observed, t0))
    finally:
        result["contention"] = {"processes": neighbours, "cpu_seconds": busy.stop()}
        exit_code = await asyncio.to_thread(process.stop)
        if watcher is not None:
            watcher.stop()
        result["exit_code"] = exit_code
    await asyncio.sleep(1.0)
    user = KOPF_USER if which == "kopf" else UPSTREAM_USER
    result["api_requests"] = audit_counts(cluster.audit_log, audit_offset, user)
    pods, _ = await client.list_all(f"/api/v1/namespaces/{namespace}/pods")
    nodes, _ = await client.list_all("/api/v1/nodes")
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE_LABEL, "") for n in nodes}
    result["checks"] = check(scenario, pods, zones, None)
    if "victims" in scenario.checks:
        result["checks"]["victims"] = result["victims"]
    if scenario.devices:
        claims, _ = await client.list_all(namespace_claims_path(namespace))
        result["checks"]["devices"] = device_check(pods, claims)
        result["checks"]["ok"] = result["checks"]["ok"] and result["checks"]["devices"]["ok"]
        result["devices"] = devices
    result["cleanup_seconds"] = round(await delete_namespace(client, namespace), 1)
    if scenario.devices:
        gone = await wait_resource_claims_gone(client, namespace)
        result["devices"]["claims_gone_seconds"] = round(gone, 1)
    if scenario.volumes:
        result["volumes"]["cleanup"] = await delete_volumes(client, namespace)
    return result


async def _post_arrivals(
    client: Client, scenario: Scenario, namespace: str, scheduler_name: str, stop: asyncio.Event
) -> int:
    if scenario.arrivals is None:
        return 0
    interval = 1.0 / scenario.arrivals.per_second
    started = time.monotonic()
    index = 0
    pending: set[asyncio.Task[Any]] = set()
    while not stop.is_set():
        raw = scenario.arrival_pod(index, namespace, scheduler_name)
        task = asyncio.ensure_future(
            client.request("POST", pods_path(raw), raw, ok_statuses=(409,))
        )
        pending.add(task)
        task.add_done_callback(pending.discard)
        index += 1
        delay = started + index * interval - time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, delay))
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    return index


def scheduler_metrics(text: str) -> dict[str, Any]:
    samples = promtext.parse(text)
    attempts = "scheduler_scheduling_attempt_duration_seconds"
    extension = "scheduler_framework_extension_point_duration_seconds"
    return {
        "schedule_attempts_total": promtext.by_label(
            samples, "scheduler_schedule_attempts_total", "result"
        ),
        "attempt_duration_scheduled_s": promtext.histogram(samples, attempts, result="scheduled"),
        "attempt_duration_unschedulable_s": promtext.histogram(
            samples, attempts, result="unschedulable"
        ),
        "algorithm_duration_s": promtext.histogram(
            samples, "scheduler_scheduling_algorithm_duration_seconds"
        ),
        "postfilter_duration_s": promtext.histogram(
            samples, extension, extension_point="PostFilter"
        ),
        "sli_duration_s": promtext.histogram(
            samples, "scheduler_pod_scheduling_sli_duration_seconds"
        ),
        "preemption_attempts_total": promtext.total(samples, "scheduler_preemption_attempts_total"),
        # The stages of a pod's wait that kopf-scheduler measures on its own (none upstream).
        "watch_delivery_lag_s": promtext.histogram(
            samples, "kopf_scheduler_watch_delivery_lag_seconds", resource="pods"
        ),
        "queued_before_first_attempt_s": promtext.histogram(
            samples, "kopf_scheduler_queue_wait_before_first_attempt_seconds"
        ),
        "binding_request_delay_s": promtext.histogram(
            samples, "kopf_scheduler_binding_request_delay_seconds"
        ),
        "binding_request_duration_s": promtext.histogram(
            samples, "kopf_scheduler_binding_request_duration_seconds"
        ),
        "event_loop_lag_s": promtext.histogram(samples, "kopf_scheduler_event_loop_lag_seconds"),
        "rest_client_requests_total": promtext.by_label(
            samples, "rest_client_requests_total", "method"
        ),
    }


def watch_figures(scenario: Scenario, observed: dict[str, Any], t0: float) -> dict[str, Any]:
    pods: dict[str, dict[str, Any]] = observed.get("pods") or {}
    measured = {n: p for n, p in pods.items() if p.get("role") == shapes.ROLE_MEASURED}
    arrivals = {n: p for n, p in pods.items() if p.get("role") == shapes.ROLE_ARRIVAL}
    bound_times = [p["bound"] for p in measured.values() if "bound" in p]
    create_to_bound = [p["bound"] - p["seen"] for p in measured.values() if "bound" in p]
    preemptors = [p for p in (*measured.values(), *arrivals.values()) if p.get("kind") in ("high",)]
    preemptor_latency = [p["bound"] - p["seen"] for p in preemptors if "bound" in p]
    victims = [
        p
        for p in pods.values()
        if p.get("role") == shapes.ROLE_INIT and "deleted" in p and p.get("kind") == "low"
    ]
    bound_preemptors = sum(1 for p in preemptors if "bound" in p)
    # Preemptors that got as far as a nomination (or a binding) by the end of the run; the
    # victims of the ones still waiting are already counted, so compare against these.
    preempting = sum(1 for p in preemptors if "bound" in p or "nominated" in p)
    end = observed.get("done_at") or (max(bound_times) if bound_times else t0)
    return {
        "measured_pods": len(measured),
        "bound_measured": len(bound_times),
        "all_measured_bound": bool(measured) and len(bound_times) == scenario.measured_count,
        "throughput": stats.throughput(bound_times, t0),
        "create_to_bound_ms": stats.summary(create_to_bound, 1000.0),
        "preemptor_create_to_bound_ms": stats.summary(preemptor_latency, 1000.0),
        "head_of_line_gaps_ms": stats.gaps(bound_times),
        "arrivals": {
            "injected": len(arrivals),
            "bound": sum(1 for p in arrivals.values() if "bound" in p),
        },
        "victims": {
            "deleted_low_priority": len(victims),
            "preempting": preempting,
            "bound_preemptors": bound_preemptors,
            "per_preemptor": round(len(victims) / preempting, 3) if preempting else None,
            # Deletions may still be in flight for the last nominations, so fewer is possible;
            # more than three per preempting pod is not.
            "ok": len(victims) <= 3 * preempting,
        },
        "queue": _pending_series(measured, arrivals, t0, end),
        "measured_seconds": round(end - t0, 3),
        "watcher": {k: observed.get(k) for k in ("events", "relists", "cpu_seconds", "ready_at")},
    }


def _pending_series(
    measured: dict[str, dict[str, Any]],
    arrivals: dict[str, dict[str, Any]],
    t0: float,
    end: float,
) -> dict[str, Any]:
    """Unbound, undeleted pods (measured + arrivals) seen by the watcher, once per second."""
    entries = [*measured.values(), *arrivals.values()]
    samples = []
    second = 1.0
    while t0 + second <= end + 1.0:
        at = t0 + second
        pending = sum(
            1
            for p in entries
            if p["seen"] <= at
            and ("bound" not in p or p["bound"] > at)
            and ("deleted" not in p or p["deleted"] > at)
        )
        samples.append({"t": second, "pending": pending})
        second += 1.0
    peak = max((s["pending"] for s in samples), default=0)
    return {"max": {"pending": peak}, "samples": samples}


async def run_pair(
    cluster: BenchCluster,
    scenario: Scenario,
    qps: float,
    burst: int,
    work: Path,
    order: tuple[str, ...] = SCHEDULERS,
    source: Path | None = None,
    neighbours: int = 0,
    creation_rate: float | None = None,
) -> dict[str, Any]:
    """Both schedulers on identical states; the figures of each and the ratios ours/upstream.
    ``source``: kopf-scheduler from another revision (see :func:`start_scheduler`);
    ``neighbours``: busy processes beside each scheduler's run, ``creation_rate``: the pace of
    the measured pods' creation (see :func:`run_one`)."""
    endpoint = Endpoint(cluster.server, cluster.admin_token, str(cluster.ca_file))
    contention = {"loadavg": [round(x, 2) for x in os.getloadavg()], "top": top_processes()}
    async with Client(endpoint, "bench-creator", connections=CREATOR_CONCURRENCY) as client:
        await ensure_priority_class(client)
        await delete_leftovers(client)
        nodes = await ensure_nodes(client, scenario.nodes)
        if scenario.volumes:
            nodes["volume_limits"] = await ensure_volume_limits(client, scenario.nodes)
        if scenario.devices:
            nodes["devices"] = await ensure_devices(client, scenario)
        runs = {}
        for which in order:
            runs[which] = await run_one(
                cluster,
                client,
                scenario,
                which,
                qps,
                burst,
                work,
                source,
                neighbours,
                creation_rate,
            )
    return {
        "mode": "e2e",
        "scenario": scenario.as_dict(),
        "qps": qps,
        "burst": burst,
        "order": list(order),
        "neighbours": neighbours,
        "creation_rate": creation_rate,
        "nodes": nodes,
        "contention_at_start": contention,
        "runs": runs,
        "ratios": ratios(runs.get("kopf", {}), runs.get("upstream", {})),
    }


def ratios(ours: dict[str, Any], upstream: dict[str, Any]) -> dict[str, float | None]:
    figures = {
        "throughput_average": ("throughput", "average"),
        "throughput_p50": ("throughput", "p50"),
        "create_to_bound_p50": ("create_to_bound_ms", "p50"),
        "create_to_bound_p99": ("create_to_bound_ms", "p99"),
        "preemptor_create_to_bound_p99": ("preemptor_create_to_bound_ms", "p99"),
        "api_requests": ("api_requests", "total"),
        "cpu_seconds": ("cpu_seconds",),
        "peak_rss_mb": ("peak_rss_mb",),
    }
    return {
        name: stats.ratio(stats.figure(ours, path), stats.figure(upstream, path))
        for name, path in figures.items()
    }
