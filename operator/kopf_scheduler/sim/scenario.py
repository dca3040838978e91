"""Scenario files: standard Kubernetes objects in YAML or JSON, checked before anything runs.

Every problem is reported with the file, the object (kind and name, or its position) and the
reason, so a user can fix the input; ``ScenarioError`` carries exactly that. Files are read as
strictly as the API server reads objects (``config/documents.py``: no duplicate keys, finite
numbers, bounded nesting), and what the API server would refuse is refused here too where the
scheduler's answer depends on it, such as negative resource quantities.

A scenario may hold Deployments, ReplicaSets, StatefulSets and Jobs too: each stands for the pods
(and a StatefulSet's claims) its controller would create (``sim/workloads.py``), which arrive
where the workload stands in the file and are checked like any other pod.

A scenario may also hold one KubeSchedulerConfiguration: the profiles it is meant to run with
(the gang example needs Coscheduling, which the default profile lacks). It is checked as
``--config`` checks its file, and ``simulate`` uses it unless ``--config`` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from kopf_scheduler.config.documents import (
    DocumentError,
    DocumentSyntaxError,
    decode_utf8,
    load_json,
    load_yaml_all,
)
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import API_VERSION as CONFIG_API_VERSION
from kopf_scheduler.config.loader import KIND as CONFIG_KIND
from kopf_scheduler.config.loader import LoadedConfig, check_config
from kopf_scheduler.model import storage
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.model.priority_class import PriorityClass
from kopf_scheduler.model.quantity import is_well_formed_non_negative, parse_quantity
from kopf_scheduler.model.resource_claim import ResourceClaim
from kopf_scheduler.sim.workloads import WORKLOAD_KINDS, CreatedPod, expand

STORAGE_KINDS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "StorageClass": storage.StorageClass,
    "CSIDriver": storage.CSIDriver,
    "CSINode": storage.CSINode,
    "CSIStorageCapacity": storage.CSIStorageCapacity,
    "PersistentVolumeClaim": storage.PersistentVolumeClaim,
    "PersistentVolume": storage.PersistentVolume,
    "VolumeAttachment": storage.VolumeAttachment,
}
"""The storage kinds a scenario may hold, each with its checking view, in the order they are
created: classes and drivers before the claims that name them, claims before the volumes that
point back at them."""


def _named(obj: Mapping[str, Any]) -> None:
    """The allocator reads DeviceClasses, slices and templates whole; here they need a name."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise InvalidObjectError("metadata.name", "is required")
    if not isinstance(obj.get("spec"), Mapping):
        raise InvalidObjectError("spec", "is required (an object)")


DRA_KINDS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "DeviceClass": _named,
    "ResourceSlice": _named,
    "ResourceClaimTemplate": _named,
    "ResourceClaim": ResourceClaim,
}
"""The kinds of dynamic resource allocation (``resource.k8s.io/v1``), in creation order: classes
and slices before the claims and templates that use them."""

NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",
        "CSIStorageCapacity",
        "PodGroup",
        "ResourceClaim",
        "ResourceClaimTemplate",
        *(kind for _, kind in WORKLOAD_KINDS),
    }
)

