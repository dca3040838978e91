"""The benchmark scenarios S1–S7 and how they are scaled down.

Every scenario is nodes, pods that exist before the measurement (created already bound, round
robin over the nodes), the measured pods (created pending at the start of the measurement) and,
for S5 and S6, pods injected at a fixed rate while the measured pods are being scheduled.
scheduler_perf schedules its init pods in an unmeasured phase; for these uniform shapes the
default scoring spreads them evenly, which is exactly the round robin used here, and creating
them bound keeps both schedulers' starting states identical.

S3 is two runs, like upstream's TopologySpreading and PodAntiAffinity: S3a (spreading) and S3b
(anti-affinity).

S7 is SchedulingCSIPVs: every pod, existing or measured, mounts a claim of its own that is
already bound to a CSI PV of its own, and every node has a CSINode allowing 39 volumes of the
driver. The claims and PVs of the measured pods are created with the existing state, before the
measurement: scheduler_perf creates each pod's pair right before the pod, inside the measured
step, which would make the creator (five requests per pod instead of one), not the scheduler,
set the pace end to end.

DRA1 is SchedulingWithResourceClaimTemplate (dra/performance-config.yaml, workload
5000pods_500nodes; scheduler_perf's threshold 40 pods/s): every node publishes ten devices of
one driver, and every pod uses a claim of one device, made from a ResourceClaimTemplate by the
resource-claim controller for the measured pods; the init pods' claims are created already
allocated (see :mod:`bench.shapes`). It runs only end to end: the claims are made by
kube-controller-manager.

A scaled scenario keeps the shapes and the per-node density and multiplies the node and pod
counts by one ratio; arrival rates stay as they are.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench import shapes

ZONE_LABEL = "topology.kubernetes.io/zone"
Raw = dict[str, Any]


@dataclass(frozen=True)
class Group:
    kind: str
    count: int


@dataclass(frozen=True)
class Arrivals:
    kind: str
    per_second: float


@dataclass(frozen=True)
class Scenario:
    id: str
    mirrors: str
    nodes: int
    init: tuple[Group, ...]
    measured: tuple[Group, ...]
    arrivals: Arrivals | None = None
    checks: tuple[str, ...] = ()
    """``spread`` (skew ≤ 5 across zones), ``anti`` (no two green pods on one node),
    ``victims`` (every preemptor evicted exactly three pods)."""
    ratio: float = 1.0
    """1.0 is the full shape; smaller values are scaled-down copies."""
    drain: bool = False
    """The measured pods are all created before the scheduler starts: the figure is then the
    scheduler's own (start-up, caches, cycles, bindings), not the pod creator's pace."""
    devices_per_node: int = 0
    """Devices each node publishes in a ResourceSlice (scheduler_perf's maxClaimsPerNode)."""

    @property
    def init_count(self) -> int:
        return sum(g.count for g in self.init)

    @property
    def measured_count(self) -> int:
        return sum(g.count for g in self.measured)

    @property
    def volumes(self) -> bool:
        """Whether the pods mount claims: the nodes then get a CSINode and a volume limit."""
        kinds = {g.kind for g in (*self.init, *self.measured)}
        if self.arrivals is not None:
            kinds.add(self.arrivals.kind)
        return bool(kinds & shapes.VOLUME_KINDS)

    @property
    def devices(self) -> bool:
        """Whether the pods use ResourceClaims: the nodes then publish devices."""
        return self.devices_per_node > 0

    @property
    def label(self) -> str:
        return self.id if self.ratio == 1.0 else f"{self.id}@{self.ratio:g}"

    def shape(self) -> str:
        init = " + ".join(f"{g.count} {g.kind}" for g in self.init) or "none"
        measured = " + ".join(f"{g.count} {g.kind}" for g in self.measured)
        text = f"{self.nodes} nodes, init {init}, measured {measured}"
        if self.arrivals is not None:
            text += f", {self.arrivals.per_second:g} {self.arrivals.kind}/s"
        if self.drain:
            text += ", all pending before the scheduler starts"
        if self.devices:
            text += f", {self.devices_per_node} devices per node"
        return text

    def scaled(self, ratio: float) -> Scenario:
        if ratio == 1.0:
            return self

        def count(n: int) -> int:
            return max(1, round(n * ratio))

        return dataclasses.replace(
            self,
            nodes=count(self.nodes),
            init=tuple(Group(g.kind, count(g.count)) for g in self.init),
            measured=tuple(Group(g.kind, count(g.count)) for g in self.measured),
            ratio=ratio * self.ratio,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "mirrors": self.mirrors,
            "ratio": self.ratio,
            "nodes": self.nodes,
            "init": [dataclasses.asdict(g) for g in self.init],
            "measured": [dataclasses.asdict(g) for g in self.measured],
            "arrivals": dataclasses.asdict(self.arrivals) if self.arrivals else None,
            "drain": self.drain,
            "devices_per_node": self.devices_per_node,
            "shape": self.shape(),
        }

    # Objects --------------------------------------------------------------------------------

    def node_objects(self) -> list[Raw]:
        make = shapes.node_with_volume_limit if self.volumes else shapes.node
        return [make(i) for i in range(self.nodes)]

    def csi_nodes(self) -> list[Raw]:
        """One CSINode per node when the pods mount volumes, none otherwise."""
        if not self.volumes:
            return []
        return [shapes.csi_node(shapes.node(i)["metadata"]["name"]) for i in range(self.nodes)]

    def node_slices(self) -> list[Raw]:
        """One ResourceSlice per node when the pods use devices, none otherwise."""
        if not self.devices:
            return []
        return [
            shapes.node_slice(shapes.node(i)["metadata"]["name"], self.devices_per_node)
            for i in range(self.nodes)
        ]

    def init_pods(self, namespace: str, scheduler_name: str) -> list[Raw]:
        pods = []
        index = 0
        for group in self.init:
            for _ in range(group.count):
                node_name = shapes.node(index % self.nodes)["metadata"]["name"]
                pods.append(
                    shapes.pod(
                        group.kind,
                        f"init-{group.kind}-{index}",
                        namespace,
                        scheduler_name,
                        shapes.ROLE_INIT,
                        node_name,
                    )
                )
                index += 1
        return pods

    def measured_pods(self, namespace: str, scheduler_name: str) -> list[Raw]:
        pods = []
        for group in self.measured:
            for i in range(group.count):
                pods.append(
                    shapes.pod(
                        group.kind,
                        f"m-{group.kind}-{i}",
                        namespace,
                        scheduler_name,
                        shapes.ROLE_MEASURED,
                    )
                )
        return pods

    def arrival_pod(self, index: int, namespace: str, scheduler_name: str) -> Raw:
        assert self.arrivals is not None
        kind = self.arrivals.kind
        return shapes.pod(kind, f"a-{kind}-{index}", namespace, scheduler_name, shapes.ROLE_ARRIVAL)


SCENARIOS: dict[str, Scenario] = {
    s.id: s
    for s in (
        Scenario(
            "S1",
            "SchedulingBasic/500Nodes",
            500,
            (Group("default", 500),),
            (Group("default", 1000),),
        ),
        Scenario(
            "S2",
            "SchedulingBasic/5000Nodes_10000Pods",
            5000,
            (Group("default", 1000),),
            (Group("default", 10000),),
        ),
        Scenario(
            "S3a",
            "TopologySpreading/5000Nodes",
            5000,
            (Group("default", 5000),),
            (Group("spread", 5000),),
            checks=("spread",),
        ),
        Scenario(
            "S3b",
            "PodAntiAffinity/5000Nodes",
            5000,
            (Group("anti", 1000),),
            (Group("anti", 2000),),
            checks=("anti",),
        ),
        Scenario(
            "S4",
            "PreemptionBasic/1000Nodes",
            1000,
            (Group("low", 4000),),
            (Group("high", 1000),),
            checks=("victims",),
        ),
        Scenario(
            "S5",
            "PreemptionAsync/5000Nodes",
            5000,
            (Group("low", 20000),),
            (Group("default", 5000),),
            arrivals=Arrivals("high", 5.0),
            checks=("victims",),
        ),
        Scenario(
            "S6",
            "Unschedulable/5kNodes/20kInit/10kPods",
            5000,
            (Group("default", 20000),),
            (Group("default", 10000),),
            arrivals=Arrivals("large", 5.0),
        ),
        Scenario(
            "S7",
            "SchedulingCSIPVs/5000Nodes",
            5000,
            (Group("csi", 5000),),
            (Group("csi", 1000),),
        ),
        Scenario(
            "DRA1",
            "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
            500,
            (Group("dra", 2500),),
            (Group("dra", 2500),),
            devices_per_node=10,
        ),
        Scenario(
            "D1",
            "BurstDrain/5000Nodes_10000Pods",
            5000,
            (Group("default", 1000),),
            (Group("default", 10000),),
            drain=True,
        ),
    )
}


def scenario(spec: str) -> Scenario:
    """``S2`` or ``S2@0.2`` (scaled by 0.2)."""
    name, _, ratio = spec.partition("@")
    base = SCENARIOS[name]
    return base.scaled(float(ratio)) if ratio else base


# Correctness checks, on the final pods ---------------------------------------------------------


def check(
    scenario: Scenario,
    pods: Iterable[Mapping[str, Any]],
    node_zones: Mapping[str, str],
    victims_per_preemptor: list[int] | None = None,
) -> dict[str, Any]:
    """The scenario's correctness checks over the final (live) pods; ``ok`` says all passed."""
    result: dict[str, Any] = {}
    pods = list(pods)
    if "spread" in scenario.checks:
        per_zone: Counter[str] = Counter({zone: 0 for zone in set(node_zones.values())})
        for raw in pods:
            node_name = (raw.get("spec") or {}).get("nodeName")
            labels = (raw.get("metadata") or {}).get("labels") or {}
            if node_name and labels.get("color") == "blue":
                per_zone[node_zones[node_name]] += 1
        skew = max(per_zone.values()) - min(per_zone.values()) if per_zone else 0
        result["spread"] = {"per_zone": dict(per_zone), "skew": skew, "ok": skew <= 5}
    if "anti" in scenario.checks:
        per_node: defaultdict[str, int] = defaultdict(int)
        for raw in pods:
            node_name = (raw.get("spec") or {}).get("nodeName")
            labels = (raw.get("metadata") or {}).get("labels") or {}
            if node_name and labels.get("color") == "green":
                per_node[node_name] += 1
        shared = sum(1 for count in per_node.values() if count > 1)
        result["anti"] = {"nodes_with_two_or_more": shared, "ok": shared == 0}
    if "victims" in scenario.checks and victims_per_preemptor is not None:
        counts = Counter(victims_per_preemptor)
        result["victims"] = {
            "histogram": {str(k): v for k, v in sorted(counts.items())},
            "ok": set(counts) <= {3},
        }
    result["ok"] = all(v.get("ok", True) for v in result.values() if isinstance(v, dict))
    return result
