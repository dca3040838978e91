"""In-process runs: the real scheduler on the in-memory cluster, timed by the wall clock.

The simulation's virtual clock makes waiting free, so wall time is the scheduler's own work.
The benchmark hooks into the running simulation without changing it:

- ``cluster.bind`` is wrapped to record the wall-clock moment each pod is bound (throughput,
  create→bound, head-of-line gaps);
- ``scheduler.schedule_one`` and ``queue.pop`` are wrapped to time each scheduling cycle and to
  know which pod it was for; the attempt records the scheduler reports (``Simulation.attempts``)
  say how the cycle ended (preemption outcome and victims). They are read and dropped after
  every cycle, because each one carries per-node verdicts and 10k of them would dominate RSS.
- Before each cycle the virtual clock is moved up to the wall clock, and once per second the
  periodic work of the real scheduler runs (backoff flush, terminating pods finishing, assumed
  pod cleanup; unschedulable flush every 30 s). So a preemptor's one-second backoff ends after
  one real second while other pods are being scheduled, as it would in a cluster. Time only
  jumps ahead when the queue is idle, which the driver does by itself.
- S5/S6 arrivals are injected at their rate by the wall clock before each cycle, starting when
  the measured pods start being created, until every measured pod is bound.
- S7's CSINodes, claims and PVs are created with the nodes and the existing pods, the measured
  pods' pairs included (as end to end), so the measurement sees only the pods arrive.

When the last measured pod is bound the run stops once the active queue is empty; what is left
(preemptors in backoff, never-fitting pods) is not measured.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench import shapes, stats
from bench.config import SCHEDULER_NAME, scheduler_config
from bench.scenarios import ZONE_LABEL, Scenario, check
from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.gc_tuning import freeze_current_objects, tune_for_large_heap
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.runner import Simulation

NAMESPACE = "bench"
PERIODIC_UNSCHEDULABLE_FLUSH = 30.0


def rss_mb() -> float:
    """The current resident set size of this process, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


@dataclass
class Cycle:
    pod: str
    seconds: float
    outcome: str
    """``assumed`` (went on to binding), ``unschedulable`` or ``error``."""
    preemption: str = ""
    """The preemption record's outcome when PostFilter ran (``Nominated``, ``NoCandidate``...)."""


