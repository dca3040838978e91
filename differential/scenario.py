"""A differential scenario: a small cluster state and the pods that arrive on it, in waves.

Every object is a plain Kubernetes manifest, so a scenario file reads like what a user would
``kubectl create``. Namespaced objects carry no namespace and pods no ``schedulerName``: a run
puts each scenario into a namespace of its own and names the scheduler under test
(:func:`render`). The sections, in the order a run creates them:

- ``priorityClasses``, ``storageClasses``, ``deviceClasses``: cluster-wide and shared by all
  runs; a name always means the same object;
- ``nodes``: fake nodes for kwok, identical for every run of the scenario, and
  ``resourceSlices``: the devices a driver publishes for them (``resource.k8s.io/v1``; no
  driver runs, see ``e2e/support/dra.py``), and ``csiNodes``: the CSI drivers installed on
  them with their attach limits (what a kubelet would publish; none runs);
- ``persistentVolumes`` and ``claims``: static volumes, and the claims that are bound before any
  pod runs (pre-bound pairs, or claims of an ``Immediate`` class); ``volumeAttachments``: the
  scenario's PVs attached to its nodes (nothing attaches or detaches them during a run);
- ``resourceClaimTemplates`` and ``resourceClaims``: what pods' ``spec.resourceClaims`` name;
  the resource-claim controller of kube-controller-manager makes a claim from a template for
  each pod, and a named claim may be shared by several pods;
- ``running``: pods already bound (``spec.nodeName``), listed in the order they started; a run
  gives them distinct start times in that order, because upstream breaks ties between victims
  and between preemption candidates by start time;
- ``podDisruptionBudgets``;
- ``waves``: pending pods (and the claims they use), each wave ``afterSeconds`` after the
  previous one, its pods ``gapSeconds`` apart. A scheduler that is faster than the gap decides
  on each pod before the next arrives, so the outcome does not hang on how fast it is. The
  first wave may instead be a ``backlog``: created before the scheduler starts, so that both
  schedulers find all of it in their queue at once (a burst whose order is the queue's:
  priority, then the order they were listed in).

File format: YAML with those keys plus ``name``, ``description`` and, for generated scenarios,
``seed`` and ``profile``. :func:`load` checks a file and reports the first problem in one line.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.priority_class import PriorityClass
from kopf_scheduler.model.storage import (
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

Raw = dict[str, Any]

OWNER_LABEL = "differential.kopf-scheduler/owned"
"""Marks the cluster-wide objects a run creates, so that leftovers can be found and removed."""

START_TIME_ORIGIN = datetime(2025, 1, 1, tzinfo=UTC)
"""Running pod ``i`` (0-based, in the order of ``running``) started ``i`` seconds after this."""


class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the place and the problem."""


@dataclass
class Wave:
    after_seconds: float
    pods: list[Raw] = field(default_factory=list)
    claims: list[Raw] = field(default_factory=list)
    gap_seconds: float = 0.0
    """Between two pods of the wave."""
    backlog: bool = False
    """Only the first wave: created before the scheduler starts."""


@dataclass
class Scenario:
    name: str
    description: str = ""
    priority_classes: list[Raw] = field(default_factory=list)
    storage_classes: list[Raw] = field(default_factory=list)
    device_classes: list[Raw] = field(default_factory=list)
    nodes: list[Raw] = field(default_factory=list)
    resource_slices: list[Raw] = field(default_factory=list)
    csi_nodes: list[Raw] = field(default_factory=list)
    volumes: list[Raw] = field(default_factory=list)
    attachments: list[Raw] = field(default_factory=list)
    claims: list[Raw] = field(default_factory=list)
    claim_templates: list[Raw] = field(default_factory=list)
    resource_claims: list[Raw] = field(default_factory=list)
    running: list[Raw] = field(default_factory=list)
    pdbs: list[Raw] = field(default_factory=list)
    waves: list[Wave] = field(default_factory=list)
    seed: int | None = None
    profile: str | None = None

    def pending(self) -> list[Raw]:
        """Every pod that arrives in a wave, in arrival order."""
        return [pod for wave in self.waves for pod in wave.pods]

    def pod_names(self) -> list[str]:
        return [name_of(pod) for pod in [*self.running, *self.pending()]]

    def all_claims(self) -> list[Raw]:
        return [*self.claims, *(claim for wave in self.waves for claim in wave.claims)]


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def start_time(index: int) -> str:
    """``status.startTime`` of the running pod at ``index`` in ``running``."""
    moment = START_TIME_ORIGIN + timedelta(seconds=index)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- files ------------------------------------------------------------------------------------

