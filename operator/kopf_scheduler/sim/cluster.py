"""An in-memory stand-in for the API server, the kubelet and the controllers scheduling relies on.

It keeps raw objects, bumps resource versions, and delivers every change to the scheduler's
event handlers, like a watch would. It implements the write ports the scheduler uses (binding,
status patches, deletion, events, volume binding's PV and claim updates) with the API server's
rules that matter to scheduling: objects are defaulted and admitted as they are created
(``sim/admission.py``), binding sets ``spec.nodeName`` and the PodScheduled condition, a bound
pod being deleted stays terminating for its grace period, and an update based on a stale
resourceVersion is refused. The disruption controller keeps PodDisruptionBudget status up to
date: each PDB keeps the set of pods it selects (pod labels never change here), so a pod change
updates only the PDBs that select that pod. The volume controllers (``sim/volume_controllers.py``)
bind, provision and create ephemeral claims; the resource-claim controller
(``sim/claim_controller.py``) makes ResourceClaims from templates and releases them; a
StatefulSet's OrderedReady pods are created one after the other (``sim/ordered_pods.py``). The
objects of dynamic resource allocation are kept like the storage objects, and the scheduler's
writes to ResourceClaims follow the API server's rules (a stale update is refused, the status
subresource changes only the status). PodGroups (scheduler-plugins' custom resource) are kept as
the API server keeps a custom resource: stored, versioned and announced, nothing more.

Storage objects are never changed in place once stored (the scheduler's views keep the raw
dictionaries they were built from): every change stores a new copy.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.config.documents import copy_document
from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import DISRUPTION_TARGET, Pod
from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.ports import ConflictError, Event, NotFoundError, PodRef, PodStatusPatch
from kopf_scheduler.sim.admission import admit_priority, default_claim_class, default_pod
from kopf_scheduler.sim.claim_controller import ResourceClaimController
from kopf_scheduler.sim.ordered_pods import OrderedPodCreation
from kopf_scheduler.sim.scenario import DRA_KINDS, NAMESPACED_KINDS, STORAGE_KINDS
from kopf_scheduler.sim.virtual_clock import VirtualClock
from kopf_scheduler.sim.volume_controllers import CLAIM, STORAGE_CLASS, VOLUME, VolumeControllers

Raw = dict[str, Any]
POD_GROUP = "PodGroup"
POD_CONTROLLERS = ("ReplicaSet", "StatefulSet")
RESOURCE_CLAIM = "ResourceClaim"
Listener = Callable[[str, str, Mapping[str, Any]], None]
"""``listener(kind, event_type, raw)`` receives every change."""


@dataclass
class RecordedEvent:
    time: float
    type: str
    reason: str
    object: str
    message: str
    action: str
    reporting_controller: str
    related: str = ""


class InMemoryCluster:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.nodes: dict[str, Raw] = {}
        self.pods: dict[str, Raw] = {}
        self.pdbs: dict[str, Raw] = {}
        self.priority_classes: dict[str, Raw] = {}
        self.namespaces: dict[str, Raw] = {}
        self.pod_groups: dict[str, Raw] = {}
        """PodGroups by ``namespace/name``."""
        self.controllers: dict[str, Raw] = {}
        """ReplicaSets and StatefulSets by ``kind namespace/name``: only stored and announced
        (their pods come with the scenario, ``sim/workloads.py``), for the selectors default
        topology spreading reads."""
        self.events: list[RecordedEvent] = []
        self.deleted: dict[str, Raw] = {}
        """Pods removed from the cluster, by key, as they were last seen."""
        self.static_pdb_status: set[str] = set()
        """PDBs whose status came with the scenario (not recomputed)."""
        self.generation = 0
        """Counts every change; the simulation stops when nothing changes any more."""
        self._listeners: list[Listener] = []
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)
        self._deletions: list[tuple[float, int, str, str]] = []
        self._deletion_sequence = itertools.count()
        self._budgets: dict[str, _Budget] = {}
        """Computed (not static) PDBs: the parsed view and the pods it selects."""
        self._pod_budgets: dict[str, list[str]] = {}
        """Pod key -> keys of the computed PDBs that select it."""
        self.storage: dict[str, dict[str, Raw]] = {
            kind: {} for kind in (*STORAGE_KINDS, *DRA_KINDS)
        }
        """Storage and DRA objects by kind, then by key (``namespace/name`` for namespaced
        kinds)."""
        self.volume_controllers = VolumeControllers(self)
        self.claim_controller = ResourceClaimController(self)
        self.ordered_pods = OrderedPodCreation(self)
        self._loading = False

    # Watching --------------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, kind: str, event_type: str, raw: Raw) -> None:
        self.generation += 1
        for listener in self._listeners:
            listener(kind, event_type, raw)
        if not self._loading:  # after loading, the controllers look at everything anyway
            self.volume_controllers.observe(kind, event_type, raw)
            self.claim_controller.observe(kind, event_type, raw)

    def _stamp(self, raw: Raw) -> Raw:
        metadata = raw.setdefault("metadata", {})
        metadata["resourceVersion"] = str(next(self._versions))
        return raw

    # Creating objects ------------------------------------------------------------------------

    def load(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Create a whole cluster state, then let the controllers look at it all at once.

        The controllers see the state as they would after starting on a running cluster, so a
        volume created before the claim it is bound to is not taken for orphaned.
        """
        self._loading = True
        try:
            for raw in objects:
                self.create(raw)
        finally:
            self._loading = False
        self.volume_controllers.resync()
        self.claim_controller.resync()
        self.run_controllers()

    def run_controllers(self) -> None:
        """Let the controllers act on every change so far (their writes are events too)."""
        while True:
            generation = self.generation
            self.ordered_pods.run()
            self.claim_controller.run()
            self.volume_controllers.run()
            if self.generation == generation:
                return

    def create(self, raw: Mapping[str, Any]) -> Raw:
        """Create an object; the controllers react before this returns (unless loading)."""
        obj = self._create(raw)
        if not self._loading:
            self.run_controllers()
        return obj

    def _create(self, raw: Mapping[str, Any]) -> Raw:
        obj: Raw = copy_document(raw)
        kind = obj.get("kind", "")
        replaced: list[str] = []
        metadata = obj.setdefault("metadata", {})
        if kind in NAMESPACED_KINDS:
            metadata.setdefault("namespace", "default")
        metadata.setdefault("uid", f"{kind.lower()}-{next(self._uids):05d}")
        metadata.setdefault("creationTimestamp", format_timestamp(self.clock.now()))
        self._stamp(obj)
        name = metadata["name"]
        if kind == "Node":
            self.nodes[name] = obj
        elif kind == "Pod":
            spec = obj.setdefault("spec", {})
            default_pod(spec)
            admit_priority(spec, self.priority_classes)
            status = obj.setdefault("status", {})
            if spec.get("nodeName"):
                status.setdefault("phase", "Running")
                status.setdefault("startTime", format_timestamp(self.clock.now()))
            else:
                status.setdefault("phase", "Pending")
            key = f"{metadata['namespace']}/{name}"
            replaced = self._untrack_pod(key) if key in self.pods else []
            self.pods[key] = obj
        elif kind == "PodDisruptionBudget":
            key = f"{metadata['namespace']}/{name}"
            if "disruptionsAllowed" in (obj.get("status") or {}):
                self.static_pdb_status.add(key)
            self.pdbs[key] = obj
        elif kind == "PriorityClass":
            self.priority_classes[name] = obj
        elif kind == "Namespace":
            self.namespaces[name] = obj
        elif kind == POD_GROUP:
            self.pod_groups[_key(kind, metadata)] = obj
        elif kind in POD_CONTROLLERS:
            self.controllers[f"{kind} {_key(kind, metadata)}"] = obj
        elif kind in STORAGE_KINDS:
            if kind == CLAIM:
                default_claim_class(obj, self.storage[STORAGE_CLASS].values())
            if kind in (CLAIM, VOLUME):
                status = obj.get("status") or {}
                obj["status"] = {**status, "phase": status.get("phase") or "Pending"}
            self.storage[kind][_key(kind, metadata)] = obj
        elif kind in DRA_KINDS:
            self.storage[kind][_key(kind, metadata)] = obj
        else:
            raise ValueError(f"unsupported kind {kind!r}")
        self._emit(kind, ADDED, obj)
        if kind == "Pod":
            selected = self._track_pod(f"{metadata['namespace']}/{name}", obj)
            if replaced:
                order = list(self.pdbs)
                selected = sorted(set(selected) | set(replaced), key=order.index)
            self._update_budgets(selected)
        elif kind == "PodDisruptionBudget":
            self._track_budget(f"{metadata['namespace']}/{name}", obj)
        return obj

    # The disruption controller ---------------------------------------------------------------

    def update_pdb_status(self) -> None:
        """Recompute ``disruptionsAllowed`` of every computed PDB from scratch."""
        for key, raw in list(self.pdbs.items()):
            if key not in self.static_pdb_status:
                self._track_budget(key, raw)

    def _track_budget(self, key: str, raw: Raw) -> None:
        """Index which pods a new (or replaced) PDB selects, then publish its status."""
        if key in self.static_pdb_status:
            return
        for budgets in self._pod_budgets.values():
            if key in budgets:
                budgets.remove(key)
        budget = _Budget(PodDisruptionBudget(raw), raw)
        self._budgets[key] = budget
        order = list(self.pdbs)
        for pod_key, pod_raw in self.pods.items():
            if budget.selects(pod_raw):
                budget.add(pod_key, _healthy(pod_raw))
                budgets = self._pod_budgets.setdefault(pod_key, [])
                budgets.append(key)
                budgets.sort(key=order.index)
        self._update_budgets([key])

    def _track_pod(self, key: str, raw: Raw) -> list[str]:
        """Count a new pod in the PDBs that select it; returns their keys, in PDB order."""
        selected = [name for name, budget in self._budgets.items() if budget.selects(raw)]
        if selected:
            order = list(self.pdbs)
            selected.sort(key=order.index)
            healthy = _healthy(raw)
            for name in selected:
                self._budgets[name].add(key, healthy)
            self._pod_budgets[key] = selected
        return selected

    def _untrack_pod(self, key: str) -> list[str]:
        selected = self._pod_budgets.pop(key, [])
        for name in selected:
            self._budgets[name].discard(key)
        return selected

    def _pod_health_changed(self, key: str, raw: Raw) -> None:
        selected = self._pod_budgets.get(key, [])
        healthy = _healthy(raw)
        for name in selected:
            self._budgets[name].add(key, healthy)
        self._update_budgets(selected)

    def _update_budgets(self, keys: list[str]) -> None:
        """Publish ``disruptionsAllowed`` of the given PDBs (in PDB order) where it changed,
        as the disruption controller does for bare pods."""
        for key in keys:
            budget = self._budgets[key]
            desired = _desired_healthy(budget.pdb, self._expected_pods(budget))
            allowed = max(0, budget.healthy - desired)
            status = budget.raw.setdefault("status", {})
            if status.get("disruptionsAllowed") != allowed:
                status["disruptionsAllowed"] = allowed
                self._stamp(budget.raw)
                self._emit("PodDisruptionBudget", MODIFIED, budget.raw)

    def _expected_pods(self, budget: _Budget) -> int:
        """The pods a PDB expects. For ``maxUnavailable`` or a percentage ``minAvailable`` the
        disruption controller adds up the scale of the pods' controllers, so a pod its ReplicaSet
        or StatefulSet has not created yet (or that a preemption deleted) still counts; a pod
        without a controller the cluster holds counts itself."""
        pdb = budget.pdb
        by_scale = pdb.max_unavailable is not None or isinstance(pdb.min_available, str)
        if not by_scale or not self.controllers:
            return len(budget.members)
        scales: dict[str, int] = {}
        unowned = 0
        for key in budget.members:
            pod = self.pods.get(key)
            controller = self._controller_of(pod) if pod is not None else None
            if controller is None:
                unowned += 1
            else:
                uid = controller["metadata"]["uid"]
                scales[uid] = int((controller.get("spec") or {}).get("replicas", 1))
        return unowned + sum(scales.values())

    def _controller_of(self, pod: Raw) -> Raw | None:
        metadata = pod["metadata"]
        for owner in metadata.get("ownerReferences") or []:
            if not isinstance(owner, Mapping) or not owner.get("controller"):
                continue
            key = f"{owner.get('kind')} {metadata['namespace']}/{owner.get('name')}"
            controller = self.controllers.get(key)
            if controller is not None and controller["metadata"].get("uid") == owner.get("uid"):
                return controller
            return None
        return None

    # The write ports -------------------------------------------------------------------------

    def _live(self, ref: PodRef) -> Raw:
        raw = self.pods.get(ref.key)
        if raw is None or raw["metadata"].get("uid") != ref.uid:
            raise NotFoundError(f'pods "{ref.name}" not found')
        return raw

    async def bind(self, pod: Pod, node_name: str) -> None:
        raw = self._live(pod)
        spec = raw["spec"]
        if spec.get("nodeName"):
            if spec["nodeName"] == node_name:
                return
            raise ConflictError(f"pod {pod.key} is already assigned to node {spec['nodeName']!r}")
        if node_name not in self.nodes:
            raise NotFoundError(f'nodes "{node_name}" not found')
        spec["nodeName"] = node_name
        status = raw.setdefault("status", {})
        now = format_timestamp(self.clock.now())
        _set_condition(
            status,
            {
                "type": "PodScheduled",
                "status": "True",
                "reason": "",
                "message": "",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            },
        )
        status["phase"] = "Running"
        status["startTime"] = now
        status.pop("nominatedNodeName", None)
        self._stamp(raw)
        self._emit("Pod", MODIFIED, raw)
        self._pod_health_changed(pod.key, raw)

    async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
        raw = self._live(pod)
        status = raw.setdefault("status", {})
        for condition in patch.conditions:
            _set_condition(status, dict(condition))
        if patch.set_nominated_node_name:
            if patch.nominated_node_name:
                status["nominatedNodeName"] = patch.nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if patch.annotations:
            annotations = raw["metadata"].setdefault("annotations", {})
            for key, value in patch.annotations.items():
                if value is None:
                    annotations.pop(key, None)
                else:
                    annotations[key] = value
        self._stamp(raw)
        self._emit("Pod", MODIFIED, raw)

    async def delete_pod(self, pod: Pod) -> None:
        try:
            raw = self._live(pod)
        except NotFoundError:
            return
        metadata = raw["metadata"]
        if metadata.get("deletionTimestamp"):
            return
        if not raw["spec"].get("nodeName"):
            self._remove(pod.key)
            return
        grace = raw["spec"].get("terminationGracePeriodSeconds")
        grace = 30 if grace is None else max(0, int(grace))
        if grace == 0:
            self._remove(pod.key)
            return
        deadline = self.clock.now() + grace
        metadata["deletionTimestamp"] = format_timestamp(math.ceil(deadline))
        metadata["deletionGracePeriodSeconds"] = grace
        self._stamp(raw)
        self._emit("Pod", MODIFIED, raw)
        heapq.heappush(self._deletions, (deadline, next(self._deletion_sequence), pod.key, pod.uid))
        self._pod_health_changed(pod.key, raw)

    async def update_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._update(VOLUME, raw)

    async def update_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._update(CLAIM, raw)

    def _update(self, kind: str, raw: Mapping[str, Any]) -> Raw:
        """A PUT: refused for a stale resourceVersion or another UID; status is kept as stored
        (it has its own subresource); an update that changes nothing writes nothing."""
        metadata = raw.get("metadata") or {}
        key = _key(kind, metadata)
        resource = f'{kind.lower()}s "{metadata.get("name", "")}"'
        stored = self.storage[kind].get(key)
        if stored is None:
            raise NotFoundError(f"{resource} not found")
        stored_metadata = stored["metadata"]
        version = metadata.get("resourceVersion")
        if version and version != stored_metadata["resourceVersion"]:
            raise ConflictError(
                f"Operation cannot be fulfilled on {resource}: the object has been modified; "
                "please apply your changes to the latest version and try again"
            )
        uid = metadata.get("uid")
        if uid and uid != stored_metadata.get("uid"):
            raise ConflictError(
                f"Operation cannot be fulfilled on {resource}: Precondition failed: "
                f"UID in precondition: {uid}, UID in object meta: {stored_metadata.get('uid')}"
            )
        updated: Raw = copy.deepcopy(dict(raw))
        updated_metadata = updated.setdefault("metadata", {})
        for field in ("namespace", "uid", "creationTimestamp", "resourceVersion"):
            if field in stored_metadata:
                updated_metadata[field] = stored_metadata[field]
        updated["status"] = copy.deepcopy(stored.get("status") or {})
        if updated == stored:
            return copy.deepcopy(stored)
        return copy.deepcopy(self.replace(kind, updated))

    # ResourceClaims as the scheduler writes them -------------------------------------------------

    async def get_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        stored = self.storage[RESOURCE_CLAIM].get(f"{namespace}/{name}")
        if stored is None:
            raise NotFoundError(f'resourceclaims.resource.k8s.io "{name}" not found')
        return copy.deepcopy(stored)

    async def update_resource_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._update_resource_claim(raw, status=False)

    async def update_resource_claim_status(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._update_resource_claim(raw, status=True)

    def _update_resource_claim(self, raw: Mapping[str, Any], *, status: bool) -> Raw:
        """A PUT of the claim or of its status subresource: the other part stays as stored."""
        metadata = raw.get("metadata") or {}
        name = str(metadata.get("name", ""))
        stored = self.storage[RESOURCE_CLAIM].get(_key(RESOURCE_CLAIM, metadata))
        if stored is None:
            raise NotFoundError(f'resourceclaims.resource.k8s.io "{name}" not found')
        version = metadata.get("resourceVersion")
        if version and version != stored["metadata"]["resourceVersion"]:
            raise ConflictError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )
        updated = copy.deepcopy(stored)
        if status:
            updated["status"] = copy.deepcopy(dict(raw.get("status") or {}))
        else:
            updated["metadata"] = {**copy.deepcopy(dict(metadata)), **_identity(stored)}
            updated["spec"] = copy.deepcopy(raw.get("spec") or stored.get("spec") or {})
        if updated == stored:
            return copy.deepcopy(stored)
        return copy.deepcopy(self.replace(RESOURCE_CLAIM, updated))

    async def remove_resource_claim_reservation(
        self, namespace: str, name: str, claim_uid: str, pod_uid: str
    ) -> None:
        stored = self.storage[RESOURCE_CLAIM].get(f"{namespace}/{name}")
        if stored is None:
            raise NotFoundError(f'resourceclaims.resource.k8s.io "{name}" not found')
        if stored["metadata"].get("uid") != claim_uid:
            raise ConflictError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": '
                f"Precondition failed: UID in precondition: {claim_uid}, "
                f"UID in object meta: {stored['metadata'].get('uid')}"
            )
        updated = copy.deepcopy(stored)
        status = updated.setdefault("status", {})
        reserved = [e for e in status.get("reservedFor") or [] if e.get("uid") != pod_uid]
        if reserved:
            status["reservedFor"] = reserved
        else:
            status.pop("reservedFor", None)
        if updated != stored:
            self.replace(RESOURCE_CLAIM, updated)

    def set_pod_claim_statuses(self, key: str, statuses: list[Raw]) -> None:
        """The resource-claim controller records the claims it made for a pod."""
        raw = self.pods.get(key)
        if raw is None:
            return
        updated = copy.deepcopy(raw)
        updated.setdefault("status", {})["resourceClaimStatuses"] = statuses
        self._stamp(updated)
        self.pods[key] = updated
        self._emit("Pod", MODIFIED, updated)

    # The storage objects as the controllers change them -----------------------------------------

    def objects(self, kind: str) -> Mapping[str, Raw]:
        return self.storage[kind]

    def replace(self, kind: str, raw: Raw) -> Raw:
        """Store ``raw`` (a new dictionary) as the object's next version and announce it."""
        self._stamp(raw)
        self.storage[kind][_key(kind, raw["metadata"])] = raw
        self._emit(kind, MODIFIED, raw)
        return raw

    def delete_object(self, kind: str, key: str) -> None:
        gone = copy.deepcopy(self.storage[kind].pop(key))
        self._stamp(gone)
        self._emit(kind, DELETED, gone)

    # PodGroups ------------------------------------------------------------------------------------

    def update_pod_group(self, raw: Mapping[str, Any]) -> Raw:
        """Replace a stored PodGroup (as a PUT without a resourceVersion precondition)."""
        metadata = raw.get("metadata") or {}
        key = _key(POD_GROUP, metadata)
        stored = self.pod_groups.get(key)
        if stored is None:
            raise NotFoundError(
                f'podgroups.scheduling.x-k8s.io "{metadata.get("name", "")}" not found'
            )
        updated: Raw = copy.deepcopy(dict(raw))
        updated_metadata = updated.setdefault("metadata", {})
        for field in ("namespace", "uid", "creationTimestamp"):
            updated_metadata[field] = stored["metadata"][field]
        self._stamp(updated)
        self.pod_groups[key] = updated
        self._emit(POD_GROUP, MODIFIED, updated)
        return updated

    def delete_pod_group(self, key: str) -> None:
        gone = copy.deepcopy(self.pod_groups.pop(key))
        self._stamp(gone)
        self._emit(POD_GROUP, DELETED, gone)

    def record(self, event: Event) -> None:
        related = event.related.key if event.related is not None else ""
        self.events.append(
            RecordedEvent(
                self.clock.now(),
                event.type,
                event.reason,
                event.regarding.key,
                event.note,
                event.action,
                event.reporting_controller,
                related,
            )
        )

    # The kubelet finishing deletions -------------------------------------------------------------

    def next_deletion(self) -> float | None:
        return self._deletions[0][0] if self._deletions else None

    def finish_due_deletions(self) -> None:
        now = self.clock.now()
        while self._deletions and self._deletions[0][0] <= now:
            _, _, key, uid = heapq.heappop(self._deletions)
            raw = self.pods.get(key)
            if raw is not None and raw["metadata"].get("uid") == uid:
                self._remove(key)
        self.run_controllers()

    def _remove(self, key: str) -> None:
        raw = self.pods.pop(key)
        self.deleted[key] = raw
        self._stamp(raw)
        self._emit("Pod", DELETED, raw)
        self._update_budgets(self._untrack_pod(key))

    def was_preempted(self, key: str) -> bool:
        raw = self.deleted.get(key)
        if raw is None:
            return False
        for condition in (raw.get("status") or {}).get("conditions") or []:
            if condition.get("type") == DISRUPTION_TARGET and condition.get("status") == "True":
                return True
        return False