@dataclass
class Probe:
    sim: Simulation
    scheduler: Scheduler
    scenario: Scenario
    measured: set[str] = field(default_factory=set)
    arrivals: set[str] = field(default_factory=set)
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    cycles: list[Cycle] = field(default_factory=list)
    victims: list[int] = field(default_factory=list)
    queue_samples: list[dict[str, float]] = field(default_factory=list)
    t0: float = 0.0
    v0: float = 0.0
    done_at: float | None = None
    cpu_done: float | None = None
    _popped: str | None = None
    _last_second: int = 0
    _last_unschedulable_flush: float = 0.0
    _next_sample: float = 0.0
    _arrival_index: int = 0
    _measured_bound: int = 0

    def install(self) -> None:
        cluster = self.sim.cluster
        original_bind = cluster.bind

        async def bind(pod: Pod, node_name: str) -> None:
            await original_bind(pod, node_name)
            now = time.perf_counter()
            if pod.key in self.bound:
                return
            self.bound[pod.key] = now
            if pod.key in self.measured:
                self._measured_bound += 1
                if self._measured_bound == len(self.measured) and self.done_at is None:
                    self._finish(now)

        cluster.bind = bind  # type: ignore[method-assign]

        queue: SchedulingQueue = self.scheduler.queue
        original_pop = queue.pop

        def pop() -> Any:
            info = original_pop()
            self._popped = info.pod.key if info is not None else None
            return info

        queue.pop = pop  # type: ignore[method-assign]

        original_schedule_one: Callable[[], bool] = self.scheduler.schedule_one

        def schedule_one() -> bool:
            self._tick(time.perf_counter())
            self._drain_records(None)
            self._popped = None
            started = time.perf_counter()
            result = original_schedule_one()
            seconds = time.perf_counter() - started
            popped = self.last_popped()
            if popped is not None:
                self.cycles.append(self._drain_records(Cycle(popped, seconds, "assumed")))
            return result

        self.scheduler.schedule_one = schedule_one  # type: ignore[method-assign]

    def last_popped(self) -> str | None:
        """The key of the pod the last ``queue.pop`` returned (set by the wrapper)."""
        return self._popped

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.v0 = self.sim.clock.now()
        self._last_second = 0
        self._next_sample = self.t0

    def _finish(self, now: float) -> None:
        self.done_at = now
        self.cpu_done = time.process_time()
        # Stop the driver once the active queue is empty: the rest is not measured.
        self.sim.max_virtual_seconds = 0.0

    def _tick(self, now: float) -> None:
        sim = self.sim
        queue = self.scheduler.queue
        elapsed = now - self.t0
        sim.clock.advance_to(self.v0 + elapsed)
        second = int(sim.clock.now() - self.v0)
        if second > self._last_second:
            self._last_second = second
            sim.cluster.finish_due_deletions()
            queue.flush_backoff_completed()
            self.scheduler.cache.cleanup_expired_assumed_pods()
            virtual = sim.clock.now()
            if virtual - self._last_unschedulable_flush >= PERIODIC_UNSCHEDULABLE_FLUSH:
                self._last_unschedulable_flush = virtual
                queue.flush_unschedulable_leftover()
        if now >= self._next_sample:
            self._next_sample += 1.0
            counts = queue.pending_counts()
            self.queue_samples.append({"t": round(elapsed, 3), **counts})
        arrivals = self.scenario.arrivals
        if arrivals is not None and self.done_at is None:
            while self._arrival_index / arrivals.per_second <= elapsed:
                raw = self.scenario.arrival_pod(self._arrival_index, NAMESPACE, SCHEDULER_NAME)
                created = sim.apply(raw)
                key = f"{NAMESPACE}/{created['metadata']['name']}"
                self.arrivals.add(key)
                self.created[key] = time.perf_counter()
                self._arrival_index += 1

    def _drain_records(self, cycle: Cycle | None) -> Cycle:
        """Read the attempt records reported since the last call, then drop them."""
        records: list[AttemptRecord] = self.sim.attempts
        for record in records:
            if record.result == "scheduled":
                continue
            # Only failed attempts ran PostFilter; reading ``preemption`` builds its dict.
            preemption = record.preemption
            outcome = preemption.get("outcome", "") if preemption is not None else ""
            if outcome == "Nominated" and preemption is not None:
                self.victims.append(len(preemption.get("victims") or ()))
            if cycle is not None and record.pod == cycle.pod and record.result != "scheduled":
                cycle.outcome = record.result
                cycle.preemption = outcome
        records.clear()
        return cycle if cycle is not None else Cycle("", 0.0, "")


def _bench_simulation(seed: int) -> Simulation:
    config = parse_config(scheduler_config())
    return Simulation(config, seed=seed)


