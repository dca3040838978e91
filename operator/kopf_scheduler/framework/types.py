"""Results that flow between extension points: node statuses, diagnosis, FitError, nominations."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.pod import Pod

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


class NodeToStatus:
    """Per-node filter statuses, plus the status every node *not* listed has (UaU by default)."""

    __slots__ = ("_statuses", "absent")

    def __init__(
        self, statuses: dict[str, Status] | None = None, absent: Status | None = None
    ) -> None:
        self._statuses: dict[str, Status] = statuses if statuses is not None else {}
        self.absent: Status = (
            absent if absent is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        )

    def set(self, node: str, status: Status) -> None:
        self._statuses[node] = status

    def get(self, node: str) -> Status:
        return self._statuses.get(node, self.absent)

    def explicit(self) -> dict[str, Status]:
        return self._statuses

    def __len__(self) -> int:
        return len(self._statuses)

    def __iter__(self) -> Iterator[tuple[str, Status]]:
        return iter(self._statuses.items())

    def nodes_with_code(self, node_names: Iterable[str], code: Code) -> list[str]:
        """Nodes (in ``node_names`` order) whose status, explicit or absent, has ``code``.

        When the unlisted nodes' status has another code, only listed nodes can match: those are
        found among the statuses first, and ``node_names`` is not walked at all when there are
        none (a pod too large for every node asks this of thousands of nodes at each attempt).
        """
        statuses = self._statuses
        absent_matches = self.absent.code == code
        if not absent_matches:
            matching = {name for name, status in statuses.items() if status.code == code}
            return [name for name in node_names if name in matching] if matching else []
        result = []
        for name in node_names:
            status = statuses.get(name)
            if status is None or status.code == code:
                result.append(name)
        return result


@dataclass
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


def _histogram(diagnosis: Diagnosis, num_all_nodes: int) -> list[str]:
    counts: dict[str, int] = {}
    statuses = diagnosis.node_to_status
    for _, status in statuses:
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent_count = num_all_nodes - len(statuses)
    if absent_count > 0:
        for reason in statuses.absent.reasons:
            counts[reason] = counts.get(reason, 0) + absent_count
    return sorted(f"{count} {reason}" for reason, count in counts.items())


class FitError(Exception):
    """No node fits the pod. The message follows kube-scheduler's format exactly."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        message = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        diagnosis = self.diagnosis
        if diagnosis.pre_filter_msg:
            message += f" {diagnosis.pre_filter_msg}."
        else:
            histogram = _histogram(diagnosis, self.num_all_nodes)
            if histogram:
                message += " " + ", ".join(histogram) + "."
        if diagnosis.post_filter_msg:
            message += " " + diagnosis.post_filter_msg
        return message


class NominatingMode(Enum):
    NOOP = 0
    OVERRIDE = 1


@dataclass(frozen=True)
class NominatingInfo:
    """How a failed attempt changes the pod's nominated node: keep it (NOOP) or set it."""

    nominated_node_name: str = ""
    mode: NominatingMode = NominatingMode.NOOP

    @classmethod
    def override(cls, node_name: str) -> NominatingInfo:
        return cls(node_name, NominatingMode.OVERRIDE)

    @classmethod
    def clear(cls) -> NominatingInfo:
        return cls("", NominatingMode.OVERRIDE)


@dataclass(frozen=True)
class PreFilterResult:
    """Node names a PreFilter plugin restricts the cycle to; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True)
class PostFilterResult:
    nominating_info: NominatingInfo | None = None


@dataclass
class NodePluginScores:
    """One node's per-plugin weighted scores and their total."""

    name: str
    scores: dict[str, int] = field(default_factory=dict)
    total: int = 0


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    node_scores: list[NodePluginScores] = field(default_factory=list)


@dataclass(eq=False)
class QueuedPodInfo:
    """A pending pod with its queueing history (kept across attempts)."""

    pod: Pod
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    gated: bool = False
    backoff_expiration: float | None = None
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    sequence: int = 0
    """Arrival order among pods with the same timestamp (keeps sorting stable on a fake clock)."""

    @property
    def key(self) -> str:
        return self.pod.key

    @property
    def uid(self) -> str:
        return self.pod.uid

    def rejector_plugins(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins
