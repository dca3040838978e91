"""DynamicResources: dynamic resource allocation (DRA, ``resource.k8s.io/v1``) as kube-scheduler
v1.34 does it with its default feature gates.

A pod names ResourceClaims in ``spec.resourceClaims``; each claim asks for devices that drivers
publish in ResourceSlices, filtered by DeviceClasses. The plugin finds a node where every
unallocated claim can be allocated, and writes the allocation when the pod binds:

- PreEnqueue keeps a pod out of the active queue while one of its claims is missing, being
  deleted, or (made from a template) not yet created or not owned by the pod.
- PreFilter gathers the claims, reads the node selectors of the allocated ones, checks that the
  classes of the unallocated ones exist, and builds the allocator over the devices not yet taken
  (claims seen now plus the allocations in flight). A pod without claims is skipped.
- Filter asks the allocator about the node (given up after ``filterTimeout``) and keeps its
  answer; a node outside an allocated claim's node selector is rejected. Across attempts the
  allocator reuses the parsed slices while none changes and a node's answer while nothing it
  depends on changes (:mod:`kopf_scheduler.dra.inventory`,
  :mod:`kopf_scheduler.dra.allocation_memo`).
- PostFilter, when a claim allocated for this pod alone is what kept every node out, clears that
  allocation so the next attempt can choose other devices.
- Reserve records the chosen node's allocations as in flight, Unreserve drops them (and takes
  the pod out of ``reservedFor``); PreBind writes the finalizer, ``status.allocation`` and
  ``status.reservedFor``, retrying on conflicts, and then sees the written claims until the watch
  delivers them.

Every rejection is UnschedulableAndUnresolvable, as upstream: preemption does not try to free
devices (a victim's pods keep their claims allocated), so DefaultPreemption skips the nodes
DynamicResources rejected. Extended resources backed by DRA, device taints, binding conditions,
partitionable devices and consumable capacity (alpha in v1.34, off by default) are not modelled.

Arguments (``DynamicResourcesArgs``): ``filterTimeout``, a duration such as ``10s`` (the default,
as with the DRASchedulerFilterTimeout gate on); zero means no limit.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import structlog

from kopf_scheduler import plugin_api as api
from kopf_scheduler.dra.allocation_memo import AllocationMemo
from kopf_scheduler.dra.allocator import AllocationError, Allocator, DeviceID, allocated_devices
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import InventoryCache
from kopf_scheduler.model.duration import go_duration_seconds
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resource_claim import (
    FINALIZER,
    ClaimNotReadyError,
    ResourceClaim,
    has_claims,
    pod_claims,
)
from kopf_scheduler.model.selectors import NodeSelector

logger = structlog.get_logger("kopf_scheduler.plugins.dynamic_resources")

NAME = "DynamicResources"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
"""PostFilter's rejection for a pod whose PreFilter ran and found no claims."""
DEALLOCATED = "deallocation of ResourceClaim completed"
STILL_NOT_SCHEDULABLE = "still not schedulable"
STATE_NOT_FOUND = "not found"
"""The Error of every point after PreFilter when the PreFilter state is missing (upstream's
cycle-state lookup error, verbatim)."""
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
TIMED_OUT = "timed out trying to allocate devices"
DEFAULT_FILTER_TIMEOUT_SECONDS = 10.0
CONFLICT_RETRIES = 5
"""Attempts of one claim's PreBind write (client-go's ``retry.DefaultRetry`` steps)."""
CONFLICT_RETRY_INTERVAL_SECONDS = 0.01
"""The wait before reading a claim again after a conflict (``retry.DefaultRetry``)."""
SELECTOR_CACHE_SIZE = 10
"""Compiled CEL selectors kept across attempts, as upstream's LRU."""

_FILTER_TIMEOUT = "filterTimeout"


