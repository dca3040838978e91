"""G1, the gang benchmark: whole PodGroups of scheduler_perf's default pods, with Coscheduling.

G1 is 500 groups of 8 pods (``minMember: 8``) on 1000 nodes. Each group's PodGroup exists
before the measurement; the measured pods are the groups' members, created pending at the
start of the measurement, group after group. Every group fits, so the run ends when every
member is bound, and the check is the gang promise: each group is bound whole, none partly.

Both ways of running drive kopf-scheduler with a profile that enables Coscheduling, named as
our S-scenarios' (``kopf-scheduler``), leader election off:

- in process, on the simulated cluster (PodGroups included), with the probe and the figures of
  the S-scenarios' in-process runs;
- end to end, on the benchmark control plane (:mod:`bench.cluster`) with the PodGroup CRD from
  ``manifests/crds`` installed, timed by the external watcher like the S-scenarios.

A scaled run (``G1@0.1``: 50 groups on 100 nodes) keeps the group size and divides the node
and group counts. Run ``python -m bench.gangs G1@0.1`` (``--no-e2e`` or ``--no-inprocess`` to
skip one way); the figures are printed as JSON and, with ``--out``, written to a file.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import secrets
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from e2e.localcluster import procfs

from bench import shapes, stats
from bench.cluster import KOPF_USER, start_bench_cluster
from bench.config import SCHEDULER_NAME, scheduler_config
from bench.e2e import (
    CREATOR_CONCURRENCY,
    REPO,
    Watcher,
    _control_plane_seconds,
    audit_counts,
    audit_size,
    create_namespace,
    delete_leftovers,
    delete_namespace,
    ensure_nodes,
    ensure_priority_class,
    proc_status_mb,
    scheduler_metrics,
    start_scheduler,
    wait_until_quiet,
    watch_figures,
)
from bench.kube import Client, Endpoint, create_many, pods_path
from bench.scenarios import Group, Scenario

PODGROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUP_API = "/apis/scheduling.x-k8s.io/v1alpha1"
PODGROUP_CRD = REPO / "manifests" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
PERMIT_WAITING_SECONDS = 60
"""Coscheduling's default ``permitWaitingTimeSeconds``: every group fits, so none times out."""


@dataclass(frozen=True)
class GangScenario:
    id: str
    nodes: int
    groups: int
    size: int
    ratio: float = 1.0

    @property
    def label(self) -> str:
        return self.id if self.ratio == 1.0 else f"{self.id}@{self.ratio:g}"

    @property
    def members(self) -> int:
        return self.groups * self.size

    def scaled(self, ratio: float) -> GangScenario:
        return dataclasses.replace(
            self,
            nodes=max(1, round(self.nodes * ratio)),
            groups=max(1, round(self.groups * ratio)),
            ratio=self.ratio * ratio,
        )

    def as_scenario(self) -> Scenario:
        """The S-scenario form the shared figures and probes read (no init pods, no checks)."""
        return Scenario(
            self.id,
            f"Coscheduling: {self.groups} groups of {self.size}",
            self.nodes,
            (),
            (Group("default", self.members),),
            ratio=self.ratio,
        )

    def as_dict(self) -> dict[str, Any]:
        shape = f"{self.nodes} nodes, {self.groups} groups of {self.size} (minMember {self.size})"
        return {**dataclasses.asdict(self), "label": self.label, "shape": shape}

    # Objects --------------------------------------------------------------------------------

    def group_of(self, index: int) -> str:
        return f"g-{index // self.size}"

    def podgroups(self, namespace: str) -> list[dict[str, Any]]:
        return [
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": f"g-{index}", "namespace": namespace},
                "spec": {"minMember": self.size},
            }
            for index in range(self.groups)
        ]

    def member_pods(self, namespace: str) -> list[dict[str, Any]]:
        """The measured pods, group after group, each labelled with its PodGroup."""
        pods = self.as_scenario().measured_pods(namespace, SCHEDULER_NAME)
        for index, raw in enumerate(pods):
            raw["metadata"]["labels"][PODGROUP_LABEL] = self.group_of(index)
        return pods


G1 = GangScenario("G1", nodes=1000, groups=500, size=8)
GANG_SCENARIOS = {G1.id: G1}


def gang_scenario(spec: str) -> GangScenario:
    """``G1`` or ``G1@0.1``; a clear error for anything else."""
    name, _, ratio = spec.partition("@")
    if name not in GANG_SCENARIOS:
        raise ValueError(f"unknown gang scenario {name!r} (known: {', '.join(GANG_SCENARIOS)})")
    base = GANG_SCENARIOS[name]
    try:
        return base.scaled(float(ratio)) if ratio else base
    except ValueError:
        raise ValueError(f"bad scale {ratio!r} in {spec!r}: expected a number") from None


