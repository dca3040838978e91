"""PodTopologySpread: spread pods evenly over topology domains (nodes, zones, ...).

Filter enforces the pod's ``DoNotSchedule`` topology spread constraints; Score prefers nodes
whose domains hold fewer matching pods under its ``ScheduleAnyway`` constraints. Pods without
constraints of their own get the plugin's default constraints, whose selector comes from the
workloads that select or own the pod: the scheduler supplies those through an optional
``workload_selectors`` attribute on the Handle implementing :class:`WorkloadSelectors`. Without
it, default constraints have an empty selector and, as upstream does for such constraints, are
not applied.
"""

from kopf_scheduler.plugins.pod_topology_spread.common import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    WorkloadSelectors,
)
from kopf_scheduler.plugins.pod_topology_spread.plugin import NAME, Args, PodTopologySpread, new

__all__ = [
    "LIST_DEFAULTING",
    "NAME",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "Args",
    "PodTopologySpread",
    "WorkloadSelectors",
    "new",
]