@dataclass(frozen=True)
class DynamicResourcesArgs:
    filter_timeout: float = DEFAULT_FILTER_TIMEOUT_SECONDS
    """Seconds; 0 means no limit."""

    @classmethod
    def parse(cls, raw: Any) -> DynamicResourcesArgs:
        """Validate as upstream's ValidateDynamicResourcesArgs with its v1.34 gates."""
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {_FILTER_TIMEOUT})
        value = args.get(_FILTER_TIMEOUT)
        if value is None:
            return cls()
        field_name = f"args.{_FILTER_TIMEOUT}"
        seconds = go_duration_seconds(value) if isinstance(value, str) else None
        if seconds is None:
            raise api.InvalidArgsError(
                field_name, f"must be a duration such as '10s', got {value!r}"
            )
        if seconds < 0:
            raise api.InvalidArgsError(field_name, f"must be zero or positive, got {value!r}")
        return cls(filter_timeout=seconds)


@dataclass
class _ClaimState:
    claim: ResourceClaim
    available_on: NodeSelector | None = None
    """The node selector of the claim's allocation, when it is allocated and has one."""
    allocation: Mapping[str, Any] | None = None
    """Chosen at Reserve, written at PreBind; ``None`` if the claim needed no allocation."""


@dataclass
class _State:
    """What PreFilter found, shared by every later point of the attempt (never copied, as
    upstream's: preemption's dry runs see and extend the same allocations per node)."""

    claims: list[_ClaimState] = field(default_factory=list)
    allocator: Allocator | None = None
    deadline: float | None = None
    """When the running Filter gives up (the allocator asks through a callable)."""
    unavailable: set[int] = field(default_factory=set)
    """Indices of allocated claims that some node could not use."""
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    planned_taken: frozenset[DeviceID] = frozenset()
    """Devices a gang preemption plan gives to the members it placed before this pod."""

    def clone(self) -> _State:
        """The same claims, allocator and allocations per node; only what a plan took is the
        clone's own, so that each of a plan's passes counts its own placements."""
        return copy.copy(self)

    def to_allocate(self) -> list[tuple[int, ResourceClaim]]:
        return [(i, c.claim) for i, c in enumerate(self.claims) if c.claim.allocation is None]


STATE_KEY: api.StateKey[_State] = api.StateKey(NAME)


def _unresolvable(message: str) -> api.Status:
    return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


def _error(message: str) -> api.Status:
    return api.Status(api.Code.ERROR, message)


def _api_error_text(error: Exception) -> str:
    if isinstance(error, api.ApiError) and error.message:
        return error.message
    return str(error)


