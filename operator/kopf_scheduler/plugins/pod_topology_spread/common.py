"""What PodTopologySpread's filtering and scoring share: which constraints apply to a pod, which
nodes count for a constraint, how matching pods are counted, and Go-exact float arithmetic.

Constraints come from the pod's ``topologySpreadConstraints`` or, when it has none, from the
plugin's default constraints. Default constraints carry no selector of their own: a pod gets
the selector of the workloads that select or own it (upstream ``DefaultSelector``: the
Services in its namespace whose selector matches it, ANDed with the selector of the
ReplicationController, ReplicaSet or StatefulSet that is its controller).
The scheduler provides that knowledge through an optional ``workload_selectors`` attribute on
the :class:`~kopf_scheduler.framework.handle.Handle` implementing :class:`WorkloadSelectors`.
Without it every pod's default selector is empty, and constraints with an empty selector are
dropped, exactly as upstream drops them for a pod that no workload selects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kopf_scheduler.model.affinity import (
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    TopologySpreadConstraint,
)
from kopf_scheduler.model.node import HOSTNAME_LABEL, ZONE_LABEL
from kopf_scheduler.model.selectors import LabelSelector, Requirement
from kopf_scheduler.model.taints import NO_EXECUTE, NO_SCHEDULE, find_untolerated_taint

if TYPE_CHECKING:
    from kopf_scheduler import plugin_api as api
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.pod import Pod

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


def _system_default_constraints() -> tuple[TopologySpreadConstraint, ...]:
    nothing = LabelSelector.nothing()
    return (
        TopologySpreadConstraint(3, HOSTNAME_LABEL, SCHEDULE_ANYWAY, nothing, 1, HONOR, IGNORE),
        TopologySpreadConstraint(5, ZONE_LABEL, SCHEDULE_ANYWAY, nothing, 1, HONOR, IGNORE),
    )


SYSTEM_DEFAULT_CONSTRAINTS = _system_default_constraints()
"""hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway (their selector is per pod)."""


@runtime_checkable
class WorkloadSelectors(Protocol):
    """Selectors of the workloads that select or own a pod, for default spreading.

    ``selectors_for(pod)`` returns the selectors of the Services in the pod's namespace whose
    selector matches the pod, and of the ReplicationController, ReplicaSet or StatefulSet that
    is the pod's controller. A Service without a selector selects nothing and is left out.
    """

    def selectors_for(self, pod: Pod) -> list[LabelSelector]: ...


def combine_selectors(selectors: Iterable[LabelSelector]) -> LabelSelector:
    """The conjunction of ``selectors``; selectors that match nothing contribute nothing."""
    match_labels: dict[str, str] = {}
    requirements: list[Requirement] = []
    for selector in selectors:
        if selector.matches_nothing:
            continue
        match_labels.update(selector.match_labels)
        requirements.extend(selector.requirements)
    return LabelSelector(match_labels, requirements)


def with_selector(
    constraint: TopologySpreadConstraint, selector: LabelSelector
) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        constraint.max_skew,
        constraint.topology_key,
        constraint.when_unsatisfiable,
        selector,
        constraint.min_domains,
        constraint.node_affinity_policy,
        constraint.node_taints_policy,
    )


class ConstraintSource:
    """Finds the constraints of one kind (``DoNotSchedule`` or ``ScheduleAnyway``) for a pod."""

    __slots__ = ("_handle", "default_constraints", "system_defaulted")

    def __init__(
        self,
        default_constraints: Sequence[TopologySpreadConstraint],
        system_defaulted: bool,
        handle: api.Handle,
    ) -> None:
        self.default_constraints = tuple(default_constraints)
        self.system_defaulted = system_defaulted
        self._handle = handle

    def constraints(self, pod: Pod, when_unsatisfiable: str) -> list[TopologySpreadConstraint]:
        if pod.topology_spread_constraints:
            return [
                c
                for c in pod.topology_spread_constraints
                if c.when_unsatisfiable == when_unsatisfiable
            ]
        defaults = [
            c for c in self.default_constraints if c.when_unsatisfiable == when_unsatisfiable
        ]
        if not defaults:
            return []
        selector = self.default_selector(pod)
        if selector.is_empty():
            return []
        return [with_selector(c, selector) for c in defaults]

    def default_selector(self, pod: Pod) -> LabelSelector:
        lister = getattr(self._handle, "workload_selectors", None)
        if lister is None:
            return LabelSelector()
        return combine_selectors(lister.selectors_for(pod))


def node_labels_match(
    labels: Mapping[str, str], constraints: Iterable[TopologySpreadConstraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def matches_required_node_affinity(pod: Pod, node: Node) -> bool:
    """The pod's ``nodeSelector`` and required node affinity, as NodeAffinity filters them."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    required = pod.node_affinity_required
    return required is None or required.matches(node.name, labels)


def matches_node_inclusion_policies(
    constraint: TopologySpreadConstraint, pod: Pod, node: Node
) -> bool:
    """Whether ``node`` counts for ``constraint`` under its nodeAffinity/nodeTaints policies."""
    if constraint.node_affinity_policy == HONOR and not matches_required_node_affinity(pod, node):
        return False
    return not (
        constraint.node_taints_policy == HONOR
        and find_untolerated_taint(node.taints, pod.tolerations, DO_NOT_SCHEDULE_EFFECTS)
        is not None
    )


def count_pods_match_selector(pods: Iterable[Pod], selector: LabelSelector, namespace: str) -> int:
    """Pods in ``namespace`` that ``selector`` matches, leaving out terminating pods.

    An empty selector (``{}``) counts nothing here, as upstream does.
    """
    if selector.is_empty():
        return 0
    count = 0
    for pod in pods:
        if pod.deletion_timestamp is not None or pod.namespace != namespace:
            continue
        if selector.matches(pod.labels):
            count += 1
    return count


# Go float arithmetic ----------------------------------------------------------------------

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01
_HALF_SQRT2 = math.sqrt(2) / 2


def go_log(x: float) -> float:
    """Natural logarithm with the result Go's ``math.Log`` gives on amd64, bit for bit.

    Go does not call the C library: it reduces ``x`` to ``f * 2**k`` with ``f`` near 1 and
    evaluates a fixed minimax polynomial in a fixed order (the classic fdlibm method), without
    fused multiply-adds. The C library's ``log`` differs from it in the last bit for some
    inputs (``log(3)`` among them), and a last-bit difference can move a rounded score.
    """
    if math.isnan(x) or x == math.inf:
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    f1, exponent = math.frexp(x)
    if f1 < _HALF_SQRT2:
        f1 *= 2
        exponent -= 1
    f = f1 - 1
    k = float(exponent)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def go_round(x: float) -> int:
    """Go's ``math.Round``: to the nearest integer, halves away from zero."""
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return int(whole)