def gang_config(
    qps: float | None = None, burst: int | None = None, kubeconfig: str | None = None
) -> dict[str, Any]:
    """The benchmark configuration with Coscheduling in the profile, as its guide enables it."""
    raw = scheduler_config(qps, burst, kubeconfig)
    enabled = [{"name": "Coscheduling"}]
    raw["profiles"][0]["plugins"] = {
        "queueSort": {"enabled": enabled, "disabled": [{"name": "PrioritySort"}]},
        "preFilter": {"enabled": enabled},
        "postFilter": {"enabled": enabled},
        "reserve": {"enabled": enabled},
        "permit": {"enabled": enabled},
    }
    raw["profiles"][0]["pluginConfig"] = [
        {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS}}
    ]
    return raw


def gang_check(pods: Iterable[Mapping[str, Any]], scenario: GangScenario) -> dict[str, Any]:
    """How many groups are bound whole, partly and not at all; ``ok`` when all are whole."""
    bound: Counter[str] = Counter()
    for raw in pods:
        group = ((raw.get("metadata") or {}).get("labels") or {}).get(PODGROUP_LABEL)
        if group and (raw.get("spec") or {}).get("nodeName"):
            bound[group] += 1
    counts = [bound.get(f"g-{index}", 0) for index in range(scenario.groups)]
    whole = sum(1 for count in counts if count >= scenario.size)
    partial = sum(1 for count in counts if 0 < count < scenario.size)
    return {
        "groups_whole": whole,
        "groups_partial": partial,
        "groups_unbound": scenario.groups - whole - partial,
        "ok": whole == scenario.groups and partial == 0,
    }


# -- in process ---------------------------------------------------------------------------------


async def _run_inprocess(scenario: GangScenario, seed: int) -> dict[str, Any]:
    from bench.inprocess import NAMESPACE, Probe, peak_rss_mb
    from kopf_scheduler.config.loader import parse_config
    from kopf_scheduler.logs import configure_logging
    from kopf_scheduler.sim.runner import Simulation

    configure_logging("warning", "console")
    sim = Simulation(parse_config(gang_config()), seed=seed)
    scheduler = sim.start()
    sim.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    sim.apply(shapes.priority_class())
    for index in range(scenario.nodes):
        sim.apply(shapes.node(index))
    for raw in scenario.podgroups(NAMESPACE):
        sim.apply(raw)
    await sim.run_until_quiet()

    members = scenario.member_pods(NAMESPACE)
    probe = Probe(sim, scheduler, scenario.as_scenario())
    probe.measured = {f"{NAMESPACE}/{raw['metadata']['name']}" for raw in members}
    probe.install()
    cpu_start = time.process_time()
    probe.start()
    for raw in members:
        sim.apply(raw)
        probe.created[f"{NAMESPACE}/{raw['metadata']['name']}"] = time.perf_counter()
    await sim.run_until_quiet()
    ended = time.perf_counter()
    bound = {k: t for k, t in probe.bound.items() if k in probe.measured}
    finish = probe.done_at if probe.done_at is not None else ended
    return {
        "mode": "inprocess",
        "scenario": scenario.as_dict(),
        "measured_pods": len(probe.measured),
        "bound_measured": len(bound),
        "throughput": stats.throughput(bound.values(), probe.t0),
        "attempt_ms": stats.summary([c.seconds for c in probe.cycles], 1000.0),
        "create_to_bound_ms": stats.summary(
            [t - probe.created[k] for k, t in bound.items()], 1000.0
        ),
        "cycles": len(probe.cycles),
        "measured_seconds": round(finish - probe.t0, 3),
        "virtual_seconds": round(sim.clock.now() - probe.v0, 3),
        "cpu_seconds": round((probe.cpu_done or time.process_time()) - cpu_start, 3),
        "peak_rss_mb": peak_rss_mb(),
        "checks": gang_check(sim.cluster.pods.values(), scenario),
    }


def run_inprocess(scenario: GangScenario, seed: int = 0) -> dict[str, Any]:
    from kopf_scheduler.sim import loop as sim_loop

    return sim_loop.run(_run_inprocess(scenario, seed))


# -- end to end ---------------------------------------------------------------------------------


