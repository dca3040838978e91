"""Randomized scenarios from a seed: the same (profile, seed) always gives the same scenario.

Four profiles:

- ``mixed``: every filter and score the default profile has a say in. Nodes of different sizes
  in two or three zones, with labels, some tainted, some with a low pod limit; running pods that
  leave room; pending pods with node affinity, inter-pod (anti-)affinity, topology spread,
  tolerations, host ports, memory requests and volumes (static local and zonal PVs behind a
  ``WaitForFirstConsumer`` class, a claim bound at once by an ``Immediate`` class, a claim that no
  PV fits, a claim that does not exist).
- ``preemption``: full nodes, running pods of several priorities with short grace periods, PDBs
  with little or no budget, ReadWriteOncePod claims in use, and bursts of large high-priority
  pods, some with ``preemptionPolicy: Never``.
- ``preemption-wide``: the ``preemption`` cluster drawn wider (six to eight nodes of distinct
  sizes) and busier (six to ten pending pods in three or four waves): several preemptors arrive
  in one wave beside plain pods without a priority class, some asking for memory, so that a
  plain pod is placed while the preemptors' victims are still leaving.
- ``devices``: Dynamic Resource Allocation. Some nodes publish GPUs (dra-example-driver's shape,
  :mod:`e2e.support.dra`, one to eight per node); pending pods ask for one or two of them through
  ResourceClaimTemplates, for one with an index of 4 or more (a CEL selector), for a model no
  device has, or share a ResourceClaim; next to them, CPU-only pods and pods of higher priority,
  so that devices run out and preemption is tried around pods that hold them.

Scenarios stay small (at most 5 nodes, about 14 running and 8 pending pods; ``preemption-wide``
8 nodes, about 24 running and 10 pending) so that one run of each scheduler takes about a minute
at most. Pods of a wave arrive a fraction of a second apart, so that each scheduler decides on
one before the next arrives; only a first-wave backlog is a true burst (see
:mod:`differential.scenario`). Node sizes are drawn without repetition: upstream picks at random
among equally scored nodes, and distinct sizes make such ties rarer.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from e2e.support import dra

from .scenario import Raw, Scenario, Wave

PROFILES = ("mixed", "preemption", "devices", "preemption-wide")
CI_PROFILES = ("mixed", "preemption", "devices")
"""The profiles ``make differential-ci`` plays by default: their first seeds are scenarios
kube-scheduler has played the same way in every run, so a difference there is ours."""

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache", "batch")
IMAGE = "registry.k8s.io/pause:3.10"
HOST_PORT = 8080
TAINT_KEY = "dedicated"

WFFC_CLASS = "diff-wffc"
IMMEDIATE_CLASS = "diff-immediate"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

DEVICE_CLASS = "diff-gpu"
GPU_COUNTS = (1, 2, 4, 8)
GPU_ENTRY = "gpu"
MISSING_MODEL = "NO-SUCH-MODEL"
# Template name -> (devices asked for, CEL selectors of the request).
GPU_TEMPLATES: dict[str, tuple[int, tuple[str, ...]]] = {
    "gpu-1": (1, ()),
    "gpu-2": (2, ()),
    "gpu-high-index": (1, (f'device.attributes["{dra.EXAMPLE_DRIVER}"].index >= 4',)),
    "gpu-missing-model": (
        1,
        (f'device.attributes["{dra.EXAMPLE_DRIVER}"].model == "{MISSING_MODEL}"',),
    ),
}
GPU_FEATURES = {
    "gpu": "gpu-1",
    "gpus-2": "gpu-2",
    "gpu-high-index": "gpu-high-index",
    "gpu-missing-model": "gpu-missing-model",
}
"""Pending pod feature -> the template its pod's claim is made from."""
SHARED_GPU_CLAIM = "shared-gpu"

PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "diff-p10": (10, "PreemptLowerPriority"),
    "diff-p50": (50, "PreemptLowerPriority"),
    "diff-p100": (100, "PreemptLowerPriority"),
    "diff-p100-never": (100, "Never"),
    "diff-p200": (200, "PreemptLowerPriority"),
}
"""The classes scenarios may use: cluster-wide, so a name always means the same value."""