_SECTIONS: tuple[tuple[str, str], ...] = (
    ("priorityClasses", "priority_classes"),
    ("storageClasses", "storage_classes"),
    ("deviceClasses", "device_classes"),
    ("nodes", "nodes"),
    ("resourceSlices", "resource_slices"),
    ("csiNodes", "csi_nodes"),
    ("persistentVolumes", "volumes"),
    ("volumeAttachments", "attachments"),
    ("claims", "claims"),
    ("resourceClaimTemplates", "claim_templates"),
    ("resourceClaims", "resource_claims"),
    ("running", "running"),
    ("podDisruptionBudgets", "pdbs"),
)
_KEYS = {"name", "description", "seed", "profile", "waves", *(key for key, _ in _SECTIONS)}
_WAVE_KEYS = {"afterSeconds", "gapSeconds", "backlog", "claims", "pods"}


def to_document(scenario: Scenario) -> Raw:
    """The scenario as the mapping a file holds (keys in creation order)."""
    document: Raw = {"name": scenario.name}
    if scenario.seed is not None:
        document["seed"] = scenario.seed
    if scenario.profile is not None:
        document["profile"] = scenario.profile
    if scenario.description:
        document["description"] = scenario.description
    for key, attribute in _SECTIONS:
        items = getattr(scenario, attribute)
        if items:
            document[key] = copy.deepcopy(items)
    waves = []
    for wave in scenario.waves:
        entry: Raw = {"afterSeconds": wave.after_seconds}
        if wave.backlog:
            entry["backlog"] = True
        if wave.gap_seconds:
            entry["gapSeconds"] = wave.gap_seconds
        if wave.claims:
            entry["claims"] = copy.deepcopy(wave.claims)
        entry["pods"] = copy.deepcopy(wave.pods)
        waves.append(entry)
    document["waves"] = waves
    return document


def dump(scenario: Scenario) -> str:
    return yaml.safe_dump(to_document(scenario), sort_keys=False, width=100)


