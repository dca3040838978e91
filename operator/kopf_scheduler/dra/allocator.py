"""The structured-parameters device allocator of kube-scheduler v1.34.10, for one node at a time.

``structured.NewAllocator`` picks the first of its three implementations (stable, incubating,
experimental) that supports every feature the scheduler passes. With v1.34's default gates those
are DRAAdminAccess, DRAPrioritizedList and DRAResourceClaimDeviceStatus (beta, on), and only the
*experimental* implementation declares the last one, so that is the search kube-scheduler runs
and the one restated here, with its alpha features off. For each
claim in the pod's order, each request in the claim's order and each device the request needs,
it tries the node's pools (see :mod:`kopf_scheduler.dra.pools` for their order), their slices and
their devices in listed order, skipping devices in use, devices the class and request selectors
reject, and devices a ``matchAttribute`` constraint rules out; it takes the first that fits and
goes on to the next device needed, backing up when a later one cannot be found. The first
complete solution wins: nothing is scored, so visiting in upstream's order picks upstream's
devices. ``firstAvailable`` subrequests are tried in order and the first that leads to a
solution is taken; ``All`` requests take every matching device of the node's pools, refusing
pools that are being updated or invalid; admin access takes devices even when in use and does
not mark them used. An allocation holds at most 32 devices per claim.

Left out, as upstream leaves them out with their alpha gates off: partitionable devices (devices
that consume shared counters are never picked, slices with per-device node selection are
ignored), device taints and tolerations (not looked at), devices with binding conditions (never
picked, and their slices and pools tried last), consumable capacity (no
``allowMultipleAllocations``, no share IDs; a request with ``capacity`` is an error, as
upstream's "has capacity requests, but the DRAConsumableCapacity feature is disabled").

Results are the JSON of ``status.allocation`` as upstream writes it: the devices per request,
the configuration from the classes (once per class, listing every request that used it) and from
the claim, and a node selector (the node's name when a device is local to it).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Hashable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kopf_scheduler.dra.allocation_memo import AllocationMemo
from kopf_scheduler.dra.cel import (
    DeviceInput,
    DeviceKey,
    SelectorCache,
    SelectorError,
    device_input,
)
from kopf_scheduler.dra.errors import AllocationError
from kopf_scheduler.dra.inventory import Inventory, same_objects
from kopf_scheduler.dra.objects import (
    ALL,
    EXACT_COUNT,
    Device,
    DeviceClass,
    DeviceID,
    Request,
    ResourceClaim,
    ResourceSlice,
    object_version,
)
from kopf_scheduler.dra.pools import Candidate, Pool
from kopf_scheduler.model.errors import InvalidObjectError

__all__ = ["AllocationError", "Allocator", "DeviceID", "allocated_devices"]

MAX_RESULTS_PER_CLAIM = 32
"""``resourceapi.AllocationResultsMaxSize``: the devices one claim's allocation may hold."""

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