STORAGE_CLASSES: dict[str, str] = {
    WFFC_CLASS: "WaitForFirstConsumer",
    IMMEDIATE_CLASS: "Immediate",
}


@dataclass(frozen=True)
class Profile:
    name: str
    nodes: tuple[int, int]
    fill: tuple[float, float]
    """Share of a node's CPU its running pods take (drawn per node)."""
    max_running_per_node: int
    running_cpu: tuple[int, ...]
    """Requests of running pods, in millicores."""
    pending: tuple[int, int]
    running_classes: tuple[str | None, ...]
    pending_classes: tuple[str | None, ...]
    pending_cpu: tuple[int, ...]
    """Requests of pending pods, in millicores."""
    features: tuple[tuple[str, int], ...]
    """Pending pod features and their weights."""
    volume_chance: float
    pdb_chance: float
    low_pod_limit_chance: float
    wave_gaps: tuple[float, ...]
    """Seconds between two waves."""
    pod_gaps: tuple[float, ...]
    """Seconds between two pods of a wave."""
    backlog_chance: float
    """Chance that the first wave is a backlog, there before the scheduler starts."""
    gpu_node_chance: float = 0.0
    """Chance that a node publishes GPUs."""
    node_cpus: tuple[int, ...] = (2, 3, 4, 5, 6, 8)
    """The CPU counts nodes are drawn from, without repetition (at least ``nodes[1]`` of them)."""
    waves: tuple[int, int] = (1, 3)
    """How many waves the pending pods arrive in (never more than there are pods)."""


MIXED = Profile(
    name="mixed",
    nodes=(3, 5),
    fill=(0.2, 0.7),
    max_running_per_node=3,
    running_cpu=(250, 500, 750, 1000, 1500),
    pending=(4, 8),
    running_classes=(None, "diff-p10", "diff-p10", "diff-p50"),
    pending_classes=(None, "diff-p10", "diff-p50", "diff-p100", "diff-p100-never", "diff-p200"),
    pending_cpu=(100, 250, 500, 750, 1000, 1500),
    features=(
        ("node-affinity", 3),
        ("node-selector", 1),
        ("preferred-node-affinity", 2),
        ("pod-affinity", 2),
        ("anti-affinity", 3),
        ("preferred-anti-affinity", 1),
        ("spread", 3),
        ("toleration", 2),
        ("port", 2),
        ("memory", 2),
        ("claim", 3),
        ("zonal-claim", 1),
        ("immediate-claim", 1),
        ("missing-claim", 1),
    ),
    volume_chance=0.6,
    pdb_chance=0.3,
    low_pod_limit_chance=0.2,
    wave_gaps=(0, 1, 2, 3, 5),
    pod_gaps=(0.3, 0.5, 1.0),
    backlog_chance=0.3,
)

PREEMPTION = Profile(
    name="preemption",
    nodes=(3, 5),
    fill=(0.75, 1.0),
    max_running_per_node=3,
    running_cpu=(500, 1000, 1500, 2000, 2500),
    pending=(3, 7),
    running_classes=(None, "diff-p10", "diff-p10", "diff-p50", "diff-p50"),
    pending_classes=("diff-p100", "diff-p100", "diff-p200", "diff-p100-never", "diff-p50"),
    pending_cpu=(500, 1000, 1500, 2000, 2500, 3000),
    features=(
        ("none", 6),
        ("anti-affinity", 2),
        ("spread", 2),
        ("toleration", 1),
        ("node-affinity", 1),
        ("port", 1),
        ("rwop-claim", 2),
    ),
    volume_chance=0.5,
    pdb_chance=0.7,
    low_pod_limit_chance=0.1,
    wave_gaps=(0, 1, 2, 4, 6),
    pod_gaps=(0.3, 0.5),
    backlog_chance=0.6,
)