def _identity(stored: Raw) -> dict[str, Any]:
    """What an update cannot change: the stored object's identity and version."""
    metadata = stored["metadata"]
    fields = ("name", "namespace", "uid", "creationTimestamp", "resourceVersion")
    return {field: metadata[field] for field in fields if field in metadata}


def _key(kind: str, metadata: Mapping[str, Any]) -> str:
    name = str(metadata.get("name", ""))
    if kind in NAMESPACED_KINDS:
        return f"{metadata.get('namespace') or 'default'}/{name}"
    return name


def _healthy(raw: Raw) -> bool:
    """Counted as healthy by the disruption controller (bound and not terminating)."""
    return bool(raw["spec"].get("nodeName")) and not raw["metadata"].get("deletionTimestamp")


class _Budget:
    """A computed PDB: which pods it selects and how many of them are healthy."""

    __slots__ = ("healthy", "members", "pdb", "raw")

    def __init__(self, pdb: PodDisruptionBudget, raw: Raw) -> None:
        self.pdb = pdb
        self.raw = raw
        self.members: dict[str, bool] = {}
        self.healthy = 0

    def selects(self, pod_raw: Raw) -> bool:
        metadata = pod_raw["metadata"]
        if metadata.get("namespace") != self.pdb.namespace:
            return False
        selector = self.pdb.selector
        return not selector.matches_nothing and selector.matches(metadata.get("labels") or {})

    def add(self, key: str, healthy: bool) -> None:
        """Count ``key`` (or update whether it is healthy)."""
        self.healthy += int(healthy) - int(self.members.get(key, False))
        self.members[key] = healthy

    def discard(self, key: str) -> None:
        self.healthy -= int(self.members.pop(key, False))


def _set_condition(status: Raw, condition: Raw) -> None:
    conditions = status.setdefault("conditions", [])
    for index, existing in enumerate(conditions):
        if existing.get("type") == condition.get("type"):
            if existing.get("status") == condition.get("status") and existing.get(
                "lastTransitionTime"
            ):
                condition["lastTransitionTime"] = existing["lastTransitionTime"]
            conditions[index] = condition
            return
    conditions.append(condition)


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(total * int(value[:-1]) / 100)


def _desired_healthy(pdb: PodDisruptionBudget, expected: int) -> int:
    if pdb.min_available is not None:
        return _scaled(pdb.min_available, expected)
    if pdb.max_unavailable is not None:
        return max(0, expected - _scaled(pdb.max_unavailable, expected))
    return expected