async def _install_crd(client: Client) -> None:
    crd = yaml.safe_load(PODGROUP_CRD.read_text(encoding="utf-8"))
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    await client.request("POST", path, crd, ok_statuses=(409,))
    for _ in range(150):
        stored = await client.request("GET", f"{path}/{crd['metadata']['name']}")
        conditions = (stored.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("the PodGroup CRD was not Established within 30 s")


async def _run_e2e(scenario: GangScenario, qps: float, burst: int, work: Path) -> dict[str, Any]:
    cluster = start_bench_cluster()
    endpoint = Endpoint(cluster.server, cluster.admin_token, str(cluster.ca_file))
    shape = scenario.as_scenario()
    async with Client(endpoint, "bench-creator", connections=CREATOR_CONCURRENCY) as client:
        await _install_crd(client)
        await ensure_priority_class(client)
        await delete_leftovers(client)
        nodes = await ensure_nodes(client, scenario.nodes)
        namespace = f"bench-{scenario.id.lower()}-kopf-{secrets.token_hex(3)}"
        run_dir = work / namespace
        run_dir.mkdir(parents=True, exist_ok=True)
        await create_namespace(client, namespace)
        await create_many(
            client,
            lambda raw: f"{PODGROUP_API}/namespaces/{raw['metadata']['namespace']}/podgroups",
            scenario.podgroups(namespace),
            CREATOR_CONCURRENCY,
        )
        quiet = await wait_until_quiet(lambda: _control_plane_seconds(cluster))
        process = start_scheduler(
            "kopf", cluster, qps, burst, run_dir, config=gang_config(qps, burst)
        )
        result: dict[str, Any] = {"mode": "e2e", "scenario": scenario.as_dict(), "nodes": nodes}
        watcher: Watcher | None = None
        try:
            ready_seconds = await asyncio.to_thread(process.wait_ready)
            watcher = Watcher(cluster, namespace, scenario.members, run_dir / "watch.json")
            await watcher.ready()
            audit_offset = audit_size(cluster.audit_log)
            cpu_before = procfs.cpu_seconds(process.pid) or 0.0
            t0 = time.time()
            members = scenario.member_pods(namespace)
            creation = await create_many(client, pods_path, members, CREATOR_CONCURRENCY)
            finished = await watcher.finished(300.0 + scenario.members / 5)
            t_end = time.time()
            cpu_after = procfs.cpu_seconds(process.pid) or 0.0
            status, metrics_text = process.get("/metrics", timeout=30.0)
            observed = watcher.stop()
            result.update(
                settle=quiet,
                ready_seconds=round(ready_seconds, 2),
                finished=finished,
                wall_seconds=round(t_end - t0, 3),
                creation=creation,
                cpu_seconds=round(cpu_after - cpu_before, 2),
                peak_rss_mb=proc_status_mb(process.pid, "VmHWM"),
                scheduler_metrics=scheduler_metrics(metrics_text) if status == 200 else {},
            )
            result.update(watch_figures(shape, observed, t0))
        finally:
            result["exit_code"] = await asyncio.to_thread(process.stop)
            if watcher is not None:
                watcher.stop()
        result["api_requests"] = audit_counts(cluster.audit_log, audit_offset, KOPF_USER)
        pods, _ = await client.list_all(f"/api/v1/namespaces/{namespace}/pods")
        result["checks"] = gang_check(pods, scenario)
        result["cleanup_seconds"] = round(await delete_namespace(client, namespace), 1)
    return result


def run_e2e(scenario: GangScenario, qps: float, burst: int, work: Path) -> dict[str, Any]:
    return asyncio.run(_run_e2e(scenario, qps, burst, work))


# -- command line -------------------------------------------------------------------------------


def _brief(result: Mapping[str, Any]) -> str:
    throughput = result.get("throughput") or {}
    checks = result.get("checks") or {}
    return (
        f"{result['mode']}: {result.get('bound_measured')}/{result.get('measured_pods')} bound "
        f"in {result.get('measured_seconds')} s, {throughput.get('average')} pods/s, "
        f"groups whole {checks.get('groups_whole')} partial {checks.get('groups_partial')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gangs", description=__doc__)
    parser.add_argument("spec", help="G1, or a scaled copy such as G1@0.1")
    parser.add_argument("--no-inprocess", action="store_true")
    parser.add_argument("--no-e2e", action="store_true")
    parser.add_argument("--qps", default="5000/5000", help="qps/burst of the e2e run")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kopf-bench-gangs"))
    parser.add_argument("--out", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    try:
        scenario = gang_scenario(args.spec)
        qps_text, _, burst_text = args.qps.partition("/")
        qps, burst = float(qps_text), int(burst_text or qps_text)
    except ValueError as error:
        print(f"bench.gangs: error: {error}", file=sys.stderr)
        return 2
    results: dict[str, Any] = {"scenario": scenario.as_dict()}
    if not args.no_inprocess:
        results["inprocess"] = run_inprocess(scenario)
        print(_brief(results["inprocess"]), file=sys.stderr)
    if not args.no_e2e:
        args.work.mkdir(parents=True, exist_ok=True)
        results["e2e"] = run_e2e(scenario, qps, burst, args.work)
        print(_brief(results["e2e"]), file=sys.stderr)
    text = json.dumps(results, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    print(text)
    runs = [r for r in (results.get("inprocess"), results.get("e2e")) if r]
    return 0 if all(r["checks"]["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