async def _run(
    scenario: Scenario,
    seed: int,
    configure_logs: bool,
    inspect: Callable[[Simulation], None] | None = None,
) -> dict[str, Any]:
    if configure_logs:
        configure_logging("warning", "console")
    tune_for_large_heap()
    setup_started = time.perf_counter()
    sim = _bench_simulation(seed)
    scheduler = sim.start()
    sim.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    sim.apply(shapes.priority_class())
    nodes = scenario.node_objects()
    zones = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE_LABEL] for n in nodes}
    for raw in (*nodes, *scenario.csi_nodes()):
        sim.apply(raw)
    init_pods = scenario.init_pods(NAMESPACE, SCHEDULER_NAME)
    measured_pods = scenario.measured_pods(NAMESPACE, SCHEDULER_NAME)
    load_bound_claims(sim, [*init_pods, *measured_pods])
    for raw in init_pods:
        sim.apply(raw)
    await sim.run_until_quiet()
    setup_seconds = time.perf_counter() - setup_started
    # The collector settings of ``kopf-scheduler run``, frozen at the same point: the initial
    # cluster state is loaded.
    freeze_current_objects()

    probe = Probe(sim, scheduler, scenario)
    probe.measured = {f"{NAMESPACE}/{raw['metadata']['name']}" for raw in measured_pods}
    probe.install()
    rss_before = rss_mb()
    cpu_start = time.process_time()
    probe.start()
    for raw in measured_pods:
        sim.apply(raw)
        probe.created[f"{NAMESPACE}/{raw['metadata']['name']}"] = time.perf_counter()
    created_seconds = time.perf_counter() - probe.t0
    await sim.run_until_quiet()
    ended = time.perf_counter()
    cpu_end = time.process_time()

    t0 = probe.t0
    measured_bound = {k: t for k, t in probe.bound.items() if k in probe.measured}
    measured_cycles = [c for c in probe.cycles if c.pod in probe.measured]
    preempting = [c for c in probe.cycles if c.preemption]
    nominated = [c for c in preempting if c.preemption == "Nominated"]
    failed = [c for c in probe.cycles if c.outcome != "assumed"]
    high_keys = [k for k in (*probe.measured, *probe.arrivals) if "-high-" in k]
    preemptor_latency = [probe.bound[k] - probe.created[k] for k in high_keys if k in probe.bound]
    finish = probe.done_at if probe.done_at is not None else ended
    victims_total = sum(1 for key in sim.cluster.deleted if sim.cluster.was_preempted(key))
    result: dict[str, Any] = {
        "mode": "inprocess",
        "scenario": scenario.as_dict(),
        "measured_pods": len(probe.measured),
        "bound_measured": len(measured_bound),
        "all_measured_bound": len(measured_bound) == len(probe.measured),
        "throughput": stats.throughput(measured_bound.values(), t0),
        "attempt_ms": stats.summary([c.seconds for c in measured_cycles], 1000.0),
        "attempt_all_ms": stats.summary([c.seconds for c in probe.cycles], 1000.0),
        "preemption_ms": stats.summary([c.seconds for c in nominated], 1000.0),
        "preemption_any_ms": stats.summary([c.seconds for c in preempting], 1000.0),
        "preemption_outcomes": _count(c.preemption for c in preempting),
        "unschedulable_attempt_ms": stats.summary([c.seconds for c in failed], 1000.0),
        "create_to_bound_ms": stats.summary(
            [t - probe.created[k] for k, t in measured_bound.items()], 1000.0
        ),
        "preemptor_create_to_bound_ms": stats.summary(preemptor_latency, 1000.0),
        "victims_per_preemptor": _count(str(v) for v in probe.victims),
        "victims_total": victims_total,
        "head_of_line_gaps_ms": stats.gaps(measured_bound.values()),
        "arrivals": {
            "injected": len(probe.arrivals),
            "bound": sum(1 for k in probe.arrivals if k in probe.bound),
        },
        "queue": _queue_summary(probe.queue_samples),
        "cycles": len(probe.cycles),
        "measured_seconds": round(finish - t0, 3),
        "create_seconds": round(created_seconds, 3),
        "setup_seconds": round(setup_seconds, 3),
        "virtual_seconds": round(sim.clock.now() - probe.v0, 3),
        "cpu_seconds": round((probe.cpu_done or cpu_end) - cpu_start, 3),
        "cpu_seconds_total": round(cpu_end - cpu_start, 3),
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_mb(),
        "peak_rss_mb": peak_rss_mb(),
    }
    result["checks"] = check(scenario, sim.cluster.pods.values(), zones, probe.victims)
    if inspect is not None:
        inspect(sim)
    return result


def load_bound_claims(sim: Simulation, pods: list[dict[str, Any]]) -> None:
    """Create the claims the pods mount and the PVs bound to them, as one cluster state.

    All claims go first, then the PVs (each ``claimRef`` needs its claim's UID, which the
    cluster assigns). Loaded together, the PV controller first looks at them once every pair
    is complete; created one by one, it would find each claim's PV missing and mark the claim
    Lost until the PV arrived.
    """
    claims = [claim for pod in pods for claim in shapes.pod_claims(pod)]
    if not claims:
        return

    def claims_then_volumes() -> Iterator[dict[str, Any]]:
        yield from claims
        stored = sim.cluster.objects("PersistentVolumeClaim")
        for claim in claims:
            metadata = claim["metadata"]
            yield shapes.bound_volume(stored[f"{metadata['namespace']}/{metadata['name']}"])

    sim.cluster.load(claims_then_volumes())


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _queue_summary(samples: list[dict[str, float]]) -> dict[str, Any]:
    if not samples:
        return {"samples": []}
    keys = [k for k in samples[0] if k != "t"]
    return {
        "max": {k: max(s[k] for s in samples) for k in keys},
        "last": {k: samples[-1][k] for k in keys},
        "samples": samples,
    }


def run_inprocess(scenario: Scenario, seed: int = 0, configure_logs: bool = True) -> dict[str, Any]:
    """Run one scenario on the in-memory cluster; the figures as a JSON-ready dict.

    ``configure_logs`` sets the process-wide logging to warnings only (per-pod info logs would
    be part of the timing otherwise); tests that share the process turn it off.
    """
    return sim_loop.run(_run(scenario, seed, configure_logs))


def run_with_simulation(
    scenario: Scenario, inspect: Callable[[Simulation], None]
) -> dict[str, Any]:
    """:func:`run_inprocess`, then ``inspect`` the simulation while it still holds everything."""
    return sim_loop.run(_run(scenario, 0, True, inspect))
