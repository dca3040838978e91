"""Decision records: why a pod went where it went, or why it went nowhere.

Upstream aggregates per-node reasons into one histogram line; we keep, per attempt, each node's
rejecting plugin and reason or its per-plugin scores, the chosen node, and the preemption record.
The simulator prints these; the operator stores the latest one on the pod (size-bounded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.framework.types import Diagnosis, NodePluginScores


@dataclass
class NodeVerdict:
    node: str
    feasible: bool
    plugin: str = ""
    code: str = ""
    reasons: tuple[str, ...] = ()
    scores: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def as_dict(self) -> dict[str, Any]:
        if self.feasible:
            return {
                "node": self.node,
                "feasible": True,
                "scores": dict(self.scores),
                "total": self.total,
            }
        return {
            "node": self.node,
            "feasible": False,
            "plugin": self.plugin,
            "code": self.code,
            "reasons": list(self.reasons),
        }


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
    nodes: list[NodeVerdict] = field(default_factory=list)
    unlisted_status: str = ""
    """The reason every node *not* listed in ``nodes`` shares (PreFilter rejection, or the
    nodes left unexamined once enough feasible ones were found)."""
    preemption: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "pod": self.pod,
            "profile": self.profile,
            "cycle": self.cycle,
            "attempt": self.attempt,
            "result": self.result,
            "node": self.node or None,
            "message": self.message,
            "numAllNodes": self.num_all_nodes,
            "nodes": [n.as_dict() for n in self.nodes],
        }
        if self.unlisted_status:
            result["unlistedNodes"] = self.unlisted_status
        if self.preemption is not None:
            result["preemption"] = self.preemption
        return result


def verdicts(
    diagnosis: Diagnosis | None, feasible: list[str], scores: list[NodePluginScores]
) -> list[NodeVerdict]:
    """Per-node verdicts from an attempt's diagnosis and scores, rejected nodes first."""
    result: list[NodeVerdict] = []
    if diagnosis is not None:
        for node, status in diagnosis.node_to_status:
            result.append(
                NodeVerdict(node, False, status.plugin, status.code.label, status.reasons)
            )
    by_name = {s.name: s for s in scores}
    for node in feasible:
        score = by_name.get(node)
        if score is None:
            result.append(NodeVerdict(node, True))
        else:
            result.append(NodeVerdict(node, True, scores=dict(score.scores), total=score.total))
    return result
