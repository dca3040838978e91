"""DynamicResources: the plugin kube-scheduler v1.34 puts in every default profile for dynamic
resource allocation (DRA), kept here for what it does to pods that use no ResourceClaims.

kopf-scheduler does not allocate devices. What it keeps is the visible part of upstream's
plugin, which sits right before DefaultPreemption and so touches every failed attempt:

- PreFilter first records in the cycle state that it ran, then returns Skip for a pod without
  claims, so its Filter is never called for such a pod.
- PostFilter runs before DefaultPreemption. With the state present it rejects with
  ``no new claims to deallocate``; the framework joins that with DefaultPreemption's message,
  so a failed preemption reads ``0/3 nodes are available: 3 Insufficient cpu. no new claims to
  deallocate, preemption: 0/3 nodes are available: ...``.
- When an earlier PreFilter turned the pod away as UnschedulableAndUnresolvable (a missing
  PersistentVolumeClaim, say), this PreFilter never ran and the state is missing. PostFilter
  then fails with the Error ``not found``, which ends PostFilter: DefaultPreemption is not
  tried, and the pod's FailedScheduling message ends in ``. not found``.
- Filter, Reserve and PreBind only need the state to be there (an Error ``not found`` if it is
  not, which happens only when the PreFilter point is disabled for this plugin); Unreserve and
  PreEnqueue have nothing to do.

A pod that does use claims is rejected in PreFilter as UnschedulableAndUnresolvable, saying
that dynamic resource allocation is not supported: it is never placed as if its claims were
not there. As upstream, an entry of ``spec.resourceClaims`` made from a template for which the
pod's status says no claim was needed does not count. Nothing in the cluster can make such a
pod schedulable here (``spec.resourceClaims`` cannot change), so the plugin registers no cluster
events; extended resources backed by DRA (the alpha DRAExtendedResource gate, off in v1.34) do
not exist here either.

Arguments (``DynamicResourcesArgs``): ``filterTimeout``, a duration such as ``10s`` (the default,
as with the DRASchedulerFilterTimeout gate on in v1.34), zero or positive. It bounds device
allocation upstream; it is validated so that configurations written for kube-scheduler load
unchanged, and has nothing to bound here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.args import InvalidArgsError, ensure_mapping, reject_unknown
from kopf_scheduler.framework.cycle_state import CycleState, StateKey
from kopf_scheduler.framework.events import ClusterEventWithHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import PreFilterExtensions
from kopf_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from kopf_scheduler.framework.types import NodeToStatus, PostFilterResult, PreFilterResult
from kopf_scheduler.model.duration import go_duration_seconds
from kopf_scheduler.model.pod import Pod

NAME = "DynamicResources"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
"""PostFilter's rejection for a pod whose PreFilter ran and found no claims."""
STATE_NOT_FOUND = "not found"
"""The Error of every point after PreFilter when the PreFilter state is missing (upstream's
cycle-state lookup error, verbatim)."""
UNSUPPORTED_CLAIMS = (
    "pod has resource claims ({claims}), but dynamic resource allocation is not supported "
    "by this scheduler"
)
DEFAULT_FILTER_TIMEOUT_SECONDS = 10.0

_FILTER_TIMEOUT = "filterTimeout"


@dataclass(frozen=True)
class DynamicResourcesArgs:
    filter_timeout: float = DEFAULT_FILTER_TIMEOUT_SECONDS
    """Seconds; 0 means no limit."""

    @classmethod
    def parse(cls, raw: Any) -> DynamicResourcesArgs:
        """Validate as upstream's ValidateDynamicResourcesArgs with its v1.34 gates."""
        args = ensure_mapping(raw)
        reject_unknown(args, {_FILTER_TIMEOUT})
        value = args.get(_FILTER_TIMEOUT)
        if value is None:
            return cls()
        field = f"args.{_FILTER_TIMEOUT}"
        seconds = go_duration_seconds(value) if isinstance(value, str) else None
        if seconds is None:
            raise InvalidArgsError(field, f"must be a duration such as '10s', got {value!r}")
        if seconds < 0:
            raise InvalidArgsError(field, f"must be zero or positive, got {value!r}")
        return cls(filter_timeout=seconds)


class _PreFilterRan:
    """Marks that PreFilter ran for the pod; the pod then has no claims to work on. Immutable."""

    __slots__ = ()

    def clone(self) -> _PreFilterRan:
        return self


STATE_KEY: StateKey[_PreFilterRan] = StateKey(NAME)
_PRE_FILTER_RAN = _PreFilterRan()


def _claims_needed(pod: Pod) -> list[str]:
    """The names of the pod's ``spec.resourceClaims`` entries that stand for a ResourceClaim.

    An entry made from a template whose ``status.resourceClaimStatuses`` entry names no claim
    needed none and is left out, as upstream does.
    """
    spec = pod.raw.get("spec") or {}
    entries = spec.get("resourceClaims") or []
    if not entries:
        return []
    status = pod.raw.get("status") or {}
    generated = {
        entry.get("name"): entry.get("resourceClaimName")
        for entry in status.get("resourceClaimStatuses") or []
        if isinstance(entry, Mapping)
    }
    names: list[str] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name") or "")
        no_claim_needed = (
            not entry.get("resourceClaimName")
            and entry.get("resourceClaimTemplateName")
            and name in generated
            and not generated[name]
        )
        if not no_claim_needed:
            names.append(name)
    return names


def _state_status(state: CycleState) -> Status:
    """SUCCESS when PreFilter ran for this attempt, otherwise upstream's Error."""
    if state.get(STATE_KEY) is None:
        return Status(Code.ERROR, STATE_NOT_FOUND)
    return SUCCESS


class DynamicResources:
    name: ClassVar[str] = NAME

    def __init__(self, args: DynamicResourcesArgs) -> None:
        self.args = args

    def pre_enqueue(self, pod: Pod) -> Status:
        return SUCCESS

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(STATE_KEY, _PRE_FILTER_RAN)
        claims = _claims_needed(pod)
        if claims:
            message = UNSUPPORTED_CLAIMS.format(claims=", ".join(claims))
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        return None, SKIP

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return _state_status(state)

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        status = _state_status(state)
        if not status.is_success():
            return None, status
        return None, Status(Code.UNSCHEDULABLE, NO_CLAIMS_TO_DEALLOCATE)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return _state_status(state)

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return _state_status(state)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


def new(args: Mapping[str, Any] | None, handle: Handle) -> DynamicResources:
    return DynamicResources(DynamicResourcesArgs.parse(args))