def load(path: str | Path) -> Scenario:
    """Read and check a scenario file; raise :class:`ScenarioError` with a one-line reason."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"{source}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{source}: not UTF-8 text: {error.reason}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise ScenarioError(f"{source}: not valid YAML: {reason}") from None
    return from_document(document, source)


def from_document(document: Any, source: str = "scenario") -> Scenario:
    """Build a scenario from the mapping of a file and check it (see :func:`check`)."""
    if not isinstance(document, Mapping):
        raise ScenarioError(f"{source}: a scenario must be a mapping with the keys {sorted(_KEYS)}")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise ScenarioError(f"{source}: unknown keys {unknown}; known: {sorted(_KEYS)}")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{source}: name: must be a non-empty string")
    scenario = Scenario(name=name, description=str(document.get("description") or ""))
    seed = document.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ScenarioError(f"{source}: seed: must be an integer")
    scenario.seed = seed
    profile = document.get("profile")
    scenario.profile = str(profile) if profile is not None else None
    for key, attribute in _SECTIONS:
        setattr(scenario, attribute, _objects(document.get(key), f"{source}: {key}"))
    waves = document.get("waves") or []
    if not isinstance(waves, list):
        raise ScenarioError(f"{source}: waves: must be a list")
    for index, entry in enumerate(waves):
        where = f"{source}: waves[{index}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{where}: must be a mapping with {sorted(_WAVE_KEYS)}")
        extra = sorted(set(entry) - _WAVE_KEYS)
        if extra:
            raise ScenarioError(f"{where}: unknown keys {extra}")
        backlog = entry.get("backlog", False)
        if not isinstance(backlog, bool):
            raise ScenarioError(f"{where}: backlog: must be true or false")
        scenario.waves.append(
            Wave(
                after_seconds=_seconds(entry, "afterSeconds", where),
                gap_seconds=_seconds(entry, "gapSeconds", where),
                backlog=backlog,
                pods=_objects(entry.get("pods"), f"{where}: pods"),
                claims=_objects(entry.get("claims"), f"{where}: claims"),
            )
        )
    check(scenario, source)
    return scenario


def _seconds(entry: Mapping[str, Any], key: str, where: str) -> float:
    value = entry.get(key, 0)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"{where}: {key}: must be a number >= 0")
    return float(value)


def _objects(value: Any, where: str) -> list[Raw]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ScenarioError(f"{where}: must be a list of Kubernetes objects")
    return [copy.deepcopy(dict(item)) for item in value]


# -- checks -----------------------------------------------------------------------------------

RESOURCE_API = "resource.k8s.io/v1"
NAMESPACED_KINDS = (
    "Pod",
    "PersistentVolumeClaim",
    "PodDisruptionBudget",
    "ResourceClaimTemplate",
    "ResourceClaim",
)


def _with_spec(obj: Raw) -> None:
    """The DRA objects are checked by the API server when a run creates them; here only that
    they have a spec, so that a typo fails before any run."""
    if not isinstance(obj.get("spec"), Mapping):
        raise ValueError("spec: must be a mapping")


_KIND_OF_SECTION: dict[str, tuple[str, str, Callable[[Raw], object]]] = {
    "priorityClasses": ("scheduling.k8s.io/v1", "PriorityClass", PriorityClass),
    "storageClasses": ("storage.k8s.io/v1", "StorageClass", StorageClass),
    "deviceClasses": (RESOURCE_API, "DeviceClass", _with_spec),
    "nodes": ("v1", "Node", Node),
    "resourceSlices": (RESOURCE_API, "ResourceSlice", _with_spec),
    "csiNodes": ("storage.k8s.io/v1", "CSINode", CSINode),
    "persistentVolumes": ("v1", "PersistentVolume", PersistentVolume),
    "volumeAttachments": ("storage.k8s.io/v1", "VolumeAttachment", VolumeAttachment),
    "claims": ("v1", "PersistentVolumeClaim", PersistentVolumeClaim),
    "resourceClaimTemplates": (RESOURCE_API, "ResourceClaimTemplate", _with_spec),
    "resourceClaims": (RESOURCE_API, "ResourceClaim", _with_spec),
    "running": ("v1", "Pod", Pod),
    "podDisruptionBudgets": ("policy/v1", "PodDisruptionBudget", PodDisruptionBudget),
    "pods": ("v1", "Pod", Pod),
}


def _sections(scenario: Scenario) -> Iterator[tuple[str, list[Raw]]]:
    for key, attribute in _SECTIONS:
        yield key, getattr(scenario, attribute)
    for index, wave in enumerate(scenario.waves):
        yield f"waves[{index}].claims", wave.claims
        yield f"waves[{index}].pods", wave.pods


def check(scenario: Scenario, source: str = "scenario") -> None:
    """Every object parses as the scheduler reads it, sits in the right section and is named
    once; running pods name a node of the scenario, pods a PriorityClass of it, volumes a
    claim of it, CSINodes and attachments a node of it, attachments a PV of it. Raise
    :class:`ScenarioError` on the first problem."""
    seen: set[tuple[str, str]] = set()
    for section, items in _sections(scenario):
        key = section.rsplit(".", 1)[-1]
        api_version, kind, view = _KIND_OF_SECTION[key]
        for index, obj in enumerate(items):
            where = f"{source}: {section}[{index}]"
            if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
                raise ScenarioError(f"{where}: must be a {kind} ({api_version})")
            name = name_of(obj)
            if not name:
                raise ScenarioError(f"{where}: metadata.name: must be a non-empty string")
            where = f"{source}: {kind} {name}"
            if (obj.get("metadata") or {}).get("namespace"):
                raise ScenarioError(f"{where}: metadata.namespace: leave it out (each run sets it)")
            if (kind, name) in seen:
                raise ScenarioError(f"{where}: defined more than once")
            seen.add((kind, name))
            try:
                view(_with_namespace(obj, kind))
            except (InvalidObjectError, ValueError) as error:
                raise ScenarioError(f"{where}: {error}") from None
    for index, wave in enumerate(scenario.waves):
        if wave.backlog and (index > 0 or wave.after_seconds):
            raise ScenarioError(
                f"{source}: waves[{index}]: only the first wave can be a backlog, at 0 seconds"
            )
    _check_pods(scenario, source)
    _check_volumes(scenario, source)
    _check_devices(scenario, source)


def _with_namespace(obj: Raw, kind: str) -> Raw:
    if kind not in NAMESPACED_KINDS:
        return obj
    placed = copy.deepcopy(obj)
    placed["metadata"]["namespace"] = "scenario"
    return placed


def _check_pods(scenario: Scenario, source: str) -> None:
    nodes = {name_of(node) for node in scenario.nodes}
    classes = {name_of(c) for c in scenario.priority_classes}
    for pod in scenario.running:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in nodes:
            raise ScenarioError(
                f"{source}: Pod {name_of(pod)}: spec.nodeName: {node!r} is not a node of the "
                "scenario (running pods are bound when they are created)"
            )
    for pod in scenario.pending():
        if (pod.get("spec") or {}).get("nodeName"):
            raise ScenarioError(
                f"{source}: Pod {name_of(pod)}: pods of a wave are pending; move it to running"
            )
    for pod in [*scenario.running, *scenario.pending()]:
        spec = pod.get("spec") or {}
        if spec.get("schedulerName"):
            raise ScenarioError(
                f"{source}: Pod {name_of(pod)}: spec.schedulerName: leave it out (each run sets it)"
            )
        if "priority" in spec or "preemptionPolicy" in spec:
            raise ScenarioError(
                f"{source}: Pod {name_of(pod)}: give the priority as priorityClassName "
                "(admission fills spec.priority and spec.preemptionPolicy)"
            )
        class_name = spec.get("priorityClassName")
        if class_name and class_name not in classes:
            raise ScenarioError(
                f"{source}: Pod {name_of(pod)}: no PriorityClass {class_name!r} in the scenario"
            )


def _check_volumes(scenario: Scenario, source: str) -> None:
    nodes = {name_of(node) for node in scenario.nodes}
    for csi_node in scenario.csi_nodes:
        if name_of(csi_node) not in nodes:
            raise ScenarioError(
                f"{source}: CSINode {name_of(csi_node)}: a CSINode is named after its node, and "
                "there is no such node in the scenario"
            )
    volumes = {name_of(volume) for volume in scenario.volumes}
    for attachment in scenario.attachments:
        spec = attachment.get("spec") or {}
        volume = (spec.get("source") or {}).get("persistentVolumeName")
        if spec.get("nodeName") not in nodes:
            raise ScenarioError(
                f"{source}: VolumeAttachment {name_of(attachment)}: spec.nodeName: "
                f"{spec.get('nodeName')!r} is not a node of the scenario"
            )
        if volume not in volumes:
            raise ScenarioError(
                f"{source}: VolumeAttachment {name_of(attachment)}: "
                f"spec.source.persistentVolumeName: {volume!r} is not a PV of the scenario"
            )
    claims = {name_of(claim) for claim in scenario.all_claims()}
    classes = {name_of(c) for c in scenario.storage_classes}
    for volume in scenario.volumes:
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref and ref.get("name") not in claims:
            raise ScenarioError(
                f"{source}: PersistentVolume {name_of(volume)}: spec.claimRef names "
                f"{ref.get('name')!r}, which is not a claim of the scenario"
            )
    for obj in [*scenario.volumes, *scenario.all_claims()]:
        class_name = (obj.get("spec") or {}).get("storageClassName")
        if class_name and class_name not in classes:
            raise ScenarioError(
                f"{source}: {obj.get('kind')} {name_of(obj)}: no StorageClass {class_name!r} "
                "in the scenario"
            )


def _check_devices(scenario: Scenario, source: str) -> None:
    nodes = {name_of(node) for node in scenario.nodes}
    for published in scenario.resource_slices:
        node = (published.get("spec") or {}).get("nodeName")
        if node not in nodes:
            raise ScenarioError(
                f"{source}: ResourceSlice {name_of(published)}: spec.nodeName: {node!r} is not "
                "a node of the scenario"
            )
    templates = {name_of(t) for t in scenario.claim_templates}
    claims = {name_of(c) for c in scenario.resource_claims}
    for pod in [*scenario.running, *scenario.pending()]:
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName")
            claim = entry.get("resourceClaimName")
            if template and template not in templates:
                raise ScenarioError(
                    f"{source}: Pod {name_of(pod)}: no ResourceClaimTemplate {template!r} in "
                    "the scenario"
                )
            if claim and claim not in claims:
                raise ScenarioError(
                    f"{source}: Pod {name_of(pod)}: no ResourceClaim {claim!r} in the scenario"
                )


# -- one run ----------------------------------------------------------------------------------


@dataclass
class Rendered:
    """The manifests of one run, with its namespace and scheduler filled in."""

    namespace: str
    scheduler_name: str
    cluster_objects: list[Raw]
    nodes: list[Raw]
    resource_slices: list[Raw]
    csi_nodes: list[Raw]
    volumes: list[Raw]
    attachments: list[Raw]
    claims: list[Raw]
    claim_templates: list[Raw]
    resource_claims: list[Raw]
    running: list[Raw]
    pdbs: list[Raw]
    waves: list[Wave]


def render(scenario: Scenario, namespace: str, scheduler_name: str) -> Rendered:
    """Copies of the scenario's objects for one run in ``namespace`` with ``scheduler_name``.

    Cluster-wide objects get :data:`OWNER_LABEL`; claim references of volumes get the
    namespace; pods get the scheduler. The scenario itself is left untouched.
    """

    def owned(obj: Raw) -> Raw:
        placed = copy.deepcopy(obj)
        labels = placed.setdefault("metadata", {}).setdefault("labels", {})
        labels[OWNER_LABEL] = "true"
        return placed

    def namespaced(obj: Raw) -> Raw:
        placed = copy.deepcopy(obj)
        placed.setdefault("metadata", {})["namespace"] = namespace
        return placed

    def pod(obj: Raw) -> Raw:
        placed = namespaced(obj)
        placed.setdefault("spec", {})["schedulerName"] = scheduler_name
        return placed

    def volume(obj: Raw) -> Raw:
        placed = owned(obj)
        ref = (placed.get("spec") or {}).get("claimRef")
        if ref:
            ref["namespace"] = namespace
            ref.setdefault("kind", "PersistentVolumeClaim")
            ref.setdefault("apiVersion", "v1")
        return placed

    return Rendered(
        namespace=namespace,
        scheduler_name=scheduler_name,
        cluster_objects=[
            owned(o)
            for o in [
                *scenario.priority_classes,
                *scenario.storage_classes,
                *scenario.device_classes,
            ]
        ],
        nodes=[owned(node) for node in scenario.nodes],
        resource_slices=[owned(s) for s in scenario.resource_slices],
        csi_nodes=[owned(c) for c in scenario.csi_nodes],
        volumes=[volume(v) for v in scenario.volumes],
        attachments=[owned(a) for a in scenario.attachments],
        claims=[namespaced(claim) for claim in scenario.claims],
        claim_templates=[namespaced(t) for t in scenario.claim_templates],
        resource_claims=[namespaced(c) for c in scenario.resource_claims],
        running=[pod(p) for p in scenario.running],
        pdbs=[namespaced(pdb) for pdb in scenario.pdbs],
        waves=[
            Wave(
                after_seconds=wave.after_seconds,
                pods=[pod(p) for p in wave.pods],
                claims=[namespaced(c) for c in wave.claims],
                gap_seconds=wave.gap_seconds,
                backlog=wave.backlog,
            )
            for wave in scenario.waves
        ],
    )


def without(scenario: Scenario, names: Iterable[tuple[str, str]]) -> Scenario:
    """A copy of ``scenario`` without the objects named ``(kind, name)``; empty waves stay, so
    the timing of the others does not change."""
    dropped = set(names)

    def keep(items: list[Raw]) -> list[Raw]:
        return [copy.deepcopy(o) for o in items if (o.get("kind"), name_of(o)) not in dropped]

    reduced = copy.copy(scenario)
    for _, attribute in _SECTIONS:
        setattr(reduced, attribute, keep(getattr(scenario, attribute)))
    reduced.waves = [
        Wave(
            wave.after_seconds,
            pods=keep(wave.pods),
            claims=keep(wave.claims),
            gap_seconds=wave.gap_seconds,
            backlog=wave.backlog,
        )
        for wave in scenario.waves
    ]
    return reduced
