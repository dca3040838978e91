"""Where the scheduler's memory goes: its live objects after a scenario, by what they hold.

RSS says how much; this says what for. After an in-process scenario has bound every pod, the
objects reachable from the scheduler are walked once, category by category, each object counted
in the first category that reaches it:

- the pods' API objects as received (the JSON trees every ``Pod`` keeps for status patches,
  explanations and the what-if snapshot), then the parsed ``Pod`` models;
- the nodes' API objects, then the parsed nodes with their ``NodeInfo`` aggregates;
- the snapshot the cycles read, the vectorised columns of the fast path, the queue;
- everything else the scheduler holds.

Sizes are ``sys.getsizeof`` of each object (numpy arrays by the bytes they own), so they leave
out the allocator's own overhead and fragmentation: their sum is below RSS, and the gap is
reported too. The in-memory cluster's own copies are not the scheduler's and are not walked.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterable
from typing import Any

import numpy as np

from bench.inprocess import rss_mb, run_with_simulation
from bench.scenarios import Scenario
from kopf_scheduler.sim.runner import Simulation

_NOT_DATA = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.FrameType,
    types.MethodType,
)


def _size(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return sys.getsizeof(obj) if obj.base is None else sys.getsizeof(obj) - obj.nbytes
    return sys.getsizeof(obj)


def _walk(roots: Iterable[Any], seen: set[int], excluded: set[int]) -> tuple[int, int]:
    """Bytes and objects reachable from ``roots`` and not yet in ``seen`` (which grows)."""
    total = count = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        ident = id(obj)
        if ident in seen or ident in excluded or isinstance(obj, _NOT_DATA):
            continue
        seen.add(ident)
        total += _size(obj)
        count += 1
        stack.extend(gc.get_referents(obj))
    return total, count


def breakdown(sim: Simulation) -> list[dict[str, Any]]:
    """The scheduler's live objects by category, largest categories first in the report."""
    scheduler, store = sim.scheduler, sim.store
    assert scheduler is not None
    pods = list(store.pods.values())
    infos = list(scheduler.cache.node_infos())
    categories: list[tuple[str, list[Any]]] = [
        ("pods: API objects as received", [pod.raw for pod in pods]),
        ("pods: parsed models", pods),
        ("nodes: API objects as received", [info.node.raw for info in infos if info.node]),
        ("nodes: parsed models and NodeInfo", infos),
        ("snapshot", [scheduler.snapshot]),
        ("fast path columns", [scheduler.algorithm]),
        ("queue", [scheduler.queue]),
        ("the rest of the scheduler", [scheduler, sim.handlers, store]),
    ]
    # The simulated API server's own objects are not the scheduler's memory.
    excluded = {id(sim.cluster), id(sim.cluster.pods), id(sim)}
    seen: set[int] = set()
    rows = []
    for name, roots in categories:
        size, objects = _walk(roots, seen, excluded)
        rows.append(
            {
                "category": name,
                "bytes": size,
                "mib": round(size / 2**20, 1),
                "objects": objects,
                "bytes_per_pod": round(size / len(pods)) if pods else None,
                "bytes_per_node": round(size / len(infos)) if infos else None,
            }
        )
    return rows


def run(scenario: Scenario) -> dict[str, Any]:
    """Run ``scenario`` in process and break down what the scheduler holds at the end."""
    holder: dict[str, Any] = {"start_rss_mb": rss_mb()}

    def inspect(sim: Simulation) -> None:
        holder["rows"] = breakdown(sim)
        holder["rss_mb"] = rss_mb()

    result = run_with_simulation(scenario, inspect)
    rows = holder["rows"]
    return {
        "scenario": scenario.as_dict(),
        "pods": result["measured_pods"],
        "start_rss_mb": holder["start_rss_mb"],
        "rss_mb": holder["rss_mb"],
        "peak_rss_mb": result["peak_rss_mb"],
        "counted_mib": round(sum(row["mib"] for row in rows), 1),
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    """A Markdown table of :func:`run`'s result."""
    lines = [
        f"{result['scenario']['label']}: {result['scenario']['shape']}. RSS "
        f"{result['start_rss_mb']} MiB with the interpreter and libraries loaded, "
        f"{result['rss_mb']} MiB at the end (peak {result['peak_rss_mb']}); the scheduler's "
        f"objects counted here: {result['counted_mib']} MiB (the rest of the growth is the "
        "simulated API server's copies and the allocator's overhead).",
        "",
        "| what | MiB | objects | bytes per pod | bytes per node |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['category']} | {row['mib']} | {row['objects']} | "
            f"{row['bytes_per_pod']} | {row['bytes_per_node']} |"
        )
    return "\n".join(lines)
