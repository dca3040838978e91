"""Small configurable plugins for framework and algorithm tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import NodeScore
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import PreFilterResult
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.priority_sort import PrioritySort


class FilterByName:
    """Rejects the nodes listed in ``rejections`` with the given code and reason."""

    def __init__(self, name: str, rejections: dict[str, tuple[Code, str]]) -> None:
        self.name = name  # type: ignore[misc]
        self.rejections = rejections
        self.calls: list[str] = []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        self.calls.append(node_info.name)
        if node_info.name in self.rejections:
            code, reason = self.rejections[node_info.name]
            return Status(code, reason)
        return SUCCESS


class MaxPods:
    """Admits a node only while it holds fewer than ``limit`` pods (sees nominated pods)."""

    name: ClassVar[str] = "MaxPods"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if len(node_info.pods) >= self.limit:
            return Status(Code.UNSCHEDULABLE, "Too many pods")
        return SUCCESS


class ScoreByTable:
    def __init__(
        self,
        name: str,
        table: dict[str, int],
        normalize: Callable[[list[NodeScore]], None] | None = None,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.table = table
        self._normalize = normalize

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        return self.table.get(node_info.name, 0), SUCCESS

    def score_extensions(self) -> ScoreByTable | None:
        return self if self._normalize is not None else None

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        assert self._normalize is not None
        self._normalize(scores)
        return SUCCESS


class PreFilterFixed:
    def __init__(
        self, name: str, status: Status = SUCCESS, nodes: frozenset[str] | None = None
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.status = status
        self.nodes = nodes

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        return PreFilterResult(self.nodes), self.status

    def pre_filter_extensions(self) -> None:
        return None


def framework(
    *,
    filters: list[object] = (),  # type: ignore[assignment]
    scores: list[tuple[object, int]] = (),  # type: ignore[assignment]
    pre_filters: list[object] = (),  # type: ignore[assignment]
    handle: Handle | None = None,
    name: str = "test-scheduler",
) -> Framework:
    plugins = ProfilePlugins(queue_sort=PrioritySort())
    plugins.filter = list(filters)  # type: ignore[arg-type]
    plugins.score = list(scores)  # type: ignore[arg-type]
    plugins.pre_filter = list(pre_filters)  # type: ignore[arg-type]
    plugins.all = [*filters, *(p for p, _ in scores), *pre_filters]  # type: ignore[list-item]
    return Framework(name, plugins, handle or Handle(scheduler_name=name))
