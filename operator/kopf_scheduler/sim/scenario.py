"""Scenario files: standard Kubernetes objects in YAML or JSON, checked before anything runs.

Every problem is reported with the file, the object (kind and name, or its position) and the
reason, so a user can fix the input; ``ScenarioError`` carries exactly that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.priority_class import PriorityClass
from kopf_scheduler.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

STORAGE_KINDS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "StorageClass": StorageClass,
    "CSIDriver": CSIDriver,
    "CSINode": CSINode,
    "CSIStorageCapacity": CSIStorageCapacity,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "PersistentVolume": PersistentVolume,
    "VolumeAttachment": VolumeAttachment,
}
"""The storage kinds a scenario may hold, each with its checking view, in the order they are
created: classes and drivers before the claims that name them, claims before the volumes that
point back at them."""

NAMESPACED_KINDS = frozenset(
    {"Pod", "PodDisruptionBudget", "PersistentVolumeClaim", "CSIStorageCapacity"}
)

SUPPORTED = {
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
}


class ScenarioError(ValueError):
    def __init__(self, source: str, obj: str, reason: str) -> None:
        super().__init__(f"{source}: {obj}: {reason}")
        self.source = source
        self.object = obj
        self.reason = reason


@dataclass
class Scenario:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    running_pods: list[dict[str, Any]] = field(default_factory=list)
    pending_pods: list[dict[str, Any]] = field(default_factory=list)
    """In document order: the order in which they arrive."""
    storage: list[dict[str, Any]] = field(default_factory=list)
    """PersistentVolumes, claims, StorageClasses and the CSI objects, in document order."""


def _describe(obj: Mapping[str, Any], index: int) -> str:
    kind = obj.get("kind") or "object"
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    name = metadata.get("name")
    if not name:
        return f"{kind} #{index + 1}"
    namespace = metadata.get("namespace")
    if kind in NAMESPACED_KINDS:
        return f"{kind} {namespace or 'default'}/{name}"
    return f"{kind} {name}"


def _documents(text: str, source: str) -> list[Any]:
    documents: list[Any]
    if text.lstrip().startswith(("{", "[")):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as json_error:
            # YAML flow style (``{kind: Node, ...}``) starts the same way; the JSON error is the
            # helpful one when neither parser accepts the text.
            try:
                documents = [d for d in yaml.safe_load_all(text) if d is not None]
            except yaml.YAMLError:
                raise ScenarioError(
                    source, "file", f"not valid YAML or JSON: {json_error}"
                ) from None
            if len(documents) == 1 and isinstance(documents[0], list):
                documents = documents[0]
        else:
            documents = loaded if isinstance(loaded, list) else [loaded]
    else:
        try:
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as error:
            raise ScenarioError(source, "file", f"not valid YAML or JSON: {error}") from None
    flattened: list[Any] = []
    for document in documents:
        if isinstance(document, Mapping) and document.get("kind") == "List":
            items = document.get("items")
            if not isinstance(items, list):
                raise ScenarioError(source, "List", "items must be a list")
            flattened.extend(items)
        else:
            flattened.append(document)
    return flattened


def _check(
    obj: Any, index: int, source: str, seen: set[tuple[str, str]]
) -> tuple[str, dict[str, Any]]:
    if not isinstance(obj, Mapping):
        raise ScenarioError(
            source, f"document #{index + 1}", "must be a Kubernetes object (a mapping)"
        )
    described = _describe(obj, index)
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if (api_version, kind) not in SUPPORTED:
        supported = ", ".join(f"{k} ({a})" for a, k in sorted(SUPPORTED))
        raise ScenarioError(
            source,
            described,
            f"unsupported apiVersion/kind {api_version}/{kind}; supported: {supported}",
        )
    try:
        if kind == "Node":
            Node(obj)
        elif kind == "Pod":
            Pod(obj)
        elif kind == "PodDisruptionBudget":
            PodDisruptionBudget(obj)
        elif kind == "PriorityClass":
            PriorityClass(obj)
        elif kind in STORAGE_KINDS:
            STORAGE_KINDS[kind](obj)
        elif not isinstance((obj.get("metadata") or {}).get("name"), str):
            raise InvalidObjectError("metadata.name", "must be a non-empty string")
    except InvalidObjectError as error:
        raise ScenarioError(source, described, str(error)) from None
    identity = (str(kind), described)
    if identity in seen:
        raise ScenarioError(source, described, "defined more than once")
    seen.add(identity)
    return str(kind), dict(obj)


def load_scenario(
    paths: Iterable[str | Path], *, known_priority_classes: Iterable[str] = ()
) -> Scenario:
    """Load and check scenario files; raise ScenarioError on the first problem."""
    scenario = Scenario()
    seen: set[tuple[str, str]] = set()
    origins: dict[int, str] = {}
    """Which file each loaded object came from (by identity), for reference errors."""
    for path in paths:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ScenarioError(source, "file", f"cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise ScenarioError(
                source, "file", f"not UTF-8 text: byte {error.start}: {error.reason}"
            ) from None
        for index, document in enumerate(_documents(text, source)):
            kind, obj = _check(document, index, source, seen)
            origins[id(obj)] = source
            if kind == "Node":
                scenario.nodes.append(obj)
            elif kind == "Namespace":
                scenario.namespaces.append(obj)
            elif kind == "PriorityClass":
                scenario.priority_classes.append(obj)
            elif kind == "PodDisruptionBudget":
                scenario.pdbs.append(obj)
            elif kind in STORAGE_KINDS:
                scenario.storage.append(obj)
            elif (obj.get("spec") or {}).get("nodeName"):
                scenario.running_pods.append(obj)
            else:
                scenario.pending_pods.append(obj)
    _check_references(scenario, origins, frozenset(known_priority_classes))
    return scenario


def _check_references(
    scenario: Scenario, origins: Mapping[int, str], known_classes: frozenset[str]
) -> None:
    nodes = {n["metadata"]["name"] for n in scenario.nodes}
    classes = {c["metadata"]["name"] for c in scenario.priority_classes} | known_classes
    for pod in scenario.running_pods:
        node = pod["spec"]["nodeName"]
        if node not in nodes:
            name = f"Pod {pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"
            raise ScenarioError(
                origins[id(pod)], name, f"spec.nodeName: node {node!r} is not defined"
            )
    for pod in scenario.running_pods + scenario.pending_pods:
        spec = pod.get("spec") or {}
        class_name = spec.get("priorityClassName")
        if (
            class_name
            and spec.get("priority") is None
            and class_name not in classes
            and not class_name.startswith("system-")
        ):
            name = f"Pod {pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"
            raise ScenarioError(
                origins[id(pod)],
                name,
                f"spec.priorityClassName: no PriorityClass named {class_name!r}",
            )
