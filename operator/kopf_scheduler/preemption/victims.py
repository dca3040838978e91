"""Choosing the victims on one node: SelectVictimsOnNode, the PDB split and pod importance.

The algorithm is upstream's greedy "remove all, then reprieve" (``default_preemption.go``):

1. every pod with lower priority than the preemptor is a potential victim;
2. all of them are removed from a copy of the node (PreFilter RemovePod keeps plugin state in
   step); if there are none the node is UnschedulableAndUnresolvable;
3. if the preemptor still does not pass the filters (with nominated pods), the node is out and
   the filter status explains why;
4. the potential victims are ordered most important first and split into those whose eviction
   would violate a PodDisruptionBudget and the rest;
5. each pod is added back in turn, violating ones first, then the others; a pod that makes the
   preemptor fail again is removed once more and becomes a victim.

The result is not a minimum victim set; it is upstream's greedy one, and that is what decides
which pods kube-scheduler evicts.

Importance (``MoreImportantPod``): higher priority first; equal priority, earlier start time
first; a pod that has not started counts as starting "now". Upstream reads the wall clock per
comparison and sorts unstably; here "now" is read once per attempt and the sort is stable (ties
keep the node's pod order), which makes the result reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod

NO_VICTIMS_REASON = "No preemption victims found for incoming pod"

IsEligiblePod = Callable[[NodeInfo, Pod, Pod], bool]
"""``(node_info, victim, preemptor) -> bool``: extra restriction on who may be preempted, on top
of "lower priority than the preemptor" (upstream's ``IsEligiblePod`` hook; default: anyone)."""


def pod_start_time(pod: Pod, now: float) -> float:
    """``status.startTime`` in POSIX seconds, or ``now`` for a pod that has not started."""
    return pod.start_time if pod.start_time is not None else now


def importance_key(pod: Pod, now: float) -> tuple[int, float]:
    """Sort key putting the most important pod first (see :func:`more_important_pod`)."""
    return (-pod.priority, pod_start_time(pod, now))


def more_important_pod(first: Pod, second: Pod, now: float) -> bool:
    """Higher priority wins; at equal priority, the pod that started earlier wins."""
    if first.priority != second.priority:
        return first.priority > second.priority
    return pod_start_time(first, now) < pod_start_time(second, now)


def sort_by_importance(pods: Iterable[Pod], now: float) -> list[Pod]:
    """Most important first; a stable sort, so full ties keep their input order."""
    return sorted(pods, key=lambda pod: importance_key(pod, now))


def is_preemption_allowed(victim: Pod, preemptor: Pod) -> bool:
    """Only pods of strictly lower priority can be preempted."""
    return victim.priority < preemptor.priority


def filter_pods_with_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """Split ``pods`` into (violating, non-violating), keeping their order.

    Each PDB's ``disruptionsAllowed`` is a budget shared by all ``pods`` in order: a matching pod
    spends one; the pod that takes the budget below zero (and every later matching one) violates.
    A PDB matches a pod in its namespace whose labels its non-empty selector selects (pods
    without labels and PDBs with a missing or empty selector never match). A pod listed in the
    PDB's ``disruptedPods`` is already being evicted through that budget: it neither spends nor
    violates it.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for index, pdb in enumerate(pdbs):
                if not pdb.matches(pod.namespace, pod.labels):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


@dataclass
class VictimSelection:
    """What :func:`select_victims_on_node` found for one node."""

    status: Status
    victims: list[Pod] = field(default_factory=list)
    """Most important first."""
    num_violating: int = 0
    """How many victims violate a PodDisruptionBudget."""


@dataclass(slots=True, eq=False)
class _NodeEditor:
    """Adds and removes pods on the (cloned) node and keeps PreFilter state in step."""

    framework: Framework
    state: CycleState
    preemptor: Pod
    node_info: NodeInfo

    def remove(self, pod: Pod) -> Status:
        if not self.node_info.remove_pod(pod):
            return Status.from_error(
                LookupError(f"pod {pod.key} is not on node {self.node_info.name}")
            )
        return self.framework.run_pre_filter_extension_remove_pod(
            self.state, self.preemptor, pod, self.node_info
        )

    def add(self, pod: Pod) -> Status:
        self.node_info.add_pod(pod)
        return self.framework.run_pre_filter_extension_add_pod(
            self.state, self.preemptor, pod, self.node_info
        )

    def fits(self) -> Status:
        return self.framework.run_filter_plugins_with_nominated_pods(
            self.state, self.preemptor, self.node_info
        )


def _as_error(status: Status) -> Status:
    if status.code == Code.ERROR:
        return status
    return Status(Code.ERROR, *status.reasons, plugin=status.plugin, error=status.error)


def select_victims_on_node(
    framework: Framework,
    state: CycleState,
    preemptor: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
    *,
    now: float,
    is_eligible_pod: IsEligiblePod | None = None,
) -> VictimSelection:
    """Upstream's SelectVictimsOnNode. ``state`` and ``node_info`` are left as they are: the
    pods come and go on clones of both, made only when the node holds a pod that may be removed
    (a failed attempt dry-runs every node, and where the pods share one priority none does)."""
    potential = [
        pod
        for pod in node_info.pods
        if is_preemption_allowed(pod, preemptor)
        and (is_eligible_pod is None or is_eligible_pod(node_info, pod, preemptor))
    ]
    if not potential:
        return VictimSelection(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_REASON))
    editor = _NodeEditor(framework, state.clone(), preemptor, node_info.clone())
    for pod in potential:
        status = editor.remove(pod)
        if not status.is_success():
            return VictimSelection(_as_error(status))

    status = editor.fits()
    if not status.is_success():
        return VictimSelection(status)

    potential = sort_by_importance(potential, now)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[Pod] = []
    num_violating = 0
    for group_violates, group in ((True, violating), (False, non_violating)):
        for pod in group:
            status = editor.add(pod)
            if not status.is_success():
                return VictimSelection(_as_error(status))
            if editor.fits().is_success():
                continue
            status = editor.remove(pod)
            if not status.is_success():
                return VictimSelection(_as_error(status))
            victims.append(pod)
            if group_violates:
                num_violating += 1
    if violating and non_violating:
        victims = sort_by_importance(victims, now)
    return VictimSelection(SUCCESS, victims, num_violating)
