"""Fluent builders for raw Pod, Node and PDB dicts and their model views, for tests.

make_pod("p").req(cpu="500m", memory="1Gi").priority(10).node("n1").pod()
make_node("n1").capacity(cpu="4", memory="32Gi", pods=110).label("zone", "a").node()
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod

_uids = itertools.count(1)


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.raw: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}-{next(_uids)}"},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
            "status": {},
        }

    @property
    def spec(self) -> dict[str, Any]:
        return self.raw["spec"]  # type: ignore[no-any-return]

    def ns(self, namespace: str) -> PodBuilder:
        self.raw["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str) -> PodBuilder:
        self.raw["metadata"]["uid"] = uid
        return self

    def generation(self, generation: int) -> PodBuilder:
        self.raw["metadata"]["generation"] = generation
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self.raw["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, **labels: str) -> PodBuilder:
        for key, value in labels.items():
            self.label(key, value)
        return self

    def req(self, **requests: str | int) -> PodBuilder:
        """Requests of the first container; ``ephemeral_storage`` maps to ``ephemeral-storage``."""
        container = self.spec["containers"][0]
        reqs = container.setdefault("resources", {}).setdefault("requests", {})
        for key, value in requests.items():
            reqs[key.replace("_", "-")] = value
        return self

    def container(
        self, image: str = "pause", ports: list[dict[str, Any]] | None = None, **requests: str | int
    ) -> PodBuilder:
        """Add another container."""
        container: dict[str, Any] = {"name": f"c{len(self.spec['containers'])}", "image": image}
        if requests:
            container["resources"] = {
                "requests": {k.replace("_", "-"): v for k, v in requests.items()}
            }
        if ports:
            container["ports"] = ports
        self.spec["containers"].append(container)
        return self

    def init_container(self, sidecar: bool = False, **requests: str | int) -> PodBuilder:
        container: dict[str, Any] = {
            "name": f"i{len(self.spec.get('initContainers', []))}",
            "image": "init",
            "resources": {"requests": {k.replace("_", "-"): v for k, v in requests.items()}},
        }
        if sidecar:
            container["restartPolicy"] = "Always"
        self.spec.setdefault("initContainers", []).append(container)
        return self

    def image(self, image: str) -> PodBuilder:
        self.spec["containers"][0]["image"] = image
        return self

    def host_port(self, port: int, protocol: str = "TCP", ip: str = "") -> PodBuilder:
        entry: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if ip:
            entry["hostIP"] = ip
        self.spec["containers"][0].setdefault("ports", []).append(entry)
        return self

    def priority(self, value: int) -> PodBuilder:
        self.spec["priority"] = value
        return self

    def priority_class(self, name: str) -> PodBuilder:
        self.spec["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self.spec["preemptionPolicy"] = policy
        return self

    def node(self, node_name: str) -> PodBuilder:
        self.spec["nodeName"] = node_name
        return self

    def scheduler(self, name: str) -> PodBuilder:
        self.spec["schedulerName"] = name
        return self

    def nominated(self, node_name: str) -> PodBuilder:
        self.raw["status"]["nominatedNodeName"] = node_name
        return self

    def start_time(self, timestamp: str) -> PodBuilder:
        self.raw["status"]["startTime"] = timestamp
        return self

    def terminating(self, timestamp: str = "2026-01-01T00:00:00Z") -> PodBuilder:
        self.raw["metadata"]["deletionTimestamp"] = timestamp
        return self

    def condition(
        self, type_: str, status: str = "True", reason: str = "", message: str = ""
    ) -> PodBuilder:
        self.raw["status"].setdefault("conditions", []).append(
            {"type": type_, "status": status, "reason": reason, "message": message}
        )
        return self

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = ""
    ) -> PodBuilder:
        entry: dict[str, Any] = {}
        if key:
            entry["key"] = key
        if operator:
            entry["operator"] = operator
        elif value or key:
            entry["operator"] = "Equal"
        if value:
            entry["value"] = value
        if effect:
            entry["effect"] = effect
        self.spec.setdefault("tolerations", []).append(entry)
        return self

    def node_selector(self, **labels: str) -> PodBuilder:
        self.spec.setdefault("nodeSelector", {}).update(labels)
        return self

    def affinity(self, affinity: dict[str, Any]) -> PodBuilder:
        self.spec["affinity"] = affinity
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        match_labels: dict[str, str] | None = None,
        **extra: Any,
    ) -> PodBuilder:
        constraint: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": match_labels or {}},
        }
        constraint.update(extra)
        self.spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def gate(self, name: str) -> PodBuilder:
        self.spec.setdefault("schedulingGates", []).append({"name": name})
        return self

    def grace(self, seconds: int) -> PodBuilder:
        self.spec["terminationGracePeriodSeconds"] = seconds
        return self

    def volume(self, name: str, **source: Any) -> PodBuilder:
        """A volume with one source, e.g. ``.volume("v", gcePersistentDisk={"pdName": "d"})``."""
        self.spec.setdefault("volumes", []).append({"name": name, **source})
        return self

    def claim(self, claim_name: str, volume: str = "", read_only: bool = False) -> PodBuilder:
        """A ``persistentVolumeClaim`` volume (named after the claim unless ``volume`` is given)."""
        source: dict[str, Any] = {"claimName": claim_name}
        if read_only:
            source["readOnly"] = True
        return self.volume(volume or claim_name, persistentVolumeClaim=source)

    def ephemeral(self, volume: str, storage_class: str = "", size: str = "1Gi") -> PodBuilder:
        """A generic ephemeral volume; its claim is ``<pod>-<volume>``."""
        spec: dict[str, Any] = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
        }
        if storage_class:
            spec["storageClassName"] = storage_class
        return self.volume(volume, ephemeral={"volumeClaimTemplate": {"spec": spec}})

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.raw)

    def pod(self) -> Pod:
        return Pod(self.obj())


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.raw: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": f"node-{name}",
                "labels": {"kubernetes.io/hostname": name},
            },
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        }

    def capacity(self, **resources: str | int) -> NodeBuilder:
        allocatable: dict[str, Any] = {}
        for key, value in resources.items():
            allocatable[key.replace("_", "-")] = value
        self.raw["status"]["allocatable"] = allocatable
        self.raw["status"]["capacity"] = dict(allocatable)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self.raw["metadata"]["labels"][key] = value
        return self

    def labels(self, **labels: str) -> NodeBuilder:
        for key, value in labels.items():
            self.label(key, value)
        return self

    def zone(self, zone: str) -> NodeBuilder:
        return self.label("topology.kubernetes.io/zone", zone)

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        entry: dict[str, Any] = {"key": key, "effect": effect}
        if value:
            entry["value"] = value
        self.raw["spec"].setdefault("taints", []).append(entry)
        return self

    def unschedulable(self, flag: bool = True) -> NodeBuilder:
        self.raw["spec"]["unschedulable"] = flag
        return self

    def image(self, names: list[str], size_bytes: int) -> NodeBuilder:
        self.raw["status"].setdefault("images", []).append(
            {"names": names, "sizeBytes": size_bytes}
        )
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.raw)

    def node(self) -> Node:
        return Node(self.obj())


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pdb(
    name: str,
    match_labels: dict[str, str] | None,
    disruptions_allowed: int,
    namespace: str = "default",
    disrupted_pods: list[str] | None = None,
    min_available: int | str | None = None,
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": match_labels}
    if min_available is not None:
        spec["minAvailable"] = min_available
    status: dict[str, Any] = {"disruptionsAllowed": disruptions_allowed}
    if disrupted_pods:
        status["disruptedPods"] = {p: "2026-01-01T00:00:00Z" for p in disrupted_pods}
    return PodDisruptionBudget(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": status}
    )


def node_info(node: NodeBuilder | Node, *pods: PodBuilder | Pod) -> NodeInfo:
    """A NodeInfo holding ``node`` and ``pods`` (their nodeName is set to the node)."""
    node_view = node.node() if isinstance(node, NodeBuilder) else node
    views = []
    for pod in pods:
        if isinstance(pod, PodBuilder):
            pod = pod.node(node_view.name).pod()
        views.append(pod)
    return NodeInfo(node_view, tuple(views))