DEVICES = Profile(
    name="devices",
    nodes=(3, 4),
    fill=(0.2, 0.6),
    max_running_per_node=2,
    running_cpu=(250, 500, 1000),
    pending=(4, 8),
    running_classes=(None, "diff-p10", "diff-p50"),
    pending_classes=(None, "diff-p10", "diff-p50", "diff-p100", "diff-p200"),
    pending_cpu=(100, 250, 500, 1000),
    features=(
        ("none", 2),
        ("gpu", 5),
        ("gpus-2", 2),
        ("gpu-high-index", 1),
        ("gpu-missing-model", 1),
        ("shared-gpu", 2),
        ("node-selector", 1),
        ("anti-affinity", 1),
    ),
    volume_chance=0.0,
    pdb_chance=0.0,
    low_pod_limit_chance=0.0,
    wave_gaps=(0, 1, 2, 3),
    pod_gaps=(0.3, 0.5, 1.0),
    backlog_chance=0.3,
    gpu_node_chance=0.7,
)

PREEMPTION_WIDE = replace(
    PREEMPTION,
    name="preemption-wide",
    nodes=(6, 8),
    node_cpus=(3, 4, 5, 6, 7, 8, 10, 12),
    pending=(6, 10),
    waves=(3, 4),
    pending_classes=(None, None, "diff-p100", "diff-p100", "diff-p200", "diff-p100-never"),
    pending_cpu=(250, 500, 750, 1000, 1500, 2000, 2500, 3000),
    features=(
        ("none", 6),
        ("memory", 3),
        ("anti-affinity", 1),
        ("spread", 1),
        ("toleration", 1),
        ("node-affinity", 1),
        ("port", 1),
        ("rwop-claim", 1),
    ),
    volume_chance=0.3,
    wave_gaps=(0, 1, 2, 4),
    backlog_chance=0.5,
)
"""The ``preemption`` profile's running pods and budgets on more nodes, with more pending pods
in more waves, plain pods among them."""

_PROFILES = {profile.name: profile for profile in (MIXED, PREEMPTION, DEVICES, PREEMPTION_WIDE)}


def generate(seed: int, profile: str = "mixed") -> Scenario:
    """The scenario of ``profile`` for ``seed``."""
    if profile not in _PROFILES:
        raise ValueError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
    return _Generator(_PROFILES[profile], seed).scenario()


def scenario_name(profile: str, seed: int) -> str:
    return f"{profile}-{seed}"


# -- building blocks --------------------------------------------------------------------------


def priority_class(name: str) -> Raw:
    value, policy = PRIORITY_CLASSES[name]
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
        "globalDefault": False,
        "description": "differential scenarios against kube-scheduler",
    }


def storage_class(name: str) -> Raw:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": NO_PROVISIONER,
        "volumeBindingMode": STORAGE_CLASSES[name],
        "reclaimPolicy": "Retain",
    }


def node(name: str, zone: str, cpu: int, memory_gi: int, pods: int, labels: Raw) -> Raw:
    resources = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                HOSTNAME_KEY: name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                ZONE_KEY: zone,
                **labels,
            },
        },
        "spec": {},
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def pod(name: str, app: str, cpu_milli: int, grace: int) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "resources": {"requests": {"cpu": f"{cpu_milli}m"}},
                }
            ],
        },
    }


def node_selector_term(key: str, values: Sequence[str]) -> Raw:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def local_volume(
    name: str, size_gi: int, affinity: Raw, *, access_mode: str, class_name: str, labels: Raw
) -> Raw:
    volume: Raw = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": f"{size_gi}Gi"},
            "accessModes": [access_mode],
            "storageClassName": class_name,
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [affinity]}},
        },
    }
    if labels:
        volume["metadata"]["labels"] = dict(labels)
    return volume


def claim(name: str, size_gi: int, *, access_mode: str, class_name: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": [access_mode],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": f"{size_gi}Gi"}},
        },
    }


def mount(pod_manifest: Raw, claim_name: str) -> None:
    pod_manifest["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
    ]


# -- the generator ----------------------------------------------------------------------------


@dataclass
class _Node:
    name: str
    zone: str
    cpu_milli: int
    memory_gi: int
    pod_limit: int
    labels: Raw
    taint: Raw | None
    used_milli: int = 0
    running: int = 0


