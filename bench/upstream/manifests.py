"""Upstream's templates made into objects for a real control plane with kwok nodes.

scheduler_perf creates its objects in an integration-test API server: no admission beyond the
defaults it runs, no kubelet, no node lifecycle controller, one scheduler. The local control
plane is a real one, so a few things are added to what the templates say, and only these
(each run's JSON lists them under ``adaptations``):

- every Node carries kwok's annotation, so that kwok plays its kubelet and keeps it Ready;
  ``createNodes`` also names each node (``generateName`` plus five random characters) and labels
  it ``kubernetes.io/hostname``, as upstream's node preparer does;
- every Pod gets the ``schedulerName`` of the scheduler under test, the namespace's ``default``
  ServiceAccount without a mounted token (so that admission adds no volume), and an explicit
  priority: a bare ``spec.priority`` (which the Priority admission plugin rejects) comes with a
  PriorityClass of that value (:func:`priority_class`), and no priority means 0, the value
  admission would compute, so that an ``updateAny`` of the same template changes nothing else;
- before a pod is resized through the ``resize`` subresource, its container statuses get the
  resources a resize-capable kubelet reports (:func:`resize_capable_status`): the API server
  refuses to resize a running pod whose statuses lack them, and kwok's statuses do;
- a claim made with a PV from ``persistentVolume(Claim)TemplatePath`` is bound both ways as
  upstream binds it, and further: the PV's ``claimRef`` carries the claim's UID and the claim's
  status its access modes and capacity, so that the PV controller finds nothing to undo.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from e2e.localcluster.cluster import KWOK_NODE_ANNOTATION

from bench.shapes import PAUSE_IMAGE, VOLUME_NAMESPACE_LABEL
from bench.upstream.gotemplate import render
from kopf_scheduler.model.storage import BIND_COMPLETED_ANNOTATION, CLAIM_BOUND, VOLUME_BOUND

Raw = dict[str, Any]
HOSTNAME_LABEL = "kubernetes.io/hostname"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
PRIORITY_CLASS_PREFIX = "scheduler-perf-priority-"
DEFAULT_PREEMPTION = "PreemptLowerPriority"
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of generated object names (no vowels, no look-alikes), as the API server's."""


@functools.cache
def _text(path: Path) -> str:
    return path.read_text()


def from_template(path: Path, index: int = 0, count: int = 1) -> Raw:
    """A template rendered with ``.Index`` and ``.Count`` and read as YAML."""
    raw = yaml.safe_load(render(_text(path), {"Index": index, "Count": count}))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not an object")
    return raw


def from_file(path: Path) -> Raw:
    """A template read as it is (upstream renders churn, namespace and volume files so)."""
    raw = yaml.safe_load(_text(path))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not an object")
    return raw


def default_node(op_index: int) -> Raw:
    """Upstream's node when ``createNodes`` names no template: 4 CPUs, 32Gi, 110 pods."""
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": f"node-{op_index}-"},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def default_pod() -> Raw:
    """Upstream's pod when neither the op nor the test case names a template."""
    amounts = {"cpu": "100m", "memory": "500Mi"}
    container = {
        "name": "pause",
        "image": PAUSE_IMAGE,
        "ports": [{"containerPort": 80}],
        "resources": {"limits": dict(amounts), "requests": dict(amounts)},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [container]},
    }


def generated_name(prefix: str, rng: random.Random, taken: set[str]) -> str:
    """``prefix`` and five random characters, drawn again while the name is in ``taken`` (the
    API server draws again on such a collision too); the name is added to ``taken``. With 27⁵
    suffixes, 5,000 nodes of one prefix collide more often than not without that."""
    while True:
        name = prefix + "".join(rng.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
        if name not in taken:
            taken.add(name)
            return name


def kwok_node(raw: Mapping[str, Any]) -> Raw:
    node = copy.deepcopy(dict(raw))
    metadata = node.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), KWOK_NODE_ANNOTATION: "fake"}
    return node


def prepared_node(raw: Mapping[str, Any], rng: random.Random, taken: set[str]) -> Raw:
    """A node as ``createNodes`` makes it: named (a generated name not among ``taken``),
    labelled with its hostname, kwok's."""
    node = kwok_node(raw)
    metadata = node["metadata"]
    if not metadata.get("name"):
        metadata["name"] = generated_name(str(metadata.pop("generateName", "")), rng, taken)
    metadata.pop("generateName", None)
    metadata["labels"] = {**(metadata.get("labels") or {}), HOSTNAME_LABEL: metadata["name"]}
    return node


def with_label(node: Raw, key: str, value: str) -> Raw:
    node["metadata"]["labels"] = {**(node["metadata"].get("labels") or {}), key: value}
    return node


def with_allocatable(node: Raw, extra: Mapping[str, str]) -> Raw:
    """``extra`` added to the node's allocatable; the allocatable the API server would default
    from the capacity is written out first, since an allocatable given at creation is kept."""
    status = node.setdefault("status", {})
    allocatable = dict(status.get("allocatable") or status.get("capacity") or {})
    status["allocatable"] = {**allocatable, **{k: str(v) for k, v in extra.items()}}
    return node