SUPPORTED = {
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    *WORKLOAD_KINDS,
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
    pod_groups: list[dict[str, Any]] = field(default_factory=list)
    """scheduler-plugins' PodGroups (gang scheduling), in document order; only a profile with
    Coscheduling reads them."""
    dra: list[dict[str, Any]] = field(default_factory=list)
    """DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates, in document
    order; only a profile with DynamicResources reads them."""
    controllers: list[dict[str, Any]] = field(default_factory=list)
    """The ReplicaSets and StatefulSets that own the workloads' pods (a Deployment's is the
    ReplicaSet it makes): their selectors spread the pods by default, as in a cluster."""
    waiting_pods: list[CreatedPod] = field(default_factory=list)
    """Pods of StatefulSets with OrderedReady pod management after the first: each is created
    (with its claims) once the pods before it run (``sim/ordered_pods.py``)."""
    configuration: LoadedConfig | None = None
    """The scenario's own KubeSchedulerConfiguration (at most one document), which ``simulate``
    uses unless ``--config`` names another: a scenario that needs a profile of its own (gang
    scheduling) runs as it is shipped."""


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
            loaded = load_json(text)
        except DocumentSyntaxError as json_error:
            # YAML flow style (``{kind: Node, ...}``) starts the same way; the JSON error is the
            # helpful one when neither parser accepts the text.
            try:
                documents = [d for d in load_yaml_all(text) if d is not None]
            except DocumentSyntaxError:
                raise ScenarioError(source, "file", str(json_error)) from None
            except DocumentError as error:
                raise ScenarioError(source, "file", str(error)) from None
            if len(documents) == 1 and isinstance(documents[0], list):
                documents = documents[0]
        except DocumentError as error:
            raise ScenarioError(source, "file", str(error)) from None
        else:
            documents = loaded if isinstance(loaded, list) else [loaded]
    else:
        try:
            documents = [d for d in load_yaml_all(text) if d is not None]
        except DocumentError as error:
            raise ScenarioError(source, "file", str(error)) from None
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


_RESOURCE_LISTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Pod": (
        ("spec", "overhead"),
        ("spec", "resources", "requests"),
        ("spec", "resources", "limits"),
    ),
    "Node": (("status", "capacity"), ("status", "allocatable")),
    "PodGroup": (("spec", "minResources"),),
    "PersistentVolumeClaim": (("spec", "resources", "requests"), ("spec", "resources", "limits")),
}
"""Where each kind keeps resource quantities outside its containers (pods: also per container)."""


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, dict | Mapping)  # dict first: the common case, and a quick check


