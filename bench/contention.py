"""``python -m bench contention``: both schedulers beside a busy neighbour, and without one.

A control-plane node is rarely quiet: the API server, etcd and the controllers spike together
with the pods a scheduler must place, and a single-threaded Python process loses its share of a
CPU to every other runnable thread. This benchmark puts a number on it. Each round runs the
end-to-end pair (:func:`bench.e2e.run_pair`, both schedulers on identical states) twice on one
local cluster: once quiet, once with a fixed load, and the rounds alternate which scheduler goes
first. The report gives each scheduler's degradation, loaded over quiet, for throughput,
create→bound p50/p99 and the stages each scheduler measures (attempt duration and, for
kopf-scheduler, watch delivery, the wait before the first attempt and the binding request), so
that the cost shows where it arises.

The load is :class:`bench.neighbours.BusyNeighbours`: ``N`` processes that each spin a
pure-Python loop at the default priority, one runnable thread each. They start once the control
plane has settled, just before the scheduler under test starts, and stop when its run ends, so
they weigh on the scheduler's start, its cache sync, the creation of the pods and every decision,
as a neighbour would; their CPU time is recorded with the run (``contention``).

The neighbours slow the pod creator and the API server as much as the scheduler: created as fast
as they are taken, the pods of a loaded run arrive at about half the quiet rate on two CPUs, and
fewer arrivals a second mean shorter queues, so create→bound can fall under load and the
comparison says nothing. ``--rate`` creates the pods at one fixed pace in every run (item ``i``
posted ``i / rate`` seconds after the first); pick it below what the creator keeps up loaded
(the report's "created, pods/s" row shows what each run achieved), and the quiet and loaded runs
see the same arrivals, so their difference is the scheduler's.

The first run on a new cluster is not like the others: at full size (5,000 kwok nodes) it cost
kwok half as much CPU again as any later quiet run (38 s against 20–26 s) and its create→bound
p50 or p99 was five to ten times the same scheduler's in later quiet runs (two full runs: p50
1297 ms against 137–198, p99 2128 ms against 429–435), although every node was Ready, every
node Lease was there and renewed, and the control plane's CPU had stopped falling. Nothing the
settling wait can read tells that one-off cost apart from the steady load of 5,000 nodes, so a
warm-up takes it: the first run of round 1 is made once before the rounds, on the same cluster,
and kept apart from them (``warm_up``; ``--no-warm-up`` skips it).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.cluster import start_bench_cluster
from bench.config import SCHEDULERS
from bench.e2e import run_pair
from bench.scenarios import scenario
from bench.stats import figure

QUIET, LOADED = "quiet", "loaded"

FIGURES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("created, pods/s", ("creation", "per_second"), True),
    ("throughput, pods/s", ("throughput", "average"), True),
    ("create→bound p50, ms", ("create_to_bound_ms", "p50"), False),
    ("create→bound p99, ms", ("create_to_bound_ms", "p99"), False),
    ("attempt p50, s", ("scheduler_metrics", "attempt_duration_scheduled_s", "p50"), False),
    ("attempt p99, s", ("scheduler_metrics", "attempt_duration_scheduled_s", "p99"), False),
    ("watch delivery p99, s", ("scheduler_metrics", "watch_delivery_lag_s", "p99"), False),
    (
        "queued before 1st attempt p99, s",
        ("scheduler_metrics", "queued_before_first_attempt_s", "p99"),
        False,
    ),
    ("binding request p50, s", ("scheduler_metrics", "binding_request_duration_s", "p50"), False),
    ("binding request p99, s", ("scheduler_metrics", "binding_request_duration_s", "p99"), False),
    ("event loop lag p50, s", ("scheduler_metrics", "event_loop_lag_s", "p50"), False),
    ("event loop lag p99, s", ("scheduler_metrics", "event_loop_lag_s", "p99"), False),
)
"""The figures compared: label, where it is in a run's result, whether more is better."""


def round_plan(rounds: int, schedulers: Sequence[str]) -> list[tuple[tuple[str, ...], ...]]:
    """Each round: its runs, quiet and loaded, and in each the schedulers in order. Odd rounds go
    quiet first with the schedulers as given, even ones loaded first with them reversed, so that
    neither a scheduler nor a mode always runs on a cluster the other has just warmed."""
    plan = []
    for number in range(rounds):
        forward = number % 2 == 0
        order = tuple(schedulers) if forward else tuple(reversed(schedulers))
        modes = (QUIET, LOADED) if forward else (LOADED, QUIET)
        plan.append(tuple((mode, *order) for mode in modes))
    return plan


