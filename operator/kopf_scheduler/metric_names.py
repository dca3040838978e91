"""The metrics the scheduler reports, with upstream's names, types, labels, buckets and help.

The core reports through the ``Metrics`` port by name; the Prometheus adapter registers exactly
these definitions, so ``/metrics`` reads like kube-scheduler's: the same family names, label
names and buckets, and help texts carrying the same ``[STABILITY]`` prefix that Kubernetes'
component-base adds. Besides the scheduler's own metrics (kube-scheduler's
``pkg/scheduler/metrics``), the API client reports client-go's ``rest_client_*`` metrics and
leader election client-go's ``leader_election_master_status``.

A metric of our own, one kube-scheduler does not have, is named with :data:`OWN_PREFIX` and its
help carries no stability level, so nobody takes it for one of upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass

ALPHA = "ALPHA"
BETA = "BETA"
STABLE = "STABLE"
OWN_PREFIX = "kopf_scheduler_"


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(count))


@dataclass(frozen=True)
class MetricDef:
    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    stability: str = ALPHA

    @property
    def own(self) -> bool:
        """Ours, not kube-scheduler's: no upstream dashboard or alert knows it."""
        return self.name.startswith(OWN_PREFIX)

    @property
    def exposed_help(self) -> str:
        """The help text as component-base exposes it: prefixed with the stability level.

        Our own metrics have no place in component-base's stability scheme and go without one.
        """
        return self.help if self.own else f"[{self.stability}] {self.help}"


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
PLUGIN_EXECUTION_DURATION = "scheduler_plugin_execution_duration_seconds"
UNSCHEDULABLE_PODS = "scheduler_unschedulable_pods"
CACHE_SIZE = "scheduler_cache_size"
GOROUTINES = "scheduler_goroutines"
REST_CLIENT_REQUESTS = "rest_client_requests_total"
REST_CLIENT_REQUEST_DURATION = "rest_client_request_duration_seconds"
LEADER_ELECTION_MASTER_STATUS = "leader_election_master_status"
EVENTS_DROPPED = f"{OWN_PREFIX}events_dropped_total"
WATCH_DELIVERY_LAG = f"{OWN_PREFIX}watch_delivery_lag_seconds"
QUEUE_WAIT_BEFORE_FIRST_ATTEMPT = f"{OWN_PREFIX}queue_wait_before_first_attempt_seconds"
BINDING_REQUEST_DELAY = f"{OWN_PREFIX}binding_request_delay_seconds"
BINDING_REQUEST_DURATION = f"{OWN_PREFIX}binding_request_duration_seconds"
EVENT_LOOP_LAG = f"{OWN_PREFIX}event_loop_lag_seconds"

PLUGIN_METRICS_SAMPLE_PERCENT = 10
"""Per-plugin durations are recorded for this share of scheduling cycles, as upstream does."""

_REST_CLIENT_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_POD_STAGE_BUCKETS = _exponential(0.001, 2, 20)
"""1 ms to about 9 minutes: a stage a pod passes through may take a millisecond when idle and
minutes behind a backlog."""
_LOOP_LAG_BUCKETS = _exponential(0.0001, 2, 20)
"""0.1 ms to about 52 s: an idle loop runs its timers within a fraction of a millisecond."""

