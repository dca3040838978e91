"""Extension-point Protocols. A plugin is a class with a ``name`` and any of these methods.

Signatures follow upstream's framework with Python idioms: statuses are :class:`Status` objects
(:data:`SUCCESS` for success), scoring returns ``(score, status)``, and only the binding-cycle
points that talk to the API (PreBind, Bind) are coroutines.

Filter and Score plugins may also offer a batch form (:class:`BatchFilterPlugin`,
:class:`BatchScorePlugin`): the same verdicts and scores for every node at once, computed over
the node columns of :mod:`kopf_scheduler.framework.node_columns`. The per-node ``filter`` and
``score`` stay the reference. The scheduler filters with the batch forms only when every Filter
plugin that runs in an attempt has one; it scores with the batch forms it has and the per-node
``score`` of the other plugins, summed together. Either way it must reach the same decision.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    NamedTuple,
    Protocol,
    Self,
    TypeGuard,
    runtime_checkable,
)

from kopf_scheduler.framework.protocol_check import class_satisfies

if TYPE_CHECKING:
    from kopf_scheduler.cache.node_info import NodeInfo
    from kopf_scheduler.framework.cycle_state import CycleState
    from kopf_scheduler.framework.events import ClusterEventWithHint
    from kopf_scheduler.framework.node_columns.columns import NodeColumns
    from kopf_scheduler.framework.node_columns.free_capacity import FreeColumns
    from kopf_scheduler.framework.node_columns.mirror import BoolArray, IntArray
    from kopf_scheduler.framework.status import Status
    from kopf_scheduler.framework.types import (
        NodeToStatus,
        PostFilterResult,
        PreFilterResult,
        QueuedPodInfo,
    )
    from kopf_scheduler.model.pod import Pod

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class NodeScore:
    """A node's score from one plugin; normalisers rewrite ``score`` in place."""

    __slots__ = ("name", "score")

    def __init__(self, name: str, score: int) -> None:
        self.name = name
        self.score = score

    def __repr__(self) -> str:
        return f"NodeScore({self.name}, {self.score})"


@runtime_checkable
class Plugin(Protocol):
    name: ClassVar[str]


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status: ...

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status: ...


class CountingPreFilterExtensions(ABC):
    """PreFilter extensions for a plugin whose PreFilter state counts pods on nodes.

    Preemption's dry runs add and remove pods on a node; for such a plugin both are one update
    of its counts, with the pod counted in (``delta`` 1) or out (``delta`` -1). A plugin inherits
    ``pre_filter_extensions``, ``add_pod`` and ``remove_pod`` from here and writes
    :meth:`count_pod`.
    """

    __slots__ = ()

    def pre_filter_extensions(self) -> Self:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status:
        return self.count_pod(state, pod_to_schedule, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status:
        return self.count_pod(state, pod_to_schedule, pod_to_remove, node_info, -1)

    @abstractmethod
    def count_pod(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, delta: int
    ) -> Status:
        """Count ``other`` on ``node_info``'s node in or out of ``pod``'s PreFilter state."""


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status: ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


MAX_REJECTION_REASONS = 512
"""Batch Filters number their distinct rejections below this."""


class NodeRejections(NamedTuple):
    """The nodes a batch Filter rejects, by position in the node columns."""

    fails: BoolArray
    reasons: Callable[[IntArray], IntArray] | None = None
    """For rejected positions, which of the plugin's rejections applies to each (a number
    below :data:`MAX_REJECTION_REASONS`); nodes with equal numbers get equal statuses from the
    per-node ``filter``. ``None`` when the plugin rejects in one way only."""

    @classmethod
    def by_detail(cls, fails: BoolArray, detail: IntArray) -> NodeRejections:
        """Rejections whose reason numbers are known for every node up front (``detail``)."""

        def reasons(positions: IntArray) -> IntArray:
            picked: IntArray = detail[positions]
            return picked

        return cls(fails, reasons)


class BatchFilter(Protocol):
    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeColumns, free: FreeColumns
    ) -> NodeRejections | None:
        """What ``filter`` rejects among all nodes, after PreFilter ran; ``None`` when it
        rejects none. ``free`` is each node's free capacity with the nominated pods that count
        against ``pod``. Raises :class:`~kopf_scheduler.framework.node_columns.fallback.Fallback`
        when the attempt is outside what the arithmetic models."""


class BatchFilterOverPodVolumes:
    """Base of a batch Filter whose verdict on a node reads the volumes of the node's pods
    (NodeVolumeLimits' attach counts). Taking pods off a node changes such a verdict, so
    preemption's dry runs without clones step aside while one is active."""


@runtime_checkable
class BatchResourceFit(BatchFilter, Protocol):
    """A batch Filter whose verdict depends on a node's pods only through the amounts they
    request and their number (which lets preemption dry runs do that arithmetic directly)."""

    def shortfall_check(
        self, state: CycleState, free: FreeColumns
    ) -> Callable[[NodeInfo, int, int, int, int], int]:
        """For the attempt's pod: given a node and the cpu, memory, ephemeral storage and pod
        count its pods (and the nominated pods counted in ``free``) would request, 0 when the
        pod fits, else a number naming what falls short (equal numbers, equal rejection
        statuses). Raises ``Fallback`` like ``filter_nodes``."""


def is_resource_fit(batch: object) -> TypeGuard[BatchResourceFit]:
    return class_satisfies(type(batch), BatchResourceFit)


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def batch_filter(self) -> BatchFilter | None:
        """The plugin's Filter over all nodes at once, or ``None`` when its configuration has
        none."""


class BatchScore(Protocol):
    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeColumns, positions: IntArray
    ) -> IntArray:
        """``score`` then NormalizeScore for the nodes at ``positions``, after PreScore ran.
        Raises ``Fallback`` when the attempt is outside what the arithmetic models."""


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def batch_score(self) -> BatchScore | None:
        """The plugin's Score over many nodes at once, or ``None`` when its configuration has
        none."""


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class ExplainingPlugin(Plugin, Protocol):
    """A plugin that knows something about a pod beyond one attempt's node verdicts (where a
    gang member's group stands), for decision records. Not an extension point: the scheduler
    asks only when a record is read."""

    def explain_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        """JSON-ready facts about ``pod`` as the plugin sees it now, with a one-line ``summary``
        among them; ``None`` when the plugin has nothing to say about this pod. ``pod`` has
        its node when the attempt bound it."""


@runtime_checkable
class GangPlanningPlugin(Plugin, Protocol):
    """A plugin whose filter depends on what other pods hold beyond what a node's pods show (the
    devices of their claims), for gang preemption's plan. Not an extension point: the planner
    calls it whenever it places a member on a node, so that the members placed after it see
    what that member will take there."""

    def planned_on(
        self,
        placed_state: CycleState,
        placed: Pod,
        node_name: str,
        later_states: Sequence[CycleState],
    ) -> None:
        """``placed`` goes to ``node_name`` in the plan (its filters passed there with
        ``placed_state``): make each of ``later_states`` count what it will take there."""


EXTENSION_POINTS: dict[str, Any] = {
    "queueSort": QueueSortPlugin,
    "preEnqueue": PreEnqueuePlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
"""Config names of the extension points (as in KubeSchedulerConfiguration) and their Protocols."""