def allocated_devices(claim: Mapping[str, Any]) -> set[DeviceID]:
    """The devices a claim's ``status.allocation`` holds so that no other claim may take them.

    Results with admin access do not count (they never make a device busy), as in upstream's
    allocated-devices tracker.
    """
    status = claim.get("status") or {}
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    if not isinstance(allocation, Mapping):
        return set()
    results = (allocation.get("devices") or {}).get("results") or ()
    return {
        DeviceID(str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
        for result in results
        if isinstance(result, Mapping) and not result.get("adminAccess")
    }


class Allocator:
    """Allocates the devices of a pod's claims on one node after another, as upstream does.

    Built once per scheduling attempt from the cluster's DeviceClasses, ResourceSlices and the
    devices in use; :meth:`allocate` is then called for each node. Selector answers are pure
    functions of an expression and a device, so they are kept across nodes, and across attempts
    in the :class:`SelectorCache` for slices that carry a uid and resourceVersion. ``deadline``
    is asked at every step of the search; when it says the time is up, the search ends with
    upstream's "filter operation aborted: context deadline exceeded". With a ``memo``, a node's
    answer is looked up there before searching and kept there after (see
    :mod:`kopf_scheduler.dra.allocation_memo`).
    """

    def __init__(
        self,
        *,
        classes: Mapping[str, Mapping[str, Any]],
        inventory: Inventory,
        allocated: Set[DeviceID],
        selectors: SelectorCache,
        deadline: Callable[[], bool] | None = None,
        memo: AllocationMemo | None = None,
    ) -> None:
        self._raw_classes = classes
        self._inventory = inventory
        self._memo = memo
        self._classes_key: Hashable | None = None
        self._claims_key_of: tuple[Sequence[Mapping[str, Any]], Hashable] | None = None
        self._classes: dict[str, DeviceClass] = {}
        self._allocated = allocated
        self._selectors = selectors
        self._deadline = deadline
        self._claims: dict[int, tuple[Mapping[str, Any], ResourceClaim]] = {}
        self._inputs: dict[tuple[int, int], DeviceInput] = {}
        self._selected: dict[tuple[str, int, int], bool] = {}
        self.search_steps = 0
        """States the search visited over every :meth:`allocate` call (upstream's
        ``NumAllocateOneInvocations``): the measure of how much work a placement took."""

    def allocate(
        self,
        node: Mapping[str, Any],
        claims: Sequence[Mapping[str, Any]],
        also_taken: Set[DeviceID] = frozenset(),
    ) -> list[dict[str, Any]] | None:
        """One ``status.allocation`` per claim, in order; ``None`` when they do not fit here.

        ``also_taken`` are devices to count as in use beyond those the allocator was built with
        (what a gang preemption plan gives to the members placed before). Raises
        :class:`AllocationError` with upstream's message for what upstream reports as an error
        rather than as a node that does not fit.
        """
        if self._inventory.slice_error is not None:
            raise AllocationError(f"gather pool information: {self._inventory.slice_error}")
        metadata = node.get("metadata") or {}
        node_name = str(metadata.get("name") or "")
        view = self._inventory.node_view(node_name, metadata.get("labels") or {})
        in_use: Container[DeviceID] = (
            _Either(self._allocated, also_taken) if also_taken else self._allocated
        )
        key = None
        if self._memo is not None and view.versions is not None:
            taken = tuple(map(in_use.__contains__, view.device_ids))
            key = (self._claims_key(claims), node_name, view.versions, taken)
            kept = self._memo.get(key)
            if kept is not None:
                answer = kept[0]
                return None if answer is None else list(answer)
        parsed = [self._claim(raw) for raw in claims]
        found = _Search(self, node_name, view.pools, parsed, in_use).run()
        if key is not None and self._memo is not None:
            self._memo.put(key, None if found is None else tuple(found))
        return found

    def _claims_key(self, claims: Sequence[Mapping[str, Any]]) -> Hashable:
        """What the claims ask for: their specs, and the DeviceClasses there are.

        Filter passes the same claims for every node of an attempt, so the key is made once.
        """
        kept = self._claims_key_of
        if kept is not None and same_objects(kept[0], claims):
            return kept[1]
        if self._classes_key is None:
            self._classes_key = tuple(
                sorted(
                    (name, object_version(raw) or _canonical(raw))
                    for name, raw in self._raw_classes.items()
                )
            )
        key = (self._classes_key, _canonical([raw.get("spec") for raw in claims]))
        self._claims_key_of = (tuple(claims), key)
        return key

    def why_not(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str:
        """Why the claims cannot be allocated on the node, for people: the first request no
        device of the node can serve (none matches its class and selectors, or too few of those
        are free), or else that the requests only fail together (a constraint, or devices
        several requests want). For a node where :meth:`allocate` answered ``None``."""
        metadata = node.get("metadata") or {}
        node_name = str(metadata.get("name") or "")
        view = self._inventory.node_view(node_name, metadata.get("labels") or {})
        parsed = [self._claim(raw) for raw in claims]
        search = _Search(self, node_name, view.pools, parsed, self._allocated)
        try:
            return search.why_not()
        except AllocationError as error:
            return error.message

    def _claim(self, raw: Mapping[str, Any]) -> ResourceClaim:
        """The parsed claim; the same objects come for every node, so each is parsed once."""
        known = self._claims.get(id(raw))
        if known is not None and known[0] is raw:
            return known[1]
        try:
            parsed = ResourceClaim(raw)
        except InvalidObjectError as error:
            name = (raw.get("metadata") or {}).get("name", "")
            raise AllocationError(f"claim {name}: {error}") from None
        self._claims[id(raw)] = (raw, parsed)
        return parsed

    def device_class(self, name: str) -> DeviceClass | None:
        """The DeviceClass of this name, parsed once."""
        known = self._classes.get(name)
        if known is None and name in self._raw_classes:
            try:
                known = DeviceClass(self._raw_classes[name])
            except InvalidObjectError as error:
                raise AllocationError(f"class {name}: {error}") from None
            self._classes[name] = known
        return known

    def timed_out(self) -> bool:
        return self._deadline is not None and self._deadline()

    def selector_matches(
        self, expression: str, resource_slice: ResourceSlice, device_index: int
    ) -> bool:
        """Whether one selector selects one device, answered once per device version.

        Raises :class:`SelectorError` when it fails to evaluate and :class:`_CompileError` when
        it does not compile, each with upstream's detail.
        """
        key = (expression, id(resource_slice), device_index)
        known = self._selected.get(key)
        if known is not None:
            return known
        device_key = _device_key(resource_slice, device_index)
        if device_key is not None:
            known = self._selectors.answer(expression, device_key)
            if known is not None:
                self._selected[key] = known
                return known
        compiled = self._selectors.compile(expression)
        if compiled.program is None:
            raise _CompileError(compiled.error or "")
        matches = compiled.program.matches(self._device_input(resource_slice, device_index))
        self._selected[key] = matches
        if device_key is not None:
            self._selectors.remember_answer(expression, device_key, matches)
        return matches

    def _device_input(self, resource_slice: ResourceSlice, device_index: int) -> DeviceInput:
        local_key = (id(resource_slice), device_index)
        inputs = self._inputs.get(local_key)
        if inputs is not None:
            return inputs
        device_key = _device_key(resource_slice, device_index)
        if device_key is not None:
            inputs = self._selectors.device_input(device_key)
        if inputs is None:
            device = resource_slice.devices[device_index]
            inputs = device_input(resource_slice.driver, device.attributes, device.capacity)
            if device_key is not None:
                self._selectors.remember_input(device_key, inputs)
        self._inputs[local_key] = inputs
        return inputs


def _device_key(resource_slice: ResourceSlice, device_index: int) -> DeviceKey | None:
    """What names one device of this version of its slice in the selector cache, which outlives
    the allocator; ``None`` for a slice without a version, which is never cached."""
    version = resource_slice.version
    return None if version is None else (*version, device_index)


class _Either(Container[DeviceID]):
    """Devices in use by either of two sets, without building their union on every call."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Set[DeviceID], second: Set[DeviceID]) -> None:
        self._first = first
        self._second = second

    def __contains__(self, device: object) -> bool:
        return device in self._first or device in self._second


class _CompileError(Exception):
    """A selector did not compile; the text is upstream's detail."""


class _ResultLimitError(Exception):
    """The claim would need more than :data:`MAX_RESULTS_PER_CLAIM` devices on this path.

    Upstream's ``errAllocationResultMaxSizeExceeded``: callers back up further than for a plain
    failure, and a ``firstAvailable`` request tries its next subrequest.
    """


class _Key(NamedTuple):
    """A request (``sub`` 0) or one subrequest of a claim's request."""

    claim: int
    request: int
    sub: int


@dataclass(slots=True)
class _RequestData:
    request: Request
    parent: str | None
    device_class: DeviceClass | None
    count: int = 0
    selected_sub: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return self.request.name if self.parent is None else f"{self.parent}/{self.request.name}"


@dataclass(slots=True)
class _Result:
    request: str
    parent: str | None
    id: DeviceID
    device: Device
    slice: ResourceSlice
    admin_access: bool

    @property
    def full_name(self) -> str:
        return self.request if self.parent is None else f"{self.parent}/{self.request}"


class _Constraint(ABC):
    """A claim constraint over the devices of some of its requests (all when none is named).

    Constraints are monotonic: once a device does not fit, adding more never helps.
    """

    __slots__ = ("_count", "_name", "_requests")

    def __init__(self, requests: frozenset[str], attribute_name: str) -> None:
        self._requests = requests
        self._name = attribute_name
        self._count = 0

    def _applies(self, request: str, sub: str | None) -> bool:
        if not self._requests:
            return True
        if sub is None:
            return request in self._requests
        return request in self._requests or f"{request}/{sub}" in self._requests

    def add(self, request: str, sub: str | None, device: Device, device_id: DeviceID) -> bool:
        """Whether the device may join; if so it is counted in. A device of a constrained
        request without the attribute never may."""
        if not self._applies(request, sub):
            return True
        attribute = _lookup_attribute(device, device_id, self._name)
        return attribute is not None and self._admit(request, device_id, attribute)

    @abstractmethod
    def _admit(self, request: str, device_id: DeviceID, attribute: Mapping[str, Any]) -> bool:
        """:meth:`add` for a device of a constrained request that carries the attribute."""

    @abstractmethod
    def remove(self, request: str, sub: str | None, device_id: DeviceID) -> None:
        """Undo one successful :meth:`add` with the same arguments."""


class _MatchAttribute(_Constraint):
    """All devices of the constrained requests carry the same value of one attribute."""

    __slots__ = ("_attribute",)

    def __init__(self, requests: frozenset[str], attribute_name: str) -> None:
        super().__init__(requests, attribute_name)
        self._attribute: Mapping[str, Any] | None = None

    def _admit(self, request: str, device_id: DeviceID, attribute: Mapping[str, Any]) -> bool:
        if self._count == 0:
            self._attribute = attribute
            self._count = 1
            return True
        first = self._attribute or {}
        for kind in ("string", "int", "bool", "version"):
            if attribute.get(kind) is not None:
                if first.get(kind) is None or first[kind] != attribute[kind]:
                    return False
                break
        else:
            return False
        self._count += 1
        return True

    def remove(self, request: str, sub: str | None, device_id: DeviceID) -> None:
        if self._applies(request, sub):
            self._count -= 1


class _DistinctAttribute(_Constraint):
    """``distinctAttribute`` (a field of consumable capacity, alpha): no two devices share a value.

    The API server drops the field while the gate is off, so a claim read from it never has one;
    a claim built elsewhere gets upstream's behaviour with the gate off, which compares the
    values' addresses rather than the values: only the very same device's attribute conflicts,
    and only with the last device each request added.
    """

    __slots__ = ("_held",)

    def __init__(self, requests: frozenset[str], attribute_name: str) -> None:
        super().__init__(requests, attribute_name)
        self._held: dict[str, tuple[DeviceID, Mapping[str, Any]]] = {}

    def _admit(self, request: str, device_id: DeviceID, attribute: Mapping[str, Any]) -> bool:
        if self._count > 0:
            for held_id, held in self._held.values():
                kind = next(
                    (
                        k
                        for k in ("string", "int", "bool", "version")
                        if attribute.get(k) is not None
                    ),
                    None,
                )
                if kind is None:
                    return False
                if held.get(kind) is not None and held_id == device_id:
                    return False
        self._held[request] = (device_id, attribute)
        self._count += 1
        return True

    def remove(self, request: str, sub: str | None, device_id: DeviceID) -> None:
        if self._applies(request, sub):
            self._held.pop(request, None)
            self._count -= 1


def _lookup_attribute(device: Device, device_id: DeviceID, name: str) -> Mapping[str, Any] | None:
    attribute = device.attributes.get(name)
    if attribute is not None:
        return attribute if isinstance(attribute, Mapping) else None
    domain, slash, identifier = name.partition("/")
    if not slash or domain != device_id.driver:
        return None
    attribute = device.attributes.get(identifier)
    return attribute if isinstance(attribute, Mapping) else None


@dataclass(eq=False, repr=False)
class _Search:
    """One :meth:`Allocator.allocate` call: the state of the backtracking search."""

    owner: Allocator
    node_name: str
    pools: list[Pool]
    claims: list[ResourceClaim]
    taken: Container[DeviceID]
    """The devices in use before this search."""
    requests: dict[_Key, _RequestData] = field(default_factory=dict, init=False)
    constraints: list[list[_Constraint]] = field(default_factory=list, init=False)
    allocating: dict[DeviceID, set[int]] = field(default_factory=dict, init=False)
    results: list[list[_Result]] = field(init=False)
    matches: dict[tuple[DeviceID, _Key], bool] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.results = [[] for _ in self.claims]

    # -- preparation ---------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]] | None:
        for claim_index, claim in enumerate(self.claims):
            self._prepare_claim(claim_index, claim)
        # Upstream forgets the selector answers gathered while counting "All" requests.
        self.matches = {}
        if not self._one(_Key(0, 0, 0), 0, sub_chosen=False):
            return None
        return [self._allocation(index, claim) for index, claim in enumerate(self.claims)]

    def why_not(self) -> str:
        """See :meth:`Allocator.why_not`."""
        if not self.pools:
            return "the node has no devices"
        for claim_index, claim in enumerate(self.claims):
            self._prepare_claim(claim_index, claim)
        for claim_index, claim in enumerate(self.claims):
            for request_index, request in enumerate(claim.requests):
                subs = len(request.first_available) or 1
                shortfalls = [
                    self._shortfall(_Key(claim_index, request_index, sub)) for sub in range(subs)
                ]
                if all(shortfalls):
                    where = f"claim {claim.display_name}, request {request.name}"
                    if len(shortfalls) == 1:
                        return f"{where}: {shortfalls[0]}"
                    alternatives = "; ".join(
                        f"{sub.name}: {text}"
                        for sub, text in zip(request.first_available, shortfalls, strict=True)
                    )
                    return f"{where}: no subrequest can be served ({alternatives})"
            if claim.constraints:
                before = " beside the claims before it" if claim_index else ""
                return (
                    f"claim {claim.display_name}: no choice of free devices meets its "
                    f"constraints{before}"
                )
        return "the requests together need more free devices than the node has"

    def _shortfall(self, key: _Key) -> str | None:
        """What keeps one request from being served on its own; ``None`` if nothing does."""
        data = self.requests[key]
        matching = [
            candidate
            for pool in self.pools
            if pool.invalid_reason is None
            for candidate in pool.candidates
            if self._selectable(key, data, candidate)
        ]
        if not matching:
            selectors = " and its selectors" if data.request.selectors else ""
            return f"no device matches class {data.request.class_name}{selectors}"
        if data.request.mode == ALL:
            return None
        admin = bool(data.request.admin_access)
        free = sum(
            1
            for candidate in matching
            if (admin or candidate.id not in self.taken) and not candidate.device.consumes_counters
        )
        if free >= data.count:
            return None
        return f"needs {data.count}, {len(matching)} match, {free} of them free"

    def _prepare_claim(self, claim_index: int, claim: ResourceClaim) -> None:
        minimum = 0
        for request_index, request in enumerate(claim.requests):
            if (request.exactly is not None and request.exactly.has_capacity_requests) or any(
                sub.has_capacity_requests for sub in request.first_available
            ):
                raise AllocationError(
                    f"claim {claim.display_name}, request {request.name}: has capacity requests, "
                    "but the DRAConsumableCapacity feature is disabled"
                )
            if request.first_available:
                fewest: int | None = None
                for sub_index, sub in enumerate(request.first_available):
                    # Upstream validates subrequest i under the key of subrequest i-1 (it moves
                    # the key on only after validating), which matters for the selector answers
                    # an "All" subrequest reuses; kept so the same devices are counted.
                    validation_key = _Key(claim_index, request_index, max(sub_index - 1, 0))
                    data = self._validate(claim, sub, request.name, validation_key)
                    self.requests[_Key(claim_index, request_index, sub_index)] = data
                    fewest = data.count if fewest is None else min(fewest, data.count)
                minimum += fewest or 0
            else:
                if request.exactly is None:
                    raise AllocationError(
                        f"claim {claim.display_name}, request {request.name}: missing device "
                        "class name (unsupported request type?)"
                    )
                key = _Key(claim_index, request_index, 0)
                data = self._validate(claim, request.exactly, None, key)
                self.requests[key] = data
                minimum += data.count
        if minimum > MAX_RESULTS_PER_CLAIM:
            raise AllocationError(
                f"claim {claim.display_name}: number of requested devices {minimum} exceeds the "
                f"claim limit of {MAX_RESULTS_PER_CLAIM}"
            )
        constraints: list[_Constraint] = []
        for index, constraint in enumerate(claim.constraints):
            if constraint.match_attribute is not None:
                constraints.append(_MatchAttribute(constraint.requests, constraint.match_attribute))
            elif constraint.distinct_attribute is not None:
                constraints.append(
                    _DistinctAttribute(constraint.requests, constraint.distinct_attribute)
                )
            else:
                raise AllocationError(
                    f"claim {claim.display_name}, constraint #{index}: empty constraint "
                    "(unsupported constraint type?)"
                )
        self.constraints.append(constraints)

    def _validate(
        self, claim: ResourceClaim, request: Request, parent: str | None, key: _Key
    ) -> _RequestData:
        where = f"claim {claim.display_name}, request {request.name}"
        for index, expression in enumerate(request.selectors):
            if expression is None:
                raise AllocationError(
                    f"{where}, selector #{index}: CEL expression empty (unsupported selector type?)"
                )
        if not request.class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        device_class = self.owner.device_class(request.class_name)
        if device_class is None:
            raise AllocationError(
                f"{where}: could not retrieve device class {request.class_name}: "
                f'deviceclass.resource.k8s.io "{request.class_name}" not found'
            )
        data = _RequestData(request, parent, device_class)
        if request.mode == EXACT_COUNT:
            data.count = request.count
        elif request.mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool.id} is "
                        "currently being updated"
                    )
                if pool.invalid_reason is not None:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool.id} is "
                        "currently invalid"
                    )
                data.all_devices.extend(
                    candidate
                    for candidate in pool.candidates
                    if self._selectable(key, data, candidate)
                )
            data.count = len(data.all_devices)
        else:
            raise AllocationError(f"{where}: unsupported count mode {request.mode}")
        return data

    # -- the search ----------------------------------------------------------------------------

    def _one(self, key: _Key, device_index: int, *, sub_chosen: bool) -> bool:
        """Find the device ``device_index`` of the request ``key`` and everything after it."""
        self.owner.search_steps += 1
        if self.owner.timed_out():
            raise AllocationError("filter operation aborted: context deadline exceeded")
        if key.claim >= len(self.claims):
            return True
        claim = self.claims[key.claim]
        if key.request >= len(claim.requests):
            try:
                return self._one(_Key(key.claim + 1, 0, 0), 0, sub_chosen=False)
            except _ResultLimitError:
                return False
        data = self.requests[key]
        if not sub_chosen and data.parent is not None:
            return self._first_available(key, device_index)
        request = data.request
        take_all = request.mode == ALL
        if take_all and not data.all_devices:
            return False
        if device_index >= data.count:
            return self._one(_Key(key.claim, key.request + 1, 0), 0, sub_chosen=False)
        if len(self.results[key.claim]) + data.count - device_index > MAX_RESULTS_PER_CLAIM:
            raise _ResultLimitError
        if take_all:
            # Upstream goes on from an "All" device with the subrequest index reset to 0, so
            # the next device of an "All" subrequest other than the first is looked for as the
            # first subrequest's; kept, so that the same devices are chosen.
            following = _Key(key.claim, key.request, 0)
            candidate = data.all_devices[device_index]
            return self._try(key, candidate, following, device_index, sub_chosen, must=True)
        admin = bool(request.admin_access)
        for pool in self.pools:
            if pool.invalid_reason is not None:
                raise AllocationError(f"pool {pool.name} is invalid: {pool.invalid_reason}")
            for candidate in pool.candidates:
                if admin:
                    if key.claim in self.allocating.get(candidate.id, ()):
                        continue
                elif self._in_use(candidate.id):
                    continue
                if not self._selectable(key, data, candidate):
                    continue
                if self._try(key, candidate, key, device_index, sub_chosen, must=False):
                    return True
        return False

    def _try(
        self,
        key: _Key,
        candidate: Candidate,
        following: _Key,
        device_index: int,
        sub_chosen: bool,
        *,
        must: bool,
    ) -> bool:
        """Take ``candidate`` for ``key``, then search on from the next device of ``following``;
        give the candidate back unless that succeeds."""
        if not self._take(key, candidate, must=must):
            return False
        try:
            found = self._one(following, device_index + 1, sub_chosen=sub_chosen)
        except BaseException:
            self._give_back(key, candidate)
            raise
        if not found:
            self._give_back(key, candidate)
        return found

    def _first_available(self, key: _Key, device_index: int) -> bool:
        all_over_limit = True
        sub_index = 0
        while True:
            sub_key = _Key(key.claim, key.request, sub_index)
            if sub_key not in self.requests:
                if all_over_limit:
                    raise _ResultLimitError
                return False
            try:
                found = self._one(sub_key, device_index, sub_chosen=True)
            except _ResultLimitError:
                sub_index += 1
                continue
            all_over_limit = False
            if found:
                self.requests[key].selected_sub = sub_index
                return True
            sub_index += 1

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.taken or bool(self.allocating.get(device_id))

    def _selectable(self, key: _Key, data: _RequestData, candidate: Candidate) -> bool:
        if candidate.device.binding_conditions:
            return False
        known = self.matches.get((candidate.id, key))
        if known is not None:
            return known
        selected = True
        if data.device_class is not None:
            selected = self._selectors_match(
                key, candidate, data.device_class, data.device_class.selectors
            )
        if selected:
            selected = self._selectors_match(key, candidate, None, data.request.selectors)
        self.matches[(candidate.id, key)] = selected
        return selected

    def _selectors_match(
        self,
        key: _Key,
        candidate: Candidate,
        device_class: DeviceClass | None,
        expressions: Sequence[str | None],
    ) -> bool:
        for number, expression in enumerate(expressions):
            owner = (
                f"class {device_class.name}"
                if device_class is not None
                else f"claim {self.claims[key.claim].display_name}"
            )
            if expression is None:
                raise AllocationError(
                    f"{owner}: selector #{number}: CEL expression empty "
                    "(unsupported selector type?)"
                )
            try:
                matches = self.owner.selector_matches(
                    expression, candidate.slice, candidate.position
                )
            except _CompileError as error:
                raise AllocationError(
                    f"{owner}: selector #{number}: CEL compile error: {error}"
                ) from None
            except SelectorError as error:
                raise AllocationError(
                    f"{owner}: selector #{number}: CEL runtime error: {error}"
                ) from None
            if not matches:
                return False
        return True

    def _take(self, key: _Key, candidate: Candidate, *, must: bool) -> bool:
        """Allocate ``candidate`` for ``key`` for now, if it is free and meets the constraints."""
        data = self.requests[key]
        request = data.request
        admin = bool(request.admin_access)
        if admin and key.claim in self.allocating.get(candidate.id, ()):
            return False
        if not admin and self._in_use(candidate.id):
            return False
        if candidate.device.consumes_counters:
            return False
        base, sub = self._names(data)
        constraints = self.constraints[key.claim]
        for index, constraint in enumerate(constraints):
            if not constraint.add(base, sub, candidate.device, candidate.id):
                if must:
                    raise AllocationError(
                        f"claim {self.claims[key.claim].display_name}, request {request.name}: "
                        f"cannot add device {candidate.id} because a claim constraint would not "
                        "be satisfied"
                    )
                for earlier in constraints[:index]:
                    earlier.remove(base, sub, candidate.id)
                return False
        self.allocating.setdefault(candidate.id, set()).add(key.claim)
        self.results[key.claim].append(
            _Result(
                request.name, data.parent, candidate.id, candidate.device, candidate.slice, admin
            )
        )
        return True

    def _give_back(self, key: _Key, candidate: Candidate) -> None:
        base, sub = self._names(self.requests[key])
        for constraint in self.constraints[key.claim]:
            constraint.remove(base, sub, candidate.id)
        self.allocating[candidate.id].discard(key.claim)
        self.results[key.claim].pop()

    @staticmethod
    def _names(data: _RequestData) -> tuple[str, str | None]:
        if data.parent is None:
            return data.request.name, None
        return data.parent, data.request.name

    # -- the result ----------------------------------------------------------------------------

    def _allocation(self, claim_index: int, claim: ResourceClaim) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        for result in self.results[claim_index]:
            entry: dict[str, Any] = {
                "request": result.full_name,
                "driver": result.id.driver,
                "pool": result.id.pool,
                "device": result.id.device,
            }
            if result.admin_access:
                entry["adminAccess"] = True
            results.append(entry)
        devices: dict[str, Any] = {}
        if results:
            devices["results"] = results
        config = self._config(claim_index, claim)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        node_selector = self._node_selector(claim, self.results[claim_index])
        if node_selector is not None:
            allocation["nodeSelector"] = node_selector
        return allocation

    def _chosen(self, claim_index: int, request_index: int) -> _RequestData:
        data = self.requests[_Key(claim_index, request_index, 0)]
        if data.parent is not None:
            return self.requests[_Key(claim_index, request_index, data.selected_sub)]
        return data

    def _config(self, claim_index: int, claim: ResourceClaim) -> list[dict[str, Any]]:
        config: list[dict[str, Any]] = []
        class_entries: dict[str, list[dict[str, Any]]] = {}
        for request_index in range(len(claim.requests)):
            data = self._chosen(claim_index, request_index)
            device_class = data.device_class
            if device_class is None:
                continue
            if device_class.name in class_entries:
                for entry in class_entries[device_class.name]:
                    entry["requests"].append(data.full_name)
                continue
            entries = [
                {"source": SOURCE_CLASS, "requests": [data.full_name], **_configuration(raw)}
                for raw in device_class.config
            ]
            class_entries[device_class.name] = entries
            config.extend(entries)
        for raw in claim.config:
            requests = list(raw.get("requests") or ())
            entry = {"source": SOURCE_CLAIM, **({"requests": requests} if requests else {})}
            entry.update(_configuration(raw))
            if not requests:
                config.append(entry)
                continue
            # Upstream adds the entry once per request it names, duplicates included.
            for request_index, request in enumerate(claim.requests):
                if request.name in requests:
                    config.append(dict(entry))
                    continue
                data = self.requests[_Key(claim_index, request_index, 0)]
                if data.parent is None:
                    continue
                chosen = request.first_available[data.selected_sub]
                if f"{request.name}/{chosen.name}" in requests:
                    config.append(dict(entry))
        return config

    def _node_selector(
        self, claim: ResourceClaim, results: Sequence[_Result]
    ) -> dict[str, Any] | None:
        expressions: list[Mapping[str, Any]] = []
        fields: list[Mapping[str, Any]] = []
        for result in results:
            resource_slice = result.slice
            if resource_slice.node_name or result.device.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [self.node_name],
                                }
                            ]
                        }
                    ]
                }
            raw = resource_slice.node_selector_raw
            if raw is None:
                continue
            terms = raw.get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(
                    f"create NodeSelector for claim {claim.name}: unsupported "
                    f"ResourceSlice.NodeSelector with {len(terms)} terms"
                )
            if terms:
                _add_requirements(terms[0].get("matchFields") or (), fields)
                _add_requirements(terms[0].get("matchExpressions") or (), expressions)
        if not expressions and not fields:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = [dict(r) for r in expressions]
        if fields:
            term["matchFields"] = [dict(r) for r in fields]
        return {"nodeSelectorTerms": [term]}


def _configuration(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The device configuration of a class or claim ``config`` entry (``opaque``, ...)."""
    return {name: value for name, value in raw.items() if name != "requests"}


def _add_requirements(
    new: Sequence[Mapping[str, Any]], requirements: list[Mapping[str, Any]]
) -> None:
    for requirement in new:
        values = set(requirement.get("values") or ())
        if not any(
            existing.get("key") == requirement.get("key")
            and existing.get("operator") == requirement.get("operator")
            and set(existing.get("values") or ()) == values
            for existing in requirements
        ):
            requirements.append(requirement)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
