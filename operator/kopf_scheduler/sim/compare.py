"""One scenario under two scheduler configurations: what a configuration change would change.

Both runs start from the same objects with the same seed, so every difference comes from the
configurations: pods that land elsewhere or not at all, pods evicted under one only, and, for
pods bound under both, how each plugin scored the nodes chosen under either. A change of decisions
(placement, pending, eviction) is what makes ``simulate --compare-config`` exit non-zero, so a
CI job can guard a configuration change; score differences alone are reported, not failed.
Each run's node utilisation (as ``simulate`` reports it) comes along, to compare how full the
nodes end up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import Scenario


@dataclass(frozen=True)
class Comparison:
    names: tuple[str, str]
    """How the two configurations are called in the answer (their file names)."""
    report: dict[str, Any]

    @property
    def changed(self) -> bool:
        return bool(self.report["changed"])


async def run_both(
    configs: tuple[SchedulerConfig, SchedulerConfig], scenario: Scenario, *, seed: int = 0
) -> tuple[SimulationResult, SimulationResult]:
    """The scenario simulated under each configuration (on the simulation loop)."""
    first = await Simulation(configs[0], seed=seed).run(scenario)
    second = await Simulation(configs[1], seed=seed).run(scenario)
    return first, second


def _scheduled_scores(
    attempts: list[AttemptRecord],
) -> dict[str, tuple[str, dict[str, dict[str, int]]]]:
    """Each bound pod's node and the per-plugin scores of every scored node, from its last
    scheduled attempt."""
    chosen: dict[str, tuple[str, dict[str, dict[str, int]]]] = {}
    for record in attempts:
        if record.result != "scheduled" or not record.node:
            continue
        scores = {
            verdict.node: dict(verdict.scores) for verdict in record.nodes if verdict.feasible
        }
        chosen[record.pod] = (record.node, scores)
    return chosen


def _outcome(pod: Mapping[str, Any]) -> dict[str, Any]:
    return {"status": pod["status"], "node": pod["node"]}


def compare(
    names: tuple[str, str], results: tuple[SimulationResult, SimulationResult]
) -> Comparison:
    reports = [build_report(result) for result in results]
    pods = [{f"{p['namespace']}/{p['name']}": p for p in report["pods"]} for report in reports]
    moved = []
    for key in sorted(set(pods[0]) | set(pods[1])):
        first, second = pods[0].get(key), pods[1].get(key)
        a = _outcome(first) if first else None
        b = _outcome(second) if second else None
        if a != b:
            moved.append({"pod": key, "a": a, "b": b})
    evicted = [
        {key for key, pod in by_key.items() if pod["status"] == "Preempted"} for by_key in pods
    ]
    chosen = [_scheduled_scores(result.attempts) for result in results]
    score_differences = []
    for key in sorted(set(chosen[0]) & set(chosen[1])):
        (node_a, scores_a), (node_b, scores_b) = chosen[0][key], chosen[1][key]
        nodes: dict[str, dict[str, dict[str, int | None]]] = {}
        for node in dict.fromkeys((node_a, node_b)):
            a, b = scores_a.get(node, {}), scores_b.get(node, {})
            plugins = {
                plugin: {"a": a.get(plugin), "b": b.get(plugin)}
                for plugin in sorted(set(a) | set(b))
                if a.get(plugin) != b.get(plugin)
            }
            if plugins:
                nodes[node] = plugins
        if nodes:
            score_differences.append({"pod": key, "nodeA": node_a, "nodeB": node_b, "nodes": nodes})
    only_a = sorted(evicted[0] - evicted[1])
    only_b = sorted(evicted[1] - evicted[0])
    report = {
        "configs": {"a": names[0], "b": names[1]},
        "changed": bool(moved or only_a or only_b),
        "moved": moved,
        "evictedOnlyUnder": {"a": only_a, "b": only_b},
        "scoreDifferences": score_differences,
        "summary": {"a": reports[0]["summary"], "b": reports[1]["summary"]},
        "utilisation": {"a": reports[0]["utilisation"], "b": reports[1]["utilisation"]},
    }
    return Comparison(names, report)


def render_comparison_json(comparison: Comparison) -> str:
    return json.dumps(comparison.report, indent=2)


def _place(outcome: Mapping[str, Any] | None) -> str:
    if outcome is None:
        return "-"
    return f"{outcome['status']} {outcome['node']}" if outcome["node"] else outcome["status"]


def render_comparison_table(comparison: Comparison) -> str:
    report = comparison.report
    a, b = comparison.names
    lines = [f"A: {a}", f"B: {b}", ""]
    if report["moved"]:
        lines.append("DECISIONS THAT DIFFER")
        rows = [(m["pod"], _place(m["a"]), _place(m["b"])) for m in report["moved"]]
        widths = [max(len(r[i]) for r in [("POD", "A", "B"), *rows]) for i in range(3)]
        for row in [("POD", "A", "B"), *rows]:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    else:
        lines.append("DECISIONS THAT DIFFER  (none)")
    for side, label in (("a", "A"), ("b", "B")):
        evicted = report["evictedOnlyUnder"][side]
        if evicted:
            lines.append(f"EVICTED ONLY UNDER {label}: {', '.join(evicted)}")
    lines.append("")
    if report["scoreDifferences"]:
        lines.append("SCORES THAT DIFFER, ON THE NODES CHOSEN UNDER A AND B (plugin: A -> B)")
        for entry in report["scoreDifferences"]:
            lines.append(f"  {entry['pod']} (A: {entry['nodeA']}, B: {entry['nodeB']})")
            for node, plugins in entry["nodes"].items():
                scores = ", ".join(
                    f"{plugin} {_score(values['a'])} -> {_score(values['b'])}"
                    for plugin, values in plugins.items()
                )
                lines.append(f"    {node}: {scores}")
    else:
        lines.append("SCORES THAT DIFFER  (none)")
    lines.append("")
    for side, label in (("a", "A"), ("b", "B")):
        summary = report["summary"][side]
        lines.append(
            f"SUMMARY {label}  bound={summary['bound']} pending={summary['pending']} "
            f"preempted={summary['preempted']}"
        )
    lines.append("changed" if report["changed"] else "unchanged")
    return "\n".join(lines) + "\n"


def _score(value: int | None) -> str:
    return "-" if value is None else str(value)