DEFINITIONS: tuple[MetricDef, ...] = (
    MetricDef(
        SCHEDULE_ATTEMPTS,
        "counter",
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
        "not be scheduled, while 'error' means an internal scheduler problem.",
        ("result", "profile"),
        stability=STABLE,
    ),
    MetricDef(
        SCHEDULING_ATTEMPT_DURATION,
        "histogram",
        "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
        ("result", "profile"),
        _exponential(0.001, 2, 15),
        stability=STABLE,
    ),
    MetricDef(
        SCHEDULING_ALGORITHM_DURATION,
        "histogram",
        "Scheduling algorithm latency in seconds",
        (),
        _exponential(0.001, 2, 15),
    ),
    MetricDef(
        PENDING_PODS,
        "gauge",
        "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
        "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
        "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the "
        "number of unschedulable pods that the scheduler never attempted to schedule because "
        "they are gated.",
        ("queue",),
        stability=STABLE,
    ),
    MetricDef(
        QUEUE_INCOMING_PODS,
        "counter",
        "Number of pods added to scheduling queues by event and queue type.",
        ("queue", "event"),
        stability=STABLE,
    ),
    MetricDef(
        PREEMPTION_ATTEMPTS,
        "counter",
        "Total preemption attempts in the cluster till now",
        stability=STABLE,
    ),
    MetricDef(
        PREEMPTION_VICTIMS,
        "histogram",
        "Number of selected preemption victims",
        (),
        _exponential(1, 2, 7),
        stability=STABLE,
    ),
    MetricDef(
        PREEMPTION_GOROUTINES_DURATION,
        "histogram",
        "Duration in seconds for running goroutines for the preemption.",
        ("result",),
        _exponential(0.01, 2, 20),
    ),
    MetricDef(
        PREEMPTION_GOROUTINES_EXECUTION,
        "counter",
        "Number of preemption goroutines executed.",
        ("result",),
    ),
    MetricDef(
        POD_SCHEDULING_SLI_DURATION,
        "histogram",
        "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
        "queue and might involve multiple scheduling attempts.",
        ("attempts",),
        _exponential(0.01, 2, 20),
        stability=BETA,
    ),
    MetricDef(
        POD_SCHEDULING_ATTEMPTS,
        "histogram",
        "Number of attempts to successfully schedule a pod.",
        (),
        _exponential(1, 2, 5),
        stability=STABLE,
    ),
    MetricDef(
        FRAMEWORK_EXTENSION_POINT_DURATION,
        "histogram",
        "Latency for running all plugins of a specific extension point.",
        ("extension_point", "status", "profile"),
        _exponential(0.0001, 2, 12),
        stability=STABLE,
    ),
    MetricDef(
        PLUGIN_EXECUTION_DURATION,
        "histogram",
        "Duration for running a plugin at a specific extension point.",
        ("plugin", "extension_point", "status"),
        _exponential(0.00001, 1.5, 20),
    ),
    MetricDef(
        UNSCHEDULABLE_PODS,
        "gauge",
        "The number of unschedulable pods broken down by plugin name. A pod will increment the "
        "gauge for all plugins that caused it to not schedule and so this metric have meaning "
        "only when broken down by plugin.",
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
        "Number of running goroutines split by the work they do such as binding.",
        ("operation",),
    ),
    MetricDef(
        REST_CLIENT_REQUESTS,
        "counter",
        "Number of HTTP requests, partitioned by status code, method, and host.",
        ("code", "method", "host"),
    ),
    MetricDef(
        REST_CLIENT_REQUEST_DURATION,
        "histogram",
        "Request latency in seconds. Broken down by verb, and host.",
        ("verb", "host"),
        _REST_CLIENT_LATENCY_BUCKETS,
    ),
    MetricDef(
        LEADER_ELECTION_MASTER_STATUS,
        "gauge",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
        "1 indicates master. 'name' is the string used to identify the lease. Please make sure "
        "to group by name.",
        ("name",),
    ),
    MetricDef(
        EVENTS_DROPPED,
        "counter",
        "Events about pods that were never written to the API server, by why: 'queue_full' (the "
        "recorder's queue was full), 'shutdown' (still queued when the process stopped), "
        "'send_failed' (the API server refused the event or could not be reached on any try).",
        ("reason",),
    ),
    MetricDef(
        WATCH_DELIVERY_LAG,
        "histogram",
        "Seconds from an object's creationTimestamp to the scheduler handling the watch event "
        "that adds it, for objects first seen on a watch (not in a listing), by resource: "
        "'pods' or 'nodes'. creationTimestamp has a resolution of one second and is truncated, so "
        "each value is up to one second longer than the true lag. Includes the API server's "
        "delivery and the time the event waited in the scheduler's buffers before it was decoded "
        "and handled.",
        ("resource",),
        _POD_STAGE_BUCKETS,
    ),
    MetricDef(
        QUEUE_WAIT_BEFORE_FIRST_ATTEMPT,
        "histogram",
        "Seconds a pod waited in activeQ from first entering it to its first scheduling attempt.",
        (),
        _POD_STAGE_BUCKETS,
    ),
    MetricDef(
        BINDING_REQUEST_DELAY,
        "histogram",
        "Seconds from the end of a pod's scheduling cycle to the start of its Bind extension "
        "point: waiting for the binding task to run, Permit and PreBind.",
        (),
        _POD_STAGE_BUCKETS,
    ),
    MetricDef(
        BINDING_REQUEST_DURATION,
        "histogram",
        "Seconds the binding request to the API server took, including its wait for the "
        "client's rate limiter and its retries.",
        (),
        _POD_STAGE_BUCKETS,
    ),
    MetricDef(
        EVENT_LOOP_LAG,
        "histogram",
        "Seconds a timer on the scheduler's event loop, due every 0.1 s, fired late: how long "
        "whatever is ready (a watch event, an API reply) waits for the one thread that handles "
        "it, because other work is ahead of it or the process is waiting for a CPU.",
        (),
        _LOOP_LAG_BUCKETS,
    ),
)
