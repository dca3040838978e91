"""The node × plugin matrix of a capacity count: what each plugin did on each node, summed.

Every copy that ``capacity`` tries is one or more scheduling attempts, and each attempt leaves a
verdict per node it examined: the plugin that filtered the node out and why, or each scoring
plugin's score. Summed over the copies of one template, they show where the room ran out and
which plugin saw it first — the picture the HTML report draws. The verdicts of the copy that
stopped the count are kept apart: they are the answer to "why not one more", node by node.

Nodes an attempt did not examine (a PreFilter rejection, or the nodes left out once enough
feasible ones were found) have no verdict; their shared reason is counted on its own. Each row
also keeps the node's utilisation (sim/utilisation.py) before the first copy and after the last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict
from kopf_scheduler.sim.utilisation import Utilisation


@dataclass
class PluginCell:
    """One plugin on one node, over every attempt of a template's copies."""

    filtered: int = 0
    """Attempts in which this plugin filtered the node out."""
    reasons: Counter[str] = field(default_factory=Counter)
    score_sum: int = 0
    scored: int = 0
    """Attempts in which this plugin scored the node (its mean is ``score_sum / scored``)."""

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None


@dataclass
class NodeRow:
    node: str
    examined: int = 0
    """Attempts that gave this node a verdict."""
    feasible: int = 0
    """Attempts in which the node passed every filter."""
    cells: dict[str, PluginCell] = field(default_factory=dict)
    """By plugin name; only plugins that filtered or scored this node."""
    last_verdict: NodeVerdict | None = None
    """The node's verdict in the last attempt of the copy that stopped the count."""
    before: Utilisation | None = None
    after: Utilisation | None = None

    def cell(self, plugin: str) -> PluginCell:
        return self.cells.setdefault(plugin, PluginCell())


@dataclass
class NodeMatrix:
    """One template's matrix: a row per node of the cluster, in the cluster's order."""

    rows: dict[str, NodeRow]
    attempts: int = 0
    unexamined: Counter[str] = field(default_factory=Counter)
    """The shared reason of nodes an attempt did not examine, with their number summed."""

    @classmethod
    def for_nodes(cls, nodes: Iterable[str]) -> NodeMatrix:
        return cls({name: NodeRow(name) for name in nodes})

    @property
    def plugins(self) -> list[str]:
        """Every plugin that filtered or scored some node, in first-seen order."""
        seen: dict[str, None] = {}
        for row in self.rows.values():
            seen.update(dict.fromkeys(row.cells))
        return list(seen)

    def add_attempt(self, record: AttemptRecord, *, last: bool = False) -> None:
        """Sum up one attempt's verdicts; ``last`` marks the attempt that stopped the count."""
        self.attempts += 1
        verdicts = record.nodes
        for verdict in verdicts:
            row = self.rows.get(verdict.node)
            if row is None:
                continue
            row.examined += 1
            if last:
                row.last_verdict = verdict
            if not verdict.feasible:
                cell = row.cell(verdict.plugin)
                cell.filtered += 1
                cell.reasons.update(verdict.reasons)
                continue
            row.feasible += 1
            for plugin, score in verdict.scores.items():
                cell = row.cell(plugin)
                cell.score_sum += score
                cell.scored += 1
        if record.unlisted_status and record.num_all_nodes > len(verdicts):
            self.unexamined[record.unlisted_status] += record.num_all_nodes - len(verdicts)