class _Generator:
    def __init__(self, profile: Profile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        # A string seed is hashed with SHA-512: stable across processes and Python versions.
        self.rng = random.Random(f"{profile.name}:{seed}")
        self.classes: set[str] = set()
        self.storage_classes: set[str] = set()
        self.nodes: list[_Node] = []
        self.volumes: list[Raw] = []
        self.claims: list[Raw] = []
        self.running: list[Raw] = []
        self.pdbs: list[Raw] = []
        self.free_local: list[tuple[str, int]] = []
        """(node, size in Gi) of the local PVs waiting for a claim."""
        self.zonal: list[tuple[str, int]] = []
        """(zone, size in Gi) of zonal PVs waiting for a claim."""
        self.rwop_claims: list[str] = []
        self.immediate_claims: list[str] = []
        self.volume_count = 0
        self.gpus: dict[str, int] = {}
        """Node -> the GPUs it publishes."""
        self.templates: set[str] = set()
        self.shared_claim = False

    def scenario(self) -> Scenario:
        self._nodes()
        with_volumes = self.rng.random() < self.profile.volume_chance
        if with_volumes:
            self._volumes()
        self._running(with_volumes)
        self._pdbs()
        waves = self._waves()
        uses_devices = bool(self.templates or self.shared_claim)
        return Scenario(
            name=scenario_name(self.profile.name, self.seed),
            seed=self.seed,
            profile=self.profile.name,
            description=f"generated from seed {self.seed} with the {self.profile.name} profile",
            priority_classes=[priority_class(name) for name in sorted(self.classes)],
            storage_classes=[storage_class(name) for name in sorted(self.storage_classes)],
            device_classes=[gpu_class()] if uses_devices else [],
            nodes=[self._node_manifest(n) for n in self.nodes],
            resource_slices=[
                gpu_slice(name, count) for name, count in self.gpus.items() if uses_devices
            ],
            volumes=self.volumes,
            claims=self.claims,
            claim_templates=[gpu_template(name) for name in sorted(self.templates)],
            resource_claims=[gpu_claim(SHARED_GPU_CLAIM, 1)] if self.shared_claim else [],
            running=self.running,
            pdbs=self.pdbs,
            waves=waves,
        )

    # -- nodes ----------------------------------------------------------------------------

    @staticmethod
    def _node_manifest(spec: _Node) -> Raw:
        manifest = node(
            spec.name,
            spec.zone,
            spec.cpu_milli // 1000,
            spec.memory_gi,
            spec.pod_limit,
            spec.labels,
        )
        if spec.taint:
            manifest["spec"]["taints"] = [spec.taint]
        return manifest

    def _nodes(self) -> None:
        rng = self.rng
        count = rng.randint(*self.profile.nodes)
        zones = ZONES[: rng.choice((2, 3))]
        cpus = rng.sample(self.profile.node_cpus, count)
        for index in range(count):
            labels = {"disk": rng.choice(("ssd", "hdd"))}
            taint = None
            if rng.random() < 0.25:
                taint = {
                    "key": TAINT_KEY,
                    "value": rng.choice(("infra", "gpu")),
                    "effect": rng.choice(("NoSchedule", "NoSchedule", "PreferNoSchedule")),
                }
            pod_limit = 110
            if rng.random() < self.profile.low_pod_limit_chance:
                pod_limit = rng.randint(2, 4)
            if rng.random() < self.profile.gpu_node_chance:
                self.gpus[f"node-{index}"] = rng.choice(GPU_COUNTS)
            self.nodes.append(
                _Node(
                    name=f"node-{index}",
                    zone=zones[index % len(zones)],
                    cpu_milli=cpus[index] * 1000,
                    memory_gi=rng.choice((4, 8, 16)),
                    pod_limit=pod_limit,
                    labels=labels,
                    taint=taint,
                )
            )

    # -- volumes --------------------------------------------------------------------------

    def _volume_name(self) -> str:
        self.volume_count += 1
        return f"pv-{self.volume_count}"

    def _volumes(self) -> None:
        """Static local PVs on some nodes and zonal PVs, all behind the WFFC class."""
        rng = self.rng
        sizes = rng.sample((1, 2, 3, 5, 8, 13), rng.randint(2, 4))
        for size in sizes:
            name = self._volume_name()
            if rng.random() < 0.7:
                host = rng.choice(self.nodes)
                affinity = node_selector_term(HOSTNAME_KEY, [host.name])
                self.free_local.append((host.name, size))
                labels: Raw = {}
            else:
                zone = rng.choice(sorted({n.zone for n in self.nodes}))
                affinity = node_selector_term(ZONE_KEY, [zone])
                self.zonal.append((zone, size))
                labels = {ZONE_KEY: zone}
            self.volumes.append(
                local_volume(
                    name,
                    size,
                    affinity,
                    access_mode="ReadWriteOnce",
                    class_name=WFFC_CLASS,
                    labels=labels,
                )
            )
        self.storage_classes.add(WFFC_CLASS)

    def _rwop_claim_on(self, host: _Node) -> str:
        """A ReadWriteOncePod claim pre-bound to a PV on ``host``, for a running pod there."""
        index = len(self.rwop_claims) + 1
        claim_name = f"rwop-{index}"
        volume_name = f"pv-rwop-{index}"
        volume = local_volume(
            volume_name,
            1,
            node_selector_term(HOSTNAME_KEY, [host.name]),
            access_mode="ReadWriteOncePod",
            class_name="",
            labels={},
        )
        volume["spec"]["claimRef"] = {"name": claim_name}
        bound = claim(claim_name, 1, access_mode="ReadWriteOncePod", class_name="")
        bound["spec"]["volumeName"] = volume_name
        self.volumes.append(volume)
        self.claims.append(bound)
        self.rwop_claims.append(claim_name)
        return claim_name

    def _immediate_claim(self) -> str:
        """A claim of the Immediate class with exactly one zonal PV to bind to."""
        index = len(self.immediate_claims) + 1
        claim_name = f"shared-{index}"
        zone = self.rng.choice(sorted({n.zone for n in self.nodes}))
        self.volumes.append(
            local_volume(
                f"pv-shared-{index}",
                4,
                node_selector_term(ZONE_KEY, [zone]),
                access_mode="ReadWriteOnce",
                class_name=IMMEDIATE_CLASS,
                labels={ZONE_KEY: zone},
            )
        )
        self.claims.append(
            claim(claim_name, 4, access_mode="ReadWriteOnce", class_name=IMMEDIATE_CLASS)
        )
        self.storage_classes.add(IMMEDIATE_CLASS)
        self.immediate_claims.append(claim_name)
        return claim_name

    # -- running pods ---------------------------------------------------------------------

    def _running(self, with_volumes: bool) -> None:
        rng = self.rng
        pods: list[Raw] = []
        for host in self.nodes:
            target = int(host.cpu_milli * rng.uniform(*self.profile.fill))
            limit = min(self.profile.max_running_per_node, host.pod_limit)
            while host.running < limit:
                choices = [c for c in self.profile.running_cpu if host.used_milli + c <= target]
                if not choices:
                    break
                cpu = rng.choice(choices)
                app = rng.choice(APPS)
                manifest = pod("", app, cpu, grace=rng.randint(1, 3))
                manifest["spec"]["nodeName"] = host.name
                class_name = rng.choice(self.profile.running_classes)
                if class_name:
                    manifest["spec"]["priorityClassName"] = class_name
                    self.classes.add(class_name)
                if self.profile.name == "mixed" and rng.random() < 0.15:
                    _add_port(manifest)
                if rng.random() < 0.3:
                    _add_memory(manifest, rng.choice((256, 512, 1024)))
                if with_volumes and rng.random() < 0.2:
                    mount(manifest, self._rwop_claim_on(host))
                host.used_milli += cpu
                host.running += 1
                pods.append(manifest)
        rng.shuffle(pods)  # the start order is not the node order
        for index, manifest in enumerate(pods, start=1):
            manifest["metadata"]["name"] = f"r{index:02d}-{manifest['metadata']['labels']['app']}"
        self.running = pods

    def _pdbs(self) -> None:
        rng = self.rng
        if rng.random() >= self.profile.pdb_chance:
            return
        apps = sorted({p["metadata"]["labels"]["app"] for p in self.running})
        for app in rng.sample(apps, min(len(apps), rng.randint(1, 2))):
            matching = sum(1 for p in self.running if p["metadata"]["labels"]["app"] == app)
            self.pdbs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": f"pdb-{app}"},
                    "spec": {
                        "minAvailable": max(matching - rng.choice((0, 1)), 1),
                        "selector": {"matchLabels": {"app": app}},
                    },
                }
            )

    # -- pending pods ---------------------------------------------------------------------

    def _waves(self) -> list[Wave]:
        rng = self.rng
        count = rng.randint(*self.profile.pending)
        fewest, most = self.profile.waves
        wave_count = rng.randint(min(fewest, count), min(most, count))
        cuts = sorted(rng.sample(range(1, count), wave_count - 1))
        bounds = [0, *cuts, count]
        waves: list[Wave] = []
        number = 0
        for index in range(wave_count):
            backlog = index == 0 and rng.random() < self.profile.backlog_chance
            wave = Wave(
                after_seconds=0.0 if index == 0 else float(rng.choice(self.profile.wave_gaps)),
                gap_seconds=0.0 if backlog else rng.choice(self.profile.pod_gaps),
                backlog=backlog,
            )
            for _ in range(bounds[index + 1] - bounds[index]):
                number += 1
                self._pending_pod(number, wave)
            waves.append(wave)
        return waves

    def _pending_pod(self, number: int, wave: Wave) -> None:
        rng = self.rng
        app = rng.choice(APPS)
        largest = max(n.cpu_milli for n in self.nodes)
        cpu = rng.choice([c for c in self.profile.pending_cpu if c <= largest])
        manifest = pod(f"p{number:02d}-{app}", app, cpu, grace=rng.randint(1, 3))
        class_name = rng.choice(self.profile.pending_classes)
        if class_name:
            manifest["spec"]["priorityClassName"] = class_name
            self.classes.add(class_name)
        names = [name for name, _ in self.profile.features]
        weights = [weight for _, weight in self.profile.features]
        features = set(rng.choices(names, weights, k=rng.choice((0, 1, 1, 2, 2, 3))))
        for feature in sorted(features):
            if feature.endswith("claim") and "volumes" in manifest["spec"]:
                continue  # one volume per pod is enough
            self._apply(feature, manifest, app, wave)
        wave.pods.append(manifest)

    def _apply(self, feature: str, manifest: Raw, app: str, wave: Wave) -> None:
        rng = self.rng
        spec = manifest["spec"]
        zones = sorted({n.zone for n in self.nodes})
        if feature == "node-affinity":
            if rng.random() < 0.5:
                term = node_selector_term(ZONE_KEY, rng.sample(zones, rng.randint(1, 2)))
            else:
                term = node_selector_term("disk", ["ssd"])
            affinity = spec.setdefault("affinity", {})
            affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        elif feature == "node-selector":
            spec["nodeSelector"] = {"disk": rng.choice(("ssd", "hdd"))}
        elif feature == "preferred-node-affinity":
            affinity = spec.setdefault("affinity", {})
            affinity.setdefault("nodeAffinity", {})[
                "preferredDuringSchedulingIgnoredDuringExecution"
            ] = [
                {
                    "weight": rng.choice((10, 50, 100)),
                    "preference": node_selector_term(ZONE_KEY, [rng.choice(zones)]),
                }
            ]
        elif feature == "pod-affinity":
            term = _pod_term(rng.choice(APPS), rng.choice((HOSTNAME_KEY, ZONE_KEY)))
            spec.setdefault("affinity", {})["podAffinity"] = (
                {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                if rng.random() < 0.6
                else {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "podAffinityTerm": term}
                    ]
                }
            )
        elif feature == "anti-affinity":
            spec.setdefault("affinity", {})["podAntiAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(app, HOSTNAME_KEY)]
            }
        elif feature == "preferred-anti-affinity":
            spec.setdefault("affinity", {})["podAntiAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": _pod_term(app, ZONE_KEY)}
                ]
            }
        elif feature == "spread":
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": rng.choice((1, 1, 2)),
                    "topologyKey": rng.choice((ZONE_KEY, HOSTNAME_KEY)),
                    "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ]
        elif feature == "toleration":
            spec["tolerations"] = [
                {"key": TAINT_KEY, "operator": "Exists"}
                if rng.random() < 0.5
                else {
                    "key": TAINT_KEY,
                    "operator": "Equal",
                    "value": rng.choice(("infra", "gpu")),
                    "effect": "NoSchedule",
                }
            ]
        elif feature == "port":
            _add_port(manifest)
        elif feature == "memory":
            _add_memory(manifest, rng.choice((512, 1024, 2048, 4096)))
        elif feature == "claim":
            self._wffc_claim(manifest, wave, zonal=False)
        elif feature == "zonal-claim":
            self._wffc_claim(manifest, wave, zonal=True)
        elif feature == "immediate-claim":
            mount(manifest, self._immediate_claim())
        elif feature == "missing-claim":
            mount(manifest, f"missing-{_name_of(manifest)}")
        elif feature == "rwop-claim" and self.rwop_claims:
            mount(manifest, rng.choice(self.rwop_claims))
        elif feature in GPU_FEATURES:
            template = GPU_FEATURES[feature]
            self.templates.add(template)
            manifest.update(dra.with_claims(manifest, templates={GPU_ENTRY: template}))
        elif feature == "shared-gpu":
            self.shared_claim = True
            manifest.update(dra.with_claims(manifest, claims={GPU_ENTRY: SHARED_GPU_CLAIM}))
        # "none" adds nothing.

    def _wffc_claim(self, manifest: Raw, wave: Wave, *, zonal: bool) -> None:
        """A claim of the WFFC class sized for one of the free PVs (sometimes for none)."""
        rng = self.rng
        pool = self.zonal if zonal else self.free_local
        if not self.volumes or self.rng.random() < 0.15 or not pool:
            size = 21  # larger than any static PV: no node has a volume for it
        else:
            _, size = pool.pop(rng.randrange(len(pool)))
        claim_name = f"data-{_name_of(manifest)}"
        wave.claims.append(
            claim(claim_name, size, access_mode="ReadWriteOnce", class_name=WFFC_CLASS)
        )
        self.storage_classes.add(WFFC_CLASS)
        mount(manifest, claim_name)


