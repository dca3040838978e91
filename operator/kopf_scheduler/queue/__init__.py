"""The scheduling queue: pending pods, when each is tried, and the nominations they hold.

kube-scheduler v1.34's queue split by concept: the ordered active queue, the backoff queue, the
map of pods waiting for a cluster event (or held back by a PreEnqueue plugin), in-flight
tracking, queueing hints, the nominator, and :class:`SchedulingQueue` tying them together. It is
synchronous and clock-injected so the scheduling loop, the simulator and the tests drive time.
"""

from kopf_scheduler.queue.backoff import backoff_duration
from kopf_scheduler.queue.hints import QueueingStrategy
from kopf_scheduler.queue.nominator import Nominator, PodRef
from kopf_scheduler.queue.pod_events import pod_update_events
from kopf_scheduler.queue.scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    PreEnqueueCheck,
    QueueProfile,
    SchedulingQueue,
    priority_at_most,
)

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "GATED",
    "IN_FLIGHT",
    "UNSCHEDULABLE",
    "Nominator",
    "PodRef",
    "PreEnqueueCheck",
    "QueueProfile",
    "QueueingStrategy",
    "SchedulingQueue",
    "backoff_duration",
    "pod_update_events",
    "priority_at_most",
]