def run_rounds(
    spec: str,
    processes: int,
    rounds: int,
    qps: float,
    burst: int,
    keep_cluster: bool = False,
    creation_rate: float | None = None,
    warm_up: bool = True,
) -> dict[str, Any]:
    """``rounds`` rounds of ``spec`` end to end, each pair once quiet and once beside
    ``processes`` busy neighbours, on one benchmark cluster; with ``creation_rate``, the pods
    arrive at that pace in every run; with ``warm_up``, round 1's first run is made once more
    before the rounds and not counted (see the module's docstring)."""
    chosen = scenario(spec)
    cluster = start_bench_cluster()
    work = Path(tempfile.mkdtemp(prefix="bench-contention-"))
    plan = round_plan(rounds, SCHEDULERS)
    result: dict[str, Any] = {
        "scenario": chosen.label,
        "qps": f"{qps:g}/{burst}",
        "processes": processes,
        "creation_rate": creation_rate,
        "warm_up": None,
        "rounds": [],
    }

    def pair(mode: str, order: Sequence[str]) -> dict[str, Any]:
        return asyncio.run(
            run_pair(
                cluster,
                chosen,
                qps,
                burst,
                work,
                tuple(order),
                neighbours=processes if mode == LOADED else 0,
                creation_rate=creation_rate,
            )
        )

    try:
        if warm_up:
            mode, first, *_ = plan[0][0]
            result["warm_up"] = pair(mode, (first,))
        for runs in plan:
            result["rounds"].append({mode: pair(mode, order) for mode, *order in runs})
    finally:
        if not keep_cluster:
            cluster.down()
    return result


def degradations(rounds: Sequence[Mapping[str, Any]], scheduler: str) -> dict[str, list[float]]:
    """Per figure, loaded over quiet for ``scheduler`` in each round that has both (for
    throughput, quiet over loaded, so that above 1 is worse for every figure)."""
    found: dict[str, list[float]] = {}
    for one in rounds:
        quiet = (one.get(QUIET) or {}).get("runs", {}).get(scheduler) or {}
        loaded = (one.get(LOADED) or {}).get("runs", {}).get(scheduler) or {}
        for label, path, more_is_better in FIGURES:
            before, after = figure(quiet, path), figure(loaded, path)
            if not before or not after:
                continue
            ratio = before / after if more_is_better else after / before
            found.setdefault(label, []).append(round(ratio, 2))
    return found


def loaded_ratios(rounds: Sequence[Mapping[str, Any]], ours: str, theirs: str) -> list[float]:
    """kopf-scheduler's loaded create→bound p99 over kube-scheduler's, round by round."""
    ratios = []
    for one in rounds:
        runs = (one.get(LOADED) or {}).get("runs", {})
        path = ("create_to_bound_ms", "p99")
        mine, other = figure(runs.get(ours) or {}, path), figure(runs.get(theirs) or {}, path)
        if mine and other:
            ratios.append(round(mine / other, 2))
    return ratios


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "–"
    middle = statistics.median(values)
    return f"{middle:.2f} ({min(values):.2f}–{max(values):.2f})"


def render(result: Mapping[str, Any], ours: str = "kopf", theirs: str = "upstream") -> str:
    """The rounds and the degradations as Markdown, for the terminal and docs/benchmarks.md."""
    rounds = result.get("rounds") or []
    rate = result.get("creation_rate")
    arrival = f"pods created at {rate:g}/s" if rate else "pods created as fast as they are taken"
    lines = [
        f"{result.get('scenario', '?')} at qps {result.get('qps', '?')}, "
        f"{result.get('processes', 0)} busy process(es), {arrival}, {len(rounds)} round(s)",
        "",
        *_warm_up_lines(result.get("warm_up")),
        "| round | scheduler | figure | quiet | loaded |",
        "|---|---|---|---|---|",
    ]
    for number, one in enumerate(rounds, 1):
        for scheduler in (ours, theirs):
            quiet = (one.get(QUIET) or {}).get("runs", {}).get(scheduler) or {}
            loaded = (one.get(LOADED) or {}).get("runs", {}).get(scheduler) or {}
            for label, path, _ in FIGURES[:4]:
                lines.append(
                    f"| {number} | {scheduler} | {label} | {_cell(figure(quiet, path))} | "
                    f"{_cell(figure(loaded, path))} |"
                )
    lines += [
        "",
        "Degradation, loaded over quiet (throughput: quiet over loaded; above 1 is worse): "
        "median (min–max) over the rounds.",
        "",
        f"| figure | {ours} | {theirs} |",
        "|---|---|---|",
    ]
    mine, other = degradations(rounds, ours), degradations(rounds, theirs)
    for label, _, _ in FIGURES:
        if label in mine or label in other:
            lines.append(
                f"| {label} | {_spread(mine.get(label, []))} | {_spread(other.get(label, []))} |"
            )
    lines += [
        "",
        f"Loaded create→bound p99, {ours} over {theirs}: "
        f"{_spread(loaded_ratios(rounds, ours, theirs))}.",
    ]
    return "\n".join(lines)


def _warm_up_lines(warm_up: Mapping[str, Any] | None) -> list[str]:
    if not warm_up:
        return []
    mode = LOADED if warm_up.get("neighbours") else QUIET
    lines = []
    for scheduler, run in (warm_up.get("runs") or {}).items():
        p50, p99 = (figure(run, ("create_to_bound_ms", key)) for key in ("p50", "p99"))
        lines.append(
            f"Warm-up, not counted: {scheduler} {mode}, create→bound p50 {_cell(p50)} ms, "
            f"p99 {_cell(p99)} ms."
        )
    return [*lines, ""]


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"