def _resource_lists(kind: str, obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(field path, {resource: quantity})`` for every resource list ``obj`` has."""
    for path in _RESOURCE_LISTS.get(kind, ()):
        value: Any = obj
        for key in path:
            value = value.get(key) if _is_mapping(value) else None
        if value:
            yield ".".join(path), value
    if kind == "Pod":
        spec = obj.get("spec") if _is_mapping(obj.get("spec")) else {}
        assert isinstance(spec, Mapping)
        for group in ("initContainers", "containers"):
            containers = spec.get(group)
            if not isinstance(containers, list | tuple):
                continue
            for index, container in enumerate(containers):
                resources = container.get("resources") if _is_mapping(container) else None
                if not _is_mapping(resources):
                    continue
                for part in ("requests", "limits"):
                    if resources.get(part):
                        yield f"spec.{group}[{index}].resources.{part}", resources[part]


def _check_non_negative(kind: str, obj: Mapping[str, Any]) -> None:
    """The API server refuses negative quantities ("must be greater than or equal to 0")."""
    for path, resources in _resource_lists(kind, obj):
        if not _is_mapping(resources):
            continue
        for name, quantity in resources.items():
            if type(quantity) is str and is_well_formed_non_negative(quantity):
                continue
            field = f"{path}[{name}]"
            if parse_quantity(quantity, field) < 0:
                raise InvalidObjectError(
                    field, f'Invalid value: "{quantity}": must be greater than or equal to 0'
                )


def check_object(
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
        elif kind == "PodGroup":
            PodGroup(obj)
        elif kind in STORAGE_KINDS:
            STORAGE_KINDS[kind](obj)
        elif kind in DRA_KINDS:
            DRA_KINDS[kind](obj)
        elif not isinstance((obj.get("metadata") or {}).get("name"), str):
            raise InvalidObjectError("metadata.name", "must be a non-empty string")
        _check_non_negative(str(kind), obj)
    except InvalidObjectError as error:
        raise ScenarioError(source, described, str(error)) from None
    identity = (str(kind), described)
    if identity in seen:
        raise ScenarioError(source, described, "defined more than once")
    seen.add(identity)
    return str(kind), dict(obj)


def read_documents(path: str | Path) -> list[Any]:
    """The documents of a YAML or JSON file, ``List`` objects flattened; ScenarioError when the
    file cannot be read or parsed."""
    source = str(path)
    try:
        text = decode_utf8(Path(path).read_bytes())
    except OSError as error:
        raise ScenarioError(source, "file", f"cannot read: {error.strerror or error}") from None
    except DocumentError as error:
        raise ScenarioError(source, "file", str(error)) from None
    return _documents(text, source)


def _is_configuration(document: Any) -> bool:
    return (
        isinstance(document, Mapping)
        and document.get("apiVersion") == CONFIG_API_VERSION
        and document.get("kind") == CONFIG_KIND
    )


def _configuration(
    document: Mapping[str, Any], index: int, source: str, scenario: Scenario
) -> LoadedConfig:
    described = f"{CONFIG_KIND} #{index + 1}"
    if scenario.configuration is not None:
        raise ScenarioError(source, described, "a scenario holds one configuration at most")
    try:
        return check_config(document)
    except ConfigError as error:
        raise ScenarioError(source, described, str(error)) from None


def load_scenario(
    paths: Iterable[str | Path], *, known_priority_classes: Iterable[str] = ()
) -> Scenario:
    """Load and check scenario files; raise ScenarioError on the first problem."""
    scenario = Scenario()
    seen: set[tuple[str, str]] = set()
    origins: dict[int, str] = {}
    """Which file each loaded object came from (by identity), for reference errors."""
    arrivals: list[tuple[dict[str, Any], str]] = []
    """Pods and workloads in document order, each with its file: workloads are expanded once
    every pod name in the scenario is known, so a generated name takes none of them."""
    for path in paths:
        source = str(path)
        for index, document in enumerate(read_documents(path)):
            if _is_configuration(document):
                scenario.configuration = _configuration(document, index, source, scenario)
                continue
            kind, obj = check_object(document, index, source, seen)
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
            elif kind in DRA_KINDS:
                scenario.dra.append(obj)
            elif kind == "PodGroup":
                scenario.pod_groups.append(obj)
            else:
                arrivals.append((obj, source))
    _add_pods(scenario, arrivals, seen, origins)
    _check_references(scenario, origins, frozenset(known_priority_classes))
    return scenario


def _add_pods(
    scenario: Scenario,
    arrivals: Iterable[tuple[dict[str, Any], str]],
    seen: set[tuple[str, str]],
    origins: dict[int, str],
) -> None:
    """The scenario's pods and its workloads' pods, in document order."""
    arrivals = list(arrivals)
    taken = {
        _key(obj)
        for obj, _ in arrivals
        if (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Pod")
    }
    claims = {_key(c) for c in scenario.storage if c["kind"] == "PersistentVolumeClaim"}
    for obj, source in arrivals:
        if obj["kind"] == "Pod":
            pods = [obj]
        else:
            pods = _expanded(obj, source, taken, claims, scenario, seen)
            for item in scenario.waiting_pods:
                origins.setdefault(id(item.pod), source)
        for pod in pods:
            origins[id(pod)] = source
            if (pod.get("spec") or {}).get("nodeName"):
                scenario.running_pods.append(pod)
            else:
                scenario.pending_pods.append(pod)


def _expanded(
    workload: dict[str, Any],
    source: str,
    taken: set[str],
    claims: set[str],
    scenario: Scenario,
    seen: set[tuple[str, str]],
) -> list[dict[str, Any]]:
    """The pods a workload's controller creates at once (its claims go to the scenario's
    storage); the pods created later go to ``scenario.waiting_pods``."""
    described = _describe(workload, 0)
    try:
        expansion = expand(workload, taken)
    except InvalidObjectError as error:
        raise ScenarioError(source, described, str(error)) from None
    if expansion.controller is not None:
        scenario.controllers.append(expansion.controller)
    pods = []
    for item in expansion.pods:
        key = _key(item.pod)
        identity = ("Pod", f"Pod {key}")
        if identity in seen:
            raise ScenarioError(source, described, f"its pod {key} is defined more than once")
        seen.add(identity)
        taken.add(key)
        try:
            Pod(item.pod)
            _check_non_negative("Pod", item.pod)
        except InvalidObjectError as error:
            raise ScenarioError(source, described, f"spec.template.{error}") from None
        for index, claim in enumerate(item.claims):
            try:
                storage.PersistentVolumeClaim(claim)
                _check_non_negative("PersistentVolumeClaim", claim)
            except InvalidObjectError as error:
                where = f"spec.volumeClaimTemplates[{index}]"
                raise ScenarioError(source, described, f"{where}.{error}") from None
        if item.waits_for:
            scenario.waiting_pods.append(item)
            continue
        for claim in item.claims:
            if _key(claim) not in claims:
                claims.add(_key(claim))
                scenario.storage.append(claim)
        pods.append(item.pod)
    return pods


def _key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


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
    waiting = [item.pod for item in scenario.waiting_pods]
    for pod in scenario.running_pods + scenario.pending_pods + waiting:
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