class DynamicResources:
    name: ClassVar[str] = NAME

    def __init__(self, args: DynamicResourcesArgs, handle: api.Handle) -> None:
        self.args = args
        self.handle = handle
        self.dra = handle.dra
        self.selectors = SelectorCache(SELECTOR_CACHE_SIZE)
        self.inventories = InventoryCache(self.selectors)
        self.memo = AllocationMemo()

    # The pod's claims ----------------------------------------------------------------------------

    def _pod_claims(self, pod_raw: Mapping[str, Any]) -> list[ResourceClaim]:
        """The claims of the pod, in ``spec.resourceClaims`` order, each present, not being
        deleted and (made from a template) owned by the pod; raises ``ClaimNotReadyError`` with
        upstream's text otherwise."""
        metadata = pod_raw.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        pod_name = str(metadata.get("name") or "")
        pod_uid = str(metadata.get("uid") or f"{namespace}/{pod_name}")
        claims: list[ResourceClaim] = []
        for entry in pod_claims(pod_raw):
            if entry.claim_name is None:
                continue
            claim = self.dra.claim(namespace, entry.claim_name)
            if claim is None:
                raise ClaimNotReadyError(
                    f'could not find ResourceClaim "{namespace}/{entry.claim_name}"'
                )
            if claim.deleting:
                raise ClaimNotReadyError(f'resourceclaim "{claim.name}" is being deleted')
            if entry.from_template and claim.controller_uid != pod_uid:
                raise ClaimNotReadyError(
                    f"ResourceClaim {claim.key} was not created for pod "
                    f"{namespace}/{pod_name} (pod is not owner)"
                )
            claims.append(claim)
        return claims

    def pre_enqueue(self, pod: Pod) -> api.Status:
        try:
            self._pod_claims(pod.raw)
        except ClaimNotReadyError as error:
            return _unresolvable(str(error))
        return api.SUCCESS

    # PreFilter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        data = _State()
        state.write(STATE_KEY, data)
        try:
            claims = self._pod_claims(pod.raw)
        except ClaimNotReadyError as error:
            return None, _unresolvable(str(error))
        if not claims:
            return None, api.SKIP
        states = [_ClaimState(claim) for claim in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
                raw_selector = claim.allocation.get("nodeSelector")
                if raw_selector is not None:
                    try:
                        states[index].available_on = NodeSelector.parse(
                            raw_selector, "status.allocation.nodeSelector"
                        )
                    except InvalidObjectError as error:
                        return None, _error(str(error))
                continue
            to_allocate += 1
            if self.dra.has_pending_allocation(claim.uid):
                return None, _unresolvable(
                    f"resource claim {claim.key} is in the process of being allocated"
                )
            status = self._check_requests(claim)
            if not status.is_success():
                return None, status
        if to_allocate:
            try:
                data.allocator = Allocator(
                    classes=self.dra.classes,
                    inventory=self.inventories.get(list(self.dra.slices.values())),
                    allocated=self.dra.allocated_devices(),
                    selectors=self.selectors,
                    deadline=self._deadline_check(data),
                    memo=self.memo,
                )
            except AllocationError as error:
                return None, _error(str(error))
        data.claims = states
        return None, api.SUCCESS

    def _check_requests(self, claim: ResourceClaim) -> api.Status:
        """Every request's classes exist (a missing one: wait for a DeviceClass event)."""
        spec = claim.raw.get("spec") or {}
        devices = spec.get("devices") or {}
        for request in devices.get("requests") or []:
            if not isinstance(request, Mapping):
                continue
            name = str(request.get("name") or "")
            exactly = request.get("exactly")
            first_available = request.get("firstAvailable")
            if isinstance(exactly, Mapping):
                status = self._check_class(exactly.get("deviceClassName"), name)
                if not status.is_success():
                    return status
            elif isinstance(first_available, list) and first_available:
                for entry in first_available:
                    sub = entry if isinstance(entry, Mapping) else {}
                    qualified = f"{name}/{sub.get('name') or ''}"
                    status = self._check_class(sub.get("deviceClassName"), qualified)
                    if not status.is_success():
                        return status
            else:
                return _unresolvable(
                    f"resource claim {claim.key}, request {name}: unknown request type"
                )
        return api.SUCCESS

    def _check_class(self, class_name: Any, request_name: str) -> api.Status:
        if not class_name:
            return _error(f"request {request_name}: unsupported request type")
        if class_name not in self.dra.classes:
            return _unresolvable(
                f"request {request_name}: device class {class_name} does not exist"
            )
        return api.SUCCESS

    def _deadline_check(self, data: _State) -> Callable[[], bool]:
        def passed() -> bool:
            return data.deadline is not None and self.handle.now() >= data.deadline

        return passed

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    # Filter --------------------------------------------------------------------------------------

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        data = state.get(STATE_KEY)
        if data is None:
            return _error(STATE_NOT_FOUND)
        if not data.claims:
            return api.SUCCESS
        node = node_info.node
        if node is None:
            return _error("node not found")
        unavailable = [
            index
            for index, claim_state in enumerate(data.claims)
            if claim_state.available_on is not None
            and not claim_state.available_on.matches(node.name, node.labels)
        ]
        allocations: list[dict[str, Any]] | None = None
        if data.allocator is not None:
            timeout = self.args.filter_timeout
            data.deadline = self.handle.now() + timeout if timeout > 0 else None
            claims = [claim.raw for _, claim in data.to_allocate()]
            try:
                found = data.allocator.allocate(node.raw, claims, data.planned_taken)
            except AllocationError as error:
                if self._timed_out(data):
                    return _unresolvable(TIMED_OUT)
                return _error(str(error))
            finally:
                timed_out = self._timed_out(data)
                data.deadline = None
            if found is None and timed_out:
                return _unresolvable(TIMED_OUT)
            if found is None or len(found) != len(claims):
                allocator = data.allocator
                return api.Status(
                    api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    CANNOT_ALLOCATE,
                    detail=lambda: allocator.why_not(node.raw, claims),
                )
            allocations = found
        if unavailable:
            data.unavailable.update(unavailable)
            return _unresolvable(NOT_AVAILABLE_ON_NODE)
        if allocations is not None:
            data.node_allocations[node.name] = allocations
        return api.SUCCESS

    def _timed_out(self, data: _State) -> bool:
        return data.deadline is not None and self.handle.now() >= data.deadline

    # PostFilter ----------------------------------------------------------------------------------

    def post_filter(
        self, state: api.CycleState, pod: Pod, node_to_status: api.NodeToStatus
    ) -> tuple[api.PostFilterResult | None, api.Status]:
        data = state.get(STATE_KEY)
        if data is None:
            return None, _error(STATE_NOT_FOUND)
        if not data.claims:
            return None, api.Status(api.Code.UNSCHEDULABLE, NO_CLAIMS_TO_DEALLOCATE)
        for index in sorted(data.unavailable):
            claim = data.claims[index].claim
            reserved = claim.reserved_for
            if not reserved or reserved == (pod.uid,):
                self.handle.spawn(self._deallocate(claim))
                return None, api.Status(api.Code.UNSCHEDULABLE, DEALLOCATED)
        return None, api.Status(api.Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE)

    async def _deallocate(self, claim: ResourceClaim) -> None:
        """Clear an allocation no node could use, so the next attempt may choose again."""
        raw = copy.deepcopy(dict(claim.raw))
        status = dict(raw.get("status") or {})
        for key in ("reservedFor", "allocation", "devices"):
            status.pop(key, None)
        raw["status"] = status
        try:
            await self._writer().update_resource_claim_status(raw)
        except (api.ApiError, RuntimeError) as error:
            logger.warning("claim_deallocation_failed", claim=claim.key, error=str(error))

    def _writer(self) -> api.ResourceClaimWriter:
        if self.handle.claim_writer is None:
            raise RuntimeError("no ResourceClaim writer is attached to this scheduler")
        return self.handle.claim_writer

    # Reserve and Unreserve -----------------------------------------------------------------------

    def reserve(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        data = state.get(STATE_KEY)
        if data is None:
            return _error(STATE_NOT_FOUND)
        to_allocate = data.to_allocate()
        if not data.claims or not to_allocate or data.allocator is None:
            return api.SUCCESS
        allocations = data.node_allocations.get(node_name)
        if not allocations:
            return _error("claim allocation not found for node")
        if len(allocations) != len(to_allocate):
            return _error(
                f"internal error, have {len(allocations)} allocations, "
                f"{len(to_allocate)} claims to allocate, want {len(to_allocate)} claims"
            )
        for (index, claim), shared in zip(to_allocate, allocations, strict=True):
            allocation = copy.deepcopy(shared)  # the allocator's memo keeps the original
            data.claims[index].allocation = allocation
            allocated = _with_allocation(claim.raw, allocation)
            self.dra.signal_pending_allocation(claim.uid, allocated)
        return api.SUCCESS

    def unreserve(self, state: api.CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if data is None or not data.claims:
            return
        for claim_state in data.claims:
            claim = claim_state.claim
            if self.dra.remove_pending_allocation(claim.uid):
                self.dra.restore_claim(claim.key)
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                self.handle.spawn(self._unreserve(claim, pod))

    async def _unreserve(self, claim: ResourceClaim, pod: Pod) -> None:
        try:
            await self._writer().remove_resource_claim_reservation(
                claim.namespace, claim.name, claim.uid, pod.uid
            )
        except (api.ApiError, RuntimeError) as error:
            logger.warning("claim_unreserve_failed", claim=claim.key, error=str(error))

    # PreBind -------------------------------------------------------------------------------------

    async def pre_bind(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        data = state.get(STATE_KEY)
        if data is None:
            return _error(STATE_NOT_FOUND)
        for claim_state in data.claims:
            if claim_state.claim.is_reserved_for(pod.uid):
                continue
            try:
                claim_state.claim = await self._bind_claim(claim_state, pod)
            except _BindError as error:
                return _error(str(error))
        return api.SUCCESS

    async def _bind_claim(self, claim_state: _ClaimState, pod: Pod) -> ResourceClaim:
        """Write the allocation (with the finalizer first) and the pod's reservation."""
        allocation = claim_state.allocation
        claim = claim_state.claim
        written: ResourceClaim | None = None
        try:
            written = await self._write_reservation(claim, allocation, pod)
            return written
        finally:
            if allocation is not None:
                if written is not None:
                    try:
                        self.dra.assume_claim(written)
                    except (api.AssumeConflictError, KeyError) as error:
                        logger.debug("claim_not_assumed", claim=claim.key, reason=str(error))
                self.dra.remove_pending_allocation(claim.uid)

    async def _write_reservation(
        self, claim: ResourceClaim, allocation: Mapping[str, Any] | None, pod: Pod
    ) -> ResourceClaim:
        writer = self._writer()
        raw: dict[str, Any] = copy.deepcopy(dict(claim.raw))
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                await self.handle.sleep(CONFLICT_RETRY_INTERVAL_SECONDS)
                try:
                    raw = dict(await writer.get_resource_claim(claim.namespace, claim.name))
                except api.ApiError as error:
                    raise _BindError(
                        f"get updated claim {claim.key} after conflict: {_api_error_text(error)}"
                    ) from error
            try:
                return await self._write_once(raw, claim.key, allocation, pod)
            except _BindError as error:
                if not isinstance(error.__cause__, api.ConflictError) or (
                    attempt == CONFLICT_RETRIES - 1
                ):
                    raise
        raise AssertionError("unreachable: the last attempt raises")

    async def _write_once(
        self,
        raw: dict[str, Any],
        key: str,
        allocation: Mapping[str, Any] | None,
        pod: Pod,
    ) -> ResourceClaim:
        writer = self._writer()
        metadata = dict(raw.get("metadata") or {})
        if metadata.get("deletionTimestamp"):
            raise _BindError(f"claim {key} got deleted in the meantime")
        status = dict(raw.get("status") or {})
        if allocation is not None:
            if status.get("allocation") is not None:
                raise _BindError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = list(metadata.get("finalizers") or [])
            if FINALIZER not in finalizers:
                metadata["finalizers"] = [*finalizers, FINALIZER]
                try:
                    raw = dict(await writer.update_resource_claim({**raw, "metadata": metadata}))
                except api.ApiError as error:
                    raise _BindError(
                        f"add finalizer to claim {key}: {_api_error_text(error)}"
                    ) from error
                status = dict(raw.get("status") or {})
            status["allocation"] = copy.deepcopy(dict(allocation))
        consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        status["reservedFor"] = [*(status.get("reservedFor") or []), consumer]
        try:
            stored = await writer.update_resource_claim_status({**raw, "status": status})
        except api.ApiError as error:
            what = "add allocation and reservation" if allocation is not None else "add reservation"
            raise _BindError(f"{what} to claim {key}: {_api_error_text(error)}") from error
        try:
            return ResourceClaim(stored)
        except InvalidObjectError as error:
            raise _BindError(f"claim {key} as stored: {error}") from error

    # Gang preemption plans -------------------------------------------------------------------

    def planned_on(
        self,
        placed_state: api.CycleState,
        placed: Pod,
        node_name: str,
        later_states: Sequence[api.CycleState],
    ) -> None:
        """The devices ``placed`` was given on ``node_name`` count as taken for the members a
        gang plan places after it (upstream's preemption never frees or counts devices, so this
        only keeps a plan from giving one device to two members)."""
        placed_data = placed_state.get(STATE_KEY)
        if placed_data is None:
            return
        devices: set[DeviceID] = set()
        for allocation in placed_data.node_allocations.get(node_name) or ():
            devices |= allocated_devices({"status": {"allocation": allocation}})
        if not devices:
            return
        for state in later_states:
            data = state.get(STATE_KEY)
            if data is not None:
                data.planned_taken = data.planned_taken | devices

    # Explanations ------------------------------------------------------------------------------

    def explain_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        """The pod's claims as the plugin sees them now: the devices each holds (allocated, or
        chosen at Reserve and not yet written), or why the claims are not ready."""
        if not has_claims(pod.raw):
            return None
        try:
            claims = self._pod_claims(pod.raw)
        except ClaimNotReadyError as error:
            return {"summary": str(error)}
        described = [f"{claim.key}: {self._devices_of(claim)}" for claim in claims]
        return {"summary": "; ".join(described) or "no claim needed"}

    def _devices_of(self, claim: ResourceClaim) -> str:
        allocation = claim.allocation
        verb = "allocated"
        if allocation is None:
            pending = self.dra.pending_allocation(claim.uid)
            allocation = ((pending or {}).get("status") or {}).get("allocation")
            verb = "allocating"
        if not isinstance(allocation, Mapping):
            return "not allocated"
        results = (allocation.get("devices") or {}).get("results") or []
        devices = ", ".join(
            f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
            for r in results
            if isinstance(r, Mapping)
        )
        return f"{verb} {devices}"

    # Queueing hints ------------------------------------------------------------------------------

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        node_actions = (
            api.ActionType.ADD
            | api.ActionType.UPDATE_NODE_LABEL
            | api.ActionType.UPDATE_NODE_ALLOCATABLE
        )
        add_or_update = api.ActionType.ADD | api.ActionType.UPDATE
        return [
            api.ClusterEventWithHint(api.ClusterEvent(api.EventResource.NODE, node_actions)),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.RESOURCE_CLAIM, add_or_update),
                self._after_claim_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.POD, api.ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
                ),
                self._after_pod_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.DEVICE_CLASS, add_or_update)
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.RESOURCE_SLICE, add_or_update)
            ),
        ]

    def _after_claim_change(self, pod: Pod, old: Any, new: Any) -> api.QueueingHint:
        """A claim was added or changed: worth a try if it is one of the pod's and its status
        changed, or if any claim lost its allocation (devices became free)."""
        if not isinstance(new, ResourceClaim):
            return api.QueueingHint.QUEUE
        deallocated = (
            isinstance(old, ResourceClaim) and old.allocation is not None and new.allocation is None
        )
        if not deallocated and (
            new.namespace != pod.namespace or new.name not in pod.resource_claim_names
        ):
            # Not one of the pod's claims, and no devices freed: skipped whatever the state of
            # the pod's own claims, so they need not be resolved (claim events are many, and
            # each is put to every pod waiting).
            return api.QueueingHint.QUEUE_SKIP
        try:
            uses_claim = any(c.uid == new.uid for c in self._pod_claims(pod.raw))
        except ClaimNotReadyError:
            return api.QueueingHint.QUEUE_SKIP
        if deallocated:
            return api.QueueingHint.QUEUE
        if not uses_claim:
            return api.QueueingHint.QUEUE_SKIP
        if old is None:
            return api.QueueingHint.QUEUE
        old_status = old.raw.get("status") if isinstance(old, ResourceClaim) else None
        if (old_status or {}) == (new.raw.get("status") or {}):
            return api.QueueingHint.QUEUE_SKIP
        return api.QueueingHint.QUEUE

    def _after_pod_change(self, pod: Pod, old: Any, new: Any) -> api.QueueingHint:
        """The pod's own generated claims were recorded: worth a try once all of them exist."""
        if not isinstance(new, Pod) or new.uid != pod.uid:
            return api.QueueingHint.QUEUE_SKIP
        try:
            self._pod_claims(new.raw)
        except ClaimNotReadyError:
            return api.QueueingHint.QUEUE_SKIP
        return api.QueueingHint.QUEUE


class _BindError(Exception):
    """A claim's PreBind write failed; the message is upstream's."""


def _with_allocation(raw: Mapping[str, Any], allocation: Mapping[str, Any]) -> dict[str, Any]:
    """The claim as it will be once allocated: finalizer added, allocation set."""
    claim = copy.deepcopy(dict(raw))
    metadata = dict(claim.get("metadata") or {})
    finalizers = list(metadata.get("finalizers") or [])
    if FINALIZER not in finalizers:
        metadata["finalizers"] = [*finalizers, FINALIZER]
    claim["metadata"] = metadata
    claim["status"] = {**(claim.get("status") or {}), "allocation": allocation}
    return claim


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> DynamicResources:
    return DynamicResources(DynamicResourcesArgs.parse(args), handle)
