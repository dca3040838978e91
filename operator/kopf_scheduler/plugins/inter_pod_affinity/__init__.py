"""InterPodAffinity: required and preferred pod affinity and anti-affinity between pods.

Filter keeps a pod off nodes where its required affinity cannot be met, where its required
anti-affinity would be broken, or where an existing pod's required anti-affinity would reject
it. Score prefers nodes whose topology domains hold the pods the incoming pod prefers (and that
prefer it back), away from those it, or they, would rather avoid.
"""

from kopf_scheduler.plugins.inter_pod_affinity.plugin import (
    NAME,
    Args,
    InterPodAffinity,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
    new,
)

__all__ = [
    "NAME",
    "Args",
    "InterPodAffinity",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_change",
    "new",
]