def csi_node(node: Mapping[str, Any], strategy: Mapping[str, Any]) -> Raw:
    """The CSINode upstream's NodeAllocatableStrategy makes for a node, owned by the node so
    that it goes with it."""
    name = node["metadata"]["name"]
    drivers = [
        {"name": driver, "nodeID": name, "allocatable": allocatable}
        for driver, allocatable in (strategy.get("csiNodeAllocatable") or {}).items()
    ]
    plugins = ",".join(strategy.get("migratedPlugins") or ())
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {MIGRATED_PLUGINS_ANNOTATION: plugins},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
            ],
        },
        "spec": {"drivers": drivers},
    }


def priority_class_name(value: int, policy: str) -> str:
    suffix = "" if policy == DEFAULT_PREEMPTION else f"-{policy.lower()}"
    return f"{PRIORITY_CLASS_PREFIX}{value}{suffix}"


def priority_class(value: int, policy: str) -> Raw:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": priority_class_name(value, policy)},
        "value": value,
        "preemptionPolicy": policy,
        "description": "a scheduler_perf pod template's spec.priority",
    }


def for_scheduler(raw: Mapping[str, Any], scheduler_name: str) -> tuple[Raw, Raw | None]:
    """A pod for the scheduler under test, and the PriorityClass its priority needs (if any)."""
    pod = copy.deepcopy(dict(raw))
    spec = pod.setdefault("spec", {})
    spec["schedulerName"] = scheduler_name
    spec.setdefault("serviceAccountName", "default")
    spec["automountServiceAccountToken"] = False
    needed = None
    if spec.get("priorityClassName") is None:
        value = int(spec.get("priority") or 0)
        spec["priority"] = value
        if value:
            policy = str(spec.get("preemptionPolicy") or DEFAULT_PREEMPTION)
            needed = priority_class(value, policy)
            spec["priorityClassName"] = needed["metadata"]["name"]
    return pod, needed


def volume_pair(
    claim_template: Mapping[str, Any],
    volume_template: Mapping[str, Any],
    namespace: str,
    index: int,
) -> tuple[Raw, Raw]:
    """Claim ``pvc-<index>`` and its PV ``<namespace>-vol-<index>`` as upstream names them; the
    PV's ``claimRef`` still lacks the claim's UID (:func:`bind_volume`)."""
    claim = copy.deepcopy(dict(claim_template))
    claim_name = f"pvc-{index}"
    volume_name = f"{namespace}-vol-{index}"
    claim["metadata"] = {**(claim.get("metadata") or {}), "name": claim_name}
    claim["metadata"]["annotations"] = {
        **(claim["metadata"].get("annotations") or {}),
        BIND_COMPLETED_ANNOTATION: "true",
    }
    claim["spec"] = {**(claim.get("spec") or {}), "volumeName": volume_name}
    volume = copy.deepcopy(dict(volume_template))
    volume["metadata"] = {
        **(volume.get("metadata") or {}),
        "name": volume_name,
        "labels": {VOLUME_NAMESPACE_LABEL: namespace},
    }
    source = volume.get("spec") or {}
    if "csi" in source:
        source["csi"]["volumeHandle"] = volume_name
    elif "awsElasticBlockStore" in source:
        source["awsElasticBlockStore"]["volumeID"] = volume_name
    volume["spec"] = source
    return claim, volume


def claim_status(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> Raw:
    return {
        "phase": CLAIM_BOUND,
        "accessModes": list((volume.get("spec") or {}).get("accessModes") or []),
        "capacity": dict((volume.get("spec") or {}).get("capacity") or {}),
    }


def bind_volume(volume: Mapping[str, Any], stored_claim: Mapping[str, Any]) -> Raw:
    bound = copy.deepcopy(dict(volume))
    metadata = stored_claim["metadata"]
    bound["spec"]["claimRef"] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": metadata["namespace"],
        "name": metadata["name"],
        "uid": metadata["uid"],
    }
    bound["status"] = {"phase": VOLUME_BOUND}
    return bound


def with_claim(pod: Raw, claim_name: str) -> Raw:
    pod["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim_name}}]
    return pod


ADMISSION_TOLERATION_KEYS = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
)
CARRIED_POD_FIELDS = ("serviceAccountName", "serviceAccount", "preemptionPolicy")


def pod_update(template: Mapping[str, Any], live: Mapping[str, Any]) -> Raw:
    """A pod template to PUT over ``live``, with what admission added at creation carried over
    (the ServiceAccount, the default tolerations, the preemption policy), since a pod update
    may not remove them; everything else is the template's, as upstream's update sends it."""
    pod = copy.deepcopy(dict(template))
    spec = pod.setdefault("spec", {})
    live_spec = live.get("spec") or {}
    for name in CARRIED_POD_FIELDS:
        if name in live_spec:
            spec[name] = live_spec[name]
    added = [
        t for t in live_spec.get("tolerations") or () if t.get("key") in ADMISSION_TOLERATION_KEYS
    ]
    tolerations = list(spec.get("tolerations") or [])
    spec["tolerations"] = tolerations + [t for t in added if t not in tolerations]
    return pod


def resize_capable_status(live: Mapping[str, Any]) -> Raw:
    """The pod's container statuses, each with its container's resources, as a kubelet that
    supports in-place resize reports them."""
    resources = {
        c["name"]: c.get("resources") or {}
        for c in (live.get("spec") or {}).get("containers") or ()
    }
    statuses = [
        {**status, "resources": resources.get(status.get("name"), {})}
        for status in (live.get("status") or {}).get("containerStatuses") or ()
    ]
    return {"status": {"containerStatuses": statuses}}