def gpu_class() -> Raw:
    return dra.device_class(DEVICE_CLASS, dra.EXAMPLE_DRIVER)


def gpu_slice(node_name: str, gpus: int) -> Raw:
    return dra.example_gpu_slice(node_name, gpus=gpus)


def _gpu_spec(count: int, selectors: Sequence[str]) -> Raw:
    return dra.claim_spec([dra.exactly(GPU_ENTRY, DEVICE_CLASS, count=count, selectors=selectors)])


def gpu_template(name: str) -> Raw:
    count, selectors = GPU_TEMPLATES[name]
    return dra.claim_template(name, None, _gpu_spec(count, selectors))


def gpu_claim(name: str, count: int) -> Raw:
    return dra.claim(name, None, _gpu_spec(count, ()))


def _pod_term(app: str, topology_key: str) -> Raw:
    return {
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [app]}]},
        "topologyKey": topology_key,
    }


def _add_port(manifest: Raw) -> None:
    container: dict[str, Any] = manifest["spec"]["containers"][0]
    container["ports"] = [{"containerPort": HOST_PORT, "hostPort": HOST_PORT, "protocol": "TCP"}]


def _add_memory(manifest: Raw, mebibytes: int) -> None:
    requests = manifest["spec"]["containers"][0]["resources"]["requests"]
    requests["memory"] = f"{mebibytes}Mi"


def _name_of(manifest: Raw) -> str:
    return str(manifest["metadata"]["name"])
