"""The metrics the scheduler reports, with upstream's names, types, labels and buckets.

The core reports through the ``Metrics`` port by name; the Prometheus adapter registers exactly
these definitions, so ``/metrics`` reads like kube-scheduler's.
"""

from __future__ import annotations

from dataclasses import dataclass


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(count))


@dataclass(frozen=True)
class MetricDef:
    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


SCHEDULE_ATTEMPTS = "scheduler_schedule_attempts_total"
SCHEDULING_ATTEMPT_DURATION = "scheduler_scheduling_attempt_duration_seconds"
SCHEDULING_ALGORITHM_DURATION = "scheduler_scheduling_algorithm_duration_seconds"
PENDING_PODS = "scheduler_pending_pods"
QUEUE_INCOMING_PODS = "scheduler_queue_incoming_pods_total"
PREEMPTION_ATTEMPTS = "scheduler_preemption_attempts_total"
PREEMPTION_VICTIMS = "scheduler_preemption_victims"
PREEMPTION_GOROUTINES_DURATION = "scheduler_preemption_goroutines_duration_seconds"
PREEMPTION_GOROUTINES_EXECUTION = "scheduler_preemption_goroutines_execution_total"
POD_SCHEDULING_SLI_DURATION = "scheduler_pod_scheduling_sli_duration_seconds"
POD_SCHEDULING_ATTEMPTS = "scheduler_pod_scheduling_attempts"
FRAMEWORK_EXTENSION_POINT_DURATION = "scheduler_framework_extension_point_duration_seconds"
UNSCHEDULABLE_PODS = "scheduler_unschedulable_pods"
CACHE_SIZE = "scheduler_cache_size"
GOROUTINES = "scheduler_goroutines"

DEFINITIONS: tuple[MetricDef, ...] = (
    MetricDef(
        SCHEDULE_ATTEMPTS,
        "counter",
        "Number of attempts to schedule pods, by the result.",
        ("result", "profile"),
    ),
    MetricDef(
        SCHEDULING_ATTEMPT_DURATION,
        "histogram",
        "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
        ("result", "profile"),
        _exponential(0.001, 2, 15),
    ),
    MetricDef(
        SCHEDULING_ALGORITHM_DURATION,
        "histogram",
        "Scheduling algorithm latency in seconds",
        (),
        _exponential(0.001, 2, 15),
    ),
    MetricDef(PENDING_PODS, "gauge", "Number of pending pods, by the queue type.", ("queue",)),
    MetricDef(
        QUEUE_INCOMING_PODS,
        "counter",
        "Number of pods added to scheduling queues by event and queue type.",
        ("queue", "event"),
    ),
    MetricDef(PREEMPTION_ATTEMPTS, "counter", "Total preemption attempts in the cluster till now"),
    MetricDef(
        PREEMPTION_VICTIMS,
        "histogram",
        "Number of selected preemption victims",
        (),
        _exponential(1, 2, 7),
    ),
    MetricDef(
        PREEMPTION_GOROUTINES_DURATION,
        "histogram",
        "Duration in seconds for running the asynchronous preemption of victims.",
        ("result",),
        _exponential(0.01, 2, 20),
    ),
    MetricDef(
        PREEMPTION_GOROUTINES_EXECUTION,
        "counter",
        "Number of asynchronous preemptions executed.",
        ("result",),
    ),
    MetricDef(
        POD_SCHEDULING_SLI_DURATION,
        "histogram",
        "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue.",
        ("attempts",),
        _exponential(0.01, 2, 20),
    ),
    MetricDef(
        POD_SCHEDULING_ATTEMPTS,
        "histogram",
        "Number of attempts to successfully schedule a pod.",
        (),
        _exponential(1, 2, 5),
    ),
    MetricDef(
        FRAMEWORK_EXTENSION_POINT_DURATION,
        "histogram",
        "Latency for running all plugins of a specific extension point.",
        ("extension_point", "status", "profile"),
        _exponential(0.0001, 2, 12),
    ),
    MetricDef(
        UNSCHEDULABLE_PODS,
        "gauge",
        "The number of unschedulable pods broken down by plugin name.",
        ("plugin", "profile"),
    ),
    MetricDef(
        CACHE_SIZE,
        "gauge",
        "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
        ("type",),
    ),
    MetricDef(
        GOROUTINES,
        "gauge",
        "Number of running background tasks split by the work they do.",
        ("operation",),
    ),
)
