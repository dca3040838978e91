"""Decision records: why a pod went where it went, or why it went nowhere.

Upstream aggregates per-node reasons into one histogram line; we keep, per attempt, each node's
rejecting plugin and reason or its per-plugin scores, the chosen node, and the preemption record.
Plugins that know more about the pod than one attempt shows (a gang member's group) add their
own facts (:class:`~kopf_scheduler.framework.interfaces.ExplainingPlugin`). The simulator prints
these; the operator stores the latest one on the pod (size-bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from kopf_scheduler.framework.interfaces import ExplainingPlugin
from kopf_scheduler.framework.status import Status
from kopf_scheduler.framework.types import Diagnosis, NodePluginScores
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import PodStatusPatch

T = TypeVar("T")


@dataclass
class NodeVerdict:
    node: str
    feasible: bool
    plugin: str = ""
    code: str = ""
    reasons: tuple[str, ...] = ()
    scores: dict[str, int] = field(default_factory=dict)
    total: int = 0
    detail: str = ""
    """A rejecting plugin's explanation beyond its reasons (see :meth:`Status.detail`)."""

    def as_dict(self) -> dict[str, Any]:
        if self.feasible:
            return {
                "node": self.node,
                "feasible": True,
                "scores": dict(self.scores),
                "total": self.total,
            }
        rejected: dict[str, Any] = {
            "node": self.node,
            "feasible": False,
            "plugin": self.plugin,
            "code": self.code,
            "reasons": list(self.reasons),
        }
        if self.detail:
            rejected["detail"] = self.detail
        return rejected


class Deferred(Generic[T]):
    """A dataclass field that may be assigned a function producing its value.

    The function runs on first read and its result replaces it, so building a large value
    (one verdict per node) costs nothing for records that nobody reads.
    """

    def __init__(self, default: Callable[[], T]) -> None:
        self._default = default
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = "_deferred_" + name

    @overload
    def __get__(self, instance: None, owner: type) -> tuple[()]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> T: ...

    def __get__(self, instance: object | None, owner: type) -> T | tuple[()]:
        if instance is None:
            return ()
        value = instance.__dict__[self._slot]
        if callable(value):
            value = value()
            instance.__dict__[self._slot] = value
        return value  # type: ignore[no-any-return]

    def __set__(self, instance: object, value: T | Callable[[], T] | tuple[()]) -> None:
        instance.__dict__[self._slot] = self._default() if value == () else value


@dataclass
class AttemptRecord:
    """One scheduling attempt of one pod."""

    pod: str
    profile: str
    cycle: int
    attempt: int
    time: float
    result: str
    """``scheduled``, ``unschedulable`` or ``error`` (as the schedule_attempts_total label)."""
    node: str = ""
    message: str = ""
    num_all_nodes: int = 0
    nodes: Deferred[Sequence[NodeVerdict]] = Deferred(list)
    """May be assigned a function that builds the list (it runs on first read)."""
    unlisted_status: str = ""
    """The reason every node *not* listed in ``nodes`` shares (PreFilter rejection, or the
    nodes left unexamined once enough feasible ones were found)."""
    preemption: Deferred[dict[str, Any] | None] = Deferred(lambda: None)
    """May be assigned a function that builds the dict (it runs on first read)."""
    plugin_states: Deferred[Mapping[str, Mapping[str, Any]]] = Deferred(dict)
    """What plugins know about the pod beyond this attempt, by plugin name (see
    :func:`plugin_states`). May be assigned a function: the plugins are asked on first read,
    and answer with what they know then."""
    status_patch: PodStatusPatch | None = None
    """The status patch a failed attempt is about to send, if any: a copy of the record stored
    on the pod may be added to its annotations instead of being written on its own."""

    def as_dict(self, *, with_nodes: bool = True) -> dict[str, Any]:
        """The record as JSON-ready data; without ``nodes`` when ``with_nodes`` is false."""
        result: dict[str, Any] = {
            "pod": self.pod,
            "profile": self.profile,
            "cycle": self.cycle,
            "attempt": self.attempt,
            "result": self.result,
            "node": self.node or None,
            "message": self.message,
            "numAllNodes": self.num_all_nodes,
        }
        if with_nodes:
            result["nodes"] = [n.as_dict() for n in self.nodes]
        if self.unlisted_status:
            result["unlistedNodes"] = self.unlisted_status
        if self.preemption is not None:
            result["preemption"] = self.preemption
        if self.plugin_states:
            result["plugins"] = {name: dict(state) for name, state in self.plugin_states.items()}
        return result


def plugin_states(plugins: Iterable[ExplainingPlugin], pod: Pod) -> dict[str, Mapping[str, Any]]:
    """What each of ``plugins`` says about ``pod``, by name."""
    states: dict[str, Mapping[str, Any]] = {}
    for plugin in plugins:
        state = plugin.explain_pod(pod)
        if state is not None:
            states[plugin.name] = state
    return states


class NodeVerdicts(Sequence[NodeVerdict]):
    """The per-node verdicts of one attempt, rejected nodes first, each built when first read.

    A failed attempt on thousands of nodes has a verdict per node, but the annotation keeps only
    the ones that fit its byte budget (a few hundred); building the rest would cost more than the
    scheduling cycle itself. Length and order are known up front, so readers that take every
    verdict (the simulator's report, ``explain``) see a complete list.
    """

    __slots__ = ("_built", "_feasible", "_rejected", "_scores", "_scores_by_name")

    def __init__(
        self,
        rejected: list[tuple[str, Status]],
        feasible: list[str],
        scores: list[NodePluginScores],
    ) -> None:
        self._rejected = rejected
        self._feasible = feasible
        self._scores = scores
        self._scores_by_name: dict[str, NodePluginScores] | None = None
        self._built: list[NodeVerdict | None] = [None] * (len(rejected) + len(feasible))

    def __len__(self) -> int:
        return len(self._built)

    @overload
    def __getitem__(self, index: int) -> NodeVerdict: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeVerdict]: ...

    def __getitem__(self, index: int | slice) -> NodeVerdict | list[NodeVerdict]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._built)))]
        verdict = self._built[index]
        if verdict is None:
            verdict = self._build(index if index >= 0 else index + len(self._built))
            self._built[index] = verdict
        return verdict

    def __iter__(self) -> Iterator[NodeVerdict]:
        # Sequence's own iteration calls __getitem__ (and its overload dispatch) per verdict.
        built = self._built
        for index, verdict in enumerate(built):
            if verdict is not None:
                yield verdict
            else:
                built[index] = fresh = self._build(index)
                yield fresh

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _build(self, index: int) -> NodeVerdict:
        if index < len(self._rejected):
            node, status = self._rejected[index]
            return NodeVerdict(
                node,
                False,
                status.plugin,
                status.code.label,
                status.reasons,
                detail=status.detail(),
            )
        node = self._feasible[index - len(self._rejected)]
        if self._scores_by_name is None:
            self._scores_by_name = {s.name: s for s in self._scores}
        score = self._scores_by_name.get(node)
        if score is None:
            return NodeVerdict(node, True)
        return NodeVerdict(node, True, scores=dict(score.scores), total=score.total)


def verdicts(
    diagnosis: Diagnosis | None, feasible: list[str], scores: list[NodePluginScores]
) -> NodeVerdicts:
    """Per-node verdicts from an attempt's diagnosis and scores, rejected nodes first."""
    rejected = list(diagnosis.node_to_status) if diagnosis is not None else []
    return NodeVerdicts(rejected, feasible, scores)
