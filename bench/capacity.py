"""``python -m bench capacity``: how long ``kopf-scheduler capacity`` takes on a large snapshot.

An admin runs ``capacity`` against a saved snapshot of a cluster (``kubectl get nodes,pods -A -o
json``) or a live one; what they wait for is the command's wall-clock time, file reading and
parsing included. This benchmark writes such a snapshot — by default 5000 nodes and 50,000
running pods, the size of a large production cluster — and a pod template, runs the real command
line in a subprocess (``kopf-scheduler capacity SNAPSHOT --podspec TEMPLATE -o json``) and reports
the wall-clock time, the copies counted, and the copies per second.

The snapshot is drawn from a seeded generator so that every run times the same question:

- nodes in three zones, 16 CPUs, 64 GiB and 110 pods allocatable each, labelled as a cloud
  provider labels them (hostname, zone, region, instance type, OS, architecture);
- pods of a dozen Deployment-like workloads, each with its app label, a ReplicaSet owner
  reference and a container whose requests come from a small menu (250m to 2 CPUs, 256 MiB to
  4 GiB), spread over the nodes round robin with a seeded shuffle, so that the nodes are filled
  unevenly and about three quarters of the CPU is requested;
- the template asks for 1 CPU and 4 GiB, without affinity, so that the answer exercises the whole
  default profile on every node and about 18,700 copies fit at the default size.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ZONES = ("zone-a", "zone-b", "zone-c")
NODE_ALLOCATABLE = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
REQUEST_MENU = (
    ("250m", "256Mi"),
    ("500m", "512Mi"),
    ("500m", "1Gi"),
    ("1", "2Gi"),
    ("1", "1Gi"),
    ("1500m", "3Gi"),
    ("2", "4Gi"),
)
"""The requests existing pods draw from (CPU, memory)."""
WORKLOADS = 12
TEMPLATE_REQUESTS = {"cpu": "1", "memory": "4Gi"}


def snapshot(nodes: int, pods: int, seed: int = 0) -> dict[str, Any]:
    """A ``v1/List`` of ``nodes`` nodes and ``pods`` running pods bound to them.

    Pods go round robin over a shuffled order of the nodes, each to the next node in that order
    with room for its requests, so that no node is overcommitted.
    """
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [_node(index) for index in range(nodes)]
    workload_requests = [rng.choice(REQUEST_MENU) for _ in range(WORKLOADS)]
    free_cpu = [_millis(NODE_ALLOCATABLE["cpu"])] * nodes
    free_memory = [_mebibytes(NODE_ALLOCATABLE["memory"])] * nodes
    order = list(range(nodes))
    rng.shuffle(order)
    position = 0
    for index in range(pods):
        workload = rng.randrange(WORKLOADS)
        cpu, memory = workload_requests[workload]
        for step in range(nodes):
            node = order[(position + step) % nodes]
            if free_cpu[node] >= _millis(cpu) and free_memory[node] >= _mebibytes(memory):
                break
        else:
            raise ValueError(f"{pods} pods do not fit on {nodes} nodes")
        position = (position + step + 1) % nodes
        free_cpu[node] -= _millis(cpu)
        free_memory[node] -= _mebibytes(memory)
        items.append(_pod(index, workload, cpu, memory, f"node-{node:05d}"))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _millis(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def _mebibytes(memory: str) -> int:
    return int(memory[:-2]) * 1024 if memory.endswith("Gi") else int(memory[:-2])


def _node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    zone = ZONES[index % len(ZONES)]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-4000-8000-{index:012d}",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m5.4xlarge",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": zone,
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(NODE_ALLOCATABLE),
            "allocatable": dict(NODE_ALLOCATABLE),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(index: int, workload: int, cpu: str, memory: str, node: str) -> dict[str, Any]:
    app = f"app-{workload:02d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{index:06d}",
            "namespace": f"team-{workload % 4}",
            "uid": f"00000000-0000-4000-9000-{index:012d}",
            "labels": {"app": app, "pod-template-hash": "5d4f8c7b9"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-5d4f8c7b9",
                    "uid": f"00000000-0000-4000-a000-{workload:012d}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/app:1.0",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def template() -> dict[str, Any]:
    """The pod whose copies are counted."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "registry.example.com/web:1.0",
                    "resources": {"requests": dict(TEMPLATE_REQUESTS)},
                }
            ]
        },
    }


@dataclass(frozen=True)
class Timing:
    """One run of the command: its wall-clock and CPU seconds and the copies it counted.

    The CPU time (user and system, the command's process only) is what a busy machine changes
    least: on a shared machine the wall-clock time of one run can double while its CPU time moves
    by a tenth.
    """

    seconds: float
    cpu_seconds: float
    copies: int

    @property
    def copies_per_second(self) -> float:
        return self.copies / self.seconds if self.seconds else 0.0


Source = tuple[str, Path | None]
"""A kopf-scheduler to time: its label and the ``operator/`` directory it is imported from
(None: the one this checkout installs)."""
THIS_CHECKOUT: Source = ("", None)


def time_command(snapshot_path: Path, template_path: Path, operator: Path | None = None) -> Timing:
    """Run ``kopf-scheduler capacity`` once on the files and time it from start to exit."""
    command = [
        sys.executable,
        "-m",
        "kopf_scheduler",
        "capacity",
        str(snapshot_path),
        "--podspec",
        str(template_path),
        "-o",
        "json",
    ]
    environment = dict(os.environ)
    if operator is not None:
        environment["PYTHONPATH"] = os.pathsep.join(
            part for part in (str(operator), environment.get("PYTHONPATH", "")) if part
        )
    cpu_before = _children_cpu_seconds()
    started = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    seconds = time.perf_counter() - started
    cpu_seconds = _children_cpu_seconds() - cpu_before
    if finished.returncode != 0:
        raise RuntimeError(
            f"capacity exited {finished.returncode}: {finished.stderr.strip()[-500:]}"
        )
    return Timing(seconds, cpu_seconds, copies_counted(json.loads(finished.stdout)))


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def copies_counted(review: dict[str, Any]) -> int:
    """The copies a ``ClusterCapacityReview`` reports (``status.replicas``)."""
    return int((review.get("status") or {}).get("replicas") or 0)


def run(
    nodes: int, pods: int, rounds: int, sources: Sequence[Source] = (THIS_CHECKOUT,)
) -> dict[str, list[Timing]]:
    """Write the snapshot and template, then time the command ``rounds`` times for each source,
    the sources in turn within each round (so that a busy spell of the machine falls on all)."""
    timings: dict[str, list[Timing]] = {label: [] for label, _ in sources}
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as directory:
        snapshot_path = Path(directory) / "snapshot.json"
        template_path = Path(directory) / "web.json"
        snapshot_path.write_text(json.dumps(snapshot(nodes, pods)))
        template_path.write_text(json.dumps(template()))
        for _ in range(rounds):
            for label, operator in sources:
                timings[label].append(time_command(snapshot_path, template_path, operator))
    return timings


def render(nodes: int, pods: int, timings: Mapping[str, Sequence[Timing]]) -> str:
    """The runs as lines for the terminal and docs/benchmarks.md, round by round."""
    lines = [f"capacity on {nodes} nodes, {pods} pods, template {TEMPLATE_REQUESTS}:"]
    rounds = max((len(runs) for runs in timings.values()), default=0)
    for number in range(rounds):
        for label, runs in timings.items():
            if number >= len(runs):
                continue
            timing = runs[number]
            name = f"run {number + 1}, {label}" if label else f"run {number + 1}"
            lines.append(
                f"  {name}: {timing.seconds:.2f} s (CPU {timing.cpu_seconds:.2f} s), "
                f"{timing.copies} copies ({timing.copies_per_second:.0f}/s)"
            )
    return "\n".join(lines)
