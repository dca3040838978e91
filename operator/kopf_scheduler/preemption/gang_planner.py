"""Gang preemption: make room for a whole PodGroup at once, or for none of it.

Why
    DefaultPreemption makes room for one pod at a time, and scheduler-plugins' Coscheduling
    leaves preemption to it. For a gang that is wasteful twice over: pods are evicted for the
    first members of a group whose last members can never fit, and when the group times out
    and retries, more pods are evicted for the same group. This planner decides for the group
    as a whole, over the scheduling snapshot and without any API call: it says on which node
    each needed member goes and which pods must go first, or ``None`` when no room can be made
    for all of them. The caller carries the plan out.

The rules
    1. Members are placed one after another on copies of the nodes, so each placement takes
       room from the next members. Every member's PreFilter state is kept in step through the
       PreFilter AddPod/RemovePod extensions, as the evaluator's dry runs do. Pods nominated to
       a node count as they do for upstream's filters (equal or higher priority), except the
       group's own members, which the plan places itself. A member that the profile's
       PreFilter rejects as UnschedulableAndUnresolvable (or with an error) is not placed;
       its PreFilter result, when it names nodes, limits where it can go. PreFilter runs with
       :data:`PLANNING` in the state, so that a gang plugin does not turn members away for
       lack of free capacity, which is what the plan is about to change. Plugins whose filters
       depend on what pods hold beyond the node (the devices of claims) are told of every
       placement (:class:`~kopf_scheduler.framework.interfaces.GangPlanningPlugin`), so no
       device goes to two members.
    2. A pod can be a victim of a member only if its priority is lower than the member's.
       A lower-priority pod already terminating is not a victim: its room is counted as free,
       so a plan made again while earlier victims are going evicts no one more. The group's
       own pods are never victims.
    3. A pod of another group can be a victim only while its group keeps at least
       ``minMember`` placed pods, counting every victim of the plan; of a group's pods on a
       node, the least important ones are offered first.
    4. On a node, a member's victims are upstream's "remove all, then reprieve": every
       eligible pod is removed; if the member then fits, they are added back one by one, most
       important first, PodDisruptionBudget-violating ones before the others, and each one
       that stops the member fitting becomes a victim. A PodDisruptionBudget is one budget for
       the whole plan: victims on earlier nodes spend it before the pods of the next node.
    5. A member goes to the first node (in snapshot order) where it fits without victims.
       When there is none, it goes to the best node with victims by, in order: (a) fewest
       PodDisruptionBudget violations, (b) lowest priority of the most important victim,
       (c) smallest sum of ``priority + 2**31`` over the victims, (d) fewest victims, (e) latest
       start time of the most important victims, (f) snapshot order. A node that needs no
       victim at all (because the pods in the way are terminating) ends the search at once.
    6. Passes, strictest first: a plan that takes no pod of another group and violates no
       PodDisruptionBudget; then one that may take other groups' pods beyond their
       ``minMember``; then, unless ``pdbPolicy`` is Strict, one that may violate budgets
       without and then with other groups' pods. A pass runs only when a restriction it lifts
       kept an earlier pass from using a node. With ``pdbPolicy: Strict`` no budget is ever
       violated.
    7. A plan places exactly ``needed`` members. When a pass cannot place that many, it
       evicts nothing; when no pass can, the answer is ``None``.

Bounds
    For each member, every node its PreFilter result allows is first checked without victims
    (one filter run, no copy). Victims are then searched on the nodes where the member was
    plain Unschedulable, in snapshot order, until as many candidate nodes are found as
    DefaultPreemption looks for: ``max(minCandidateNodesPercentage`` % of those nodes,
    ``minCandidateNodesAbsolute)``, at most all of them. With 1000 nodes and 8 members a pass
    costs at most 8000 filter runs and 8 x 100 victim searches.

There is no random source: the same snapshot, members, budgets and groups give the same plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState, StateKey
from kopf_scheduler.framework.interfaces import GangPlanningPlugin
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.candidates import (
    PRIORITY_OFFSET,
    calculate_num_candidates,
    earliest_start_time,
)
from kopf_scheduler.preemption.evaluator import PDB_POLICY_STRICT, PreemptionSettings
from kopf_scheduler.preemption.victims import (
    filter_pods_with_pdb_violation,
    is_preemption_allowed,
    sort_by_importance,
)

PLANNING: StateKey[bool] = StateKey("preemption/gang/planning")
"""Written in every member's CycleState before the planner runs PreFilter: a gang plugin then
skips its checks of the cluster's free capacity, which a plan is about to change."""

GANG_PREEMPTION: StateKey[bool] = StateKey("preemption/gang/handled")
"""Written by a gang plugin's PreFilter for a pod whose group preempts as a whole: per-pod
preemption then leaves the pod to the group's PostFilter."""


@dataclass(frozen=True)
class GroupInfo:
    """The group a pod belongs to, as the planner needs to know it."""

    key: str
    """``namespace/name`` of the PodGroup."""
    min_member: int
    placed: int
    """How many of the group's pods are assigned or assumed now."""


GroupOf = Callable[[Pod], GroupInfo | None]
"""A pod's group, or ``None`` for a pod that belongs to none."""


@dataclass(frozen=True)
class GangRequest:
    members: Sequence[Pod]
    """The group's members still to place (neither assigned nor assumed), in the order to try
    them."""
    needed: int
    """How many of them must be placed for the group to reach ``minMember``."""
    framework: Framework
    """The profile whose PreFilter and Filter plugins judge every placement."""
    snapshot: Snapshot
    """The cycle's snapshot, assumed pods included."""
    pdbs: Sequence[PodDisruptionBudget]
    group_of: GroupOf
    now: float
    """The attempt's time, for the start time of pods that have not started."""
    settings: PreemptionSettings = field(default_factory=PreemptionSettings)
    """The candidate bounds and the PodDisruptionBudget policy (DefaultPreemption's)."""


@dataclass(frozen=True)
class GangPlan:
    placements: Mapping[str, str]
    """Member UID -> node name, for ``needed`` members."""
    victims_by_node: Mapping[str, tuple[Pod, ...]]
    """The pods to evict, most important first, for each node that has any."""
    pdb_violations: int
    """How many victims violate a PodDisruptionBudget (0 unless no plan without exists)."""


_GROUPS = "groups"
"""A pass that may take other groups' pods beyond their minMember."""
_PDBS = "pdbs"
"""A pass that may violate PodDisruptionBudgets."""
_PASSES: tuple[frozenset[str], ...] = (
    frozenset(),
    frozenset({_GROUPS}),
    frozenset({_PDBS}),
    frozenset({_GROUPS, _PDBS}),
)
"""The restrictions each pass lifts, strictest pass first."""


def plan_gang_preemption(request: GangRequest) -> GangPlan | None:
    """Where the needed members go and whom to evict for them; ``None`` when not all of them
    can be placed even with every eligible victim gone. See the module docstring."""
    if request.needed < 0:
        raise ValueError(f"needed must be 0 or more, got {request.needed}")
    if request.needed == 0:
        return GangPlan(placements={}, victims_by_node={}, pdb_violations=0)
    members = _prepare(request)
    if len(members) < request.needed:
        return None
    own_groups = frozenset(
        info.key for info in (request.group_of(member) for member in request.members) if info
    )
    strict = request.settings.pdb_policy == PDB_POLICY_STRICT
    blocking: set[str] = set()
    for lifted in _PASSES:
        if strict and _PDBS in lifted:
            continue
        if lifted and not lifted & blocking:
            continue
        attempt = _Attempt(request, members, own_groups, lifted)
        plan = attempt.run()
        if plan is not None:
            return plan
        blocking |= attempt.blocking
    return None


@dataclass(frozen=True)
class _Member:
    pod: Pod
    state: CycleState
    """After PreFilter; each pass works on its own copy, kept in step with the plan."""
    node_names: frozenset[str] | None
    """The nodes PreFilter allows (``None``: all)."""


def _prepare(request: GangRequest) -> list[_Member]:
    """Run PreFilter for every member; members it rejects beyond repair are left out."""
    nodes = request.snapshot.node_info_list
    members: list[_Member] = []
    for pod in request.members:
        state = CycleState()
        state.write(PLANNING, True)
        result, status, _ = request.framework.run_pre_filter(state, pod, nodes)
        if status.is_success() or status.code == Code.UNSCHEDULABLE:
            node_names = result.node_names if result is not None else None
            members.append(_Member(pod, state, node_names))
    return members


@dataclass(frozen=True)
class _NodeChoice:
    node: str
    victims: tuple[Pod, ...] = ()
    """Most important first."""
    going: tuple[Pod, ...] = ()
    """Terminating pods counted as gone (not victims)."""
    violations: int = 0


_BELOW_ANY_PRIORITY = -(2**31) - 1
"""The "most important victim" priority of a choice without victims (priorities are int32)."""


def _choice_key(choice: _NodeChoice, now: float) -> tuple[int, int, int, int, float]:
    """Criteria (a) to (e) of the module docstring; lower is better."""
    victims = choice.victims
    if not victims:
        return (choice.violations, _BELOW_ANY_PRIORITY, 0, 0, 0.0)
    return (
        choice.violations,
        victims[0].priority,
        sum(pod.priority + PRIORITY_OFFSET for pod in victims),
        len(victims),
        -earliest_start_time(victims, now),
    )


class _Attempt:
    """One pass: places members one by one on copies of the nodes it changes."""

    def __init__(
        self,
        request: GangRequest,
        members: Sequence[_Member],
        own_groups: frozenset[str],
        lifted: frozenset[str],
    ) -> None:
        self.request = request
        self.framework = request.framework
        self.now = request.now
        self.own_groups = own_groups
        self.take_groups = _GROUPS in lifted
        self.violate_pdbs = _PDBS in lifted
        self.gang_uids = frozenset(pod.uid for pod in request.members)
        self.pending = [_Member(m.pod, m.state.clone(), m.node_names) for m in members]
        self.nodes: dict[str, NodeInfo] = {}
        """Copies of the nodes the plan has changed."""
        self.placements: dict[str, str] = {}
        self.victims: list[Pod] = []
        """Every victim so far, in the order they were chosen."""
        self.victims_by_node: dict[str, list[Pod]] = {}
        self.violations = 0
        self.taken_from_group: dict[str, int] = {}
        self.blocking: set[str] = set()
        """The restrictions that kept this pass from using a node."""

    def run(self) -> GangPlan | None:
        needed = self.request.needed
        while self.pending and len(self.placements) < needed:
            if len(self.placements) + len(self.pending) < needed:
                return None
            member = self.pending.pop(0)
            choice = self._best_node(member)
            if choice is not None:
                self._commit(member, choice)
        if len(self.placements) < needed:
            return None
        return GangPlan(
            placements=dict(self.placements),
            victims_by_node={
                node: tuple(sort_by_importance(pods, self.now))
                for node, pods in self.victims_by_node.items()
            },
            pdb_violations=self.violations,
        )

    # Choosing a node -------------------------------------------------------------------------

    def _node(self, name: str) -> NodeInfo:
        changed = self.nodes.get(name)
        return changed if changed is not None else self.request.snapshot.node_info_map[name]

    def _best_node(self, member: _Member) -> _NodeChoice | None:
        potential: list[NodeInfo] = []
        for listed in self.request.snapshot.node_info_list:
            if member.node_names is not None and listed.name not in member.node_names:
                continue
            node = self._node(listed.name)
            if any(self._is_going(pod, member.pod) for pod in node.pods):
                potential.append(node)
                continue
            status = self._fits(member.pod, member.state, node)
            if status.is_success():
                return _NodeChoice(node.name)
            if status.code == Code.UNSCHEDULABLE:
                potential.append(node)
        settings = self.request.settings
        wanted = calculate_num_candidates(
            len(potential),
            settings.min_candidate_nodes_percentage,
            settings.min_candidate_nodes_absolute,
        )
        best: _NodeChoice | None = None
        best_key: tuple[int, int, int, int, float] | None = None
        found = 0
        for node in potential:
            choice = self._select_victims(member, node)
            if choice is None:
                continue
            key = _choice_key(choice, self.now)
            if best_key is None or key < best_key:
                best, best_key = choice, key
            found += 1
            if not choice.victims or found >= wanted:
                break
        return best

    @staticmethod
    def _is_going(pod: Pod, member: Pod) -> bool:
        return pod.is_terminating and is_preemption_allowed(pod, member)

    def _fits(self, pod: Pod, state: CycleState, node: NodeInfo) -> Status:
        """The filters, with nominated pods of equal or higher priority counted first (as
        upstream's filtering with nominated pods), the group's own members excepted."""
        nominator = self.framework.handle.nominator
        nominated = [
            other
            for other in nominator.nominated_pods_for_node(node.name)
            if other.priority >= pod.priority and other.uid not in self.gang_uids
        ]
        if nominated:
            with_nominated = node.clone()
            state_with = state.clone()
            for other in nominated:
                with_nominated.add_pod(other)
                status = self.framework.run_pre_filter_extension_add_pod(
                    state_with, pod, other, with_nominated
                )
                if not status.is_success():
                    return status
            status = self.framework.run_filter_plugins(state_with, pod, with_nominated)
            if not status.is_success():
                return status
        return self.framework.run_filter_plugins(state, pod, node)

    def _removable(self, member: Pod, node: NodeInfo) -> tuple[list[Pod], list[Pod]]:
        """(terminating pods counted as gone, potential victims) on ``node`` for ``member``."""
        going: list[Pod] = []
        potential: list[Pod] = []
        of_groups: dict[str, list[Pod]] = {}
        spare_of: dict[str, int] = {}
        for pod in node.pods:
            if not is_preemption_allowed(pod, member):
                continue
            if pod.is_terminating:
                going.append(pod)
                continue
            group = self.request.group_of(pod)
            if group is None:
                potential.append(pod)
                continue
            if group.key in self.own_groups:
                continue
            spare = group.placed - group.min_member - self.taken_from_group.get(group.key, 0)
            if spare <= 0:
                continue
            if not self.take_groups:
                self.blocking.add(_GROUPS)
                continue
            of_groups.setdefault(group.key, []).append(pod)
            spare_of[group.key] = spare
        for key, pods in of_groups.items():
            least_important_first = sort_by_importance(pods, self.now)[::-1]
            potential.extend(least_important_first[: spare_of[key]])
        return going, potential

    def _select_victims(self, member: _Member, base: NodeInfo) -> _NodeChoice | None:
        """Rule 4 on a copy of ``base``; ``None`` when the member cannot fit there."""
        pod = member.pod
        node = base.clone()
        state = member.state.clone()
        going, potential = self._removable(pod, node)
        if not going and not potential:
            return None
        for other in (*going, *potential):
            if not self._remove(state, pod, other, node):
                return None
        if not self._fits(pod, state, node).is_success():
            return None
        # The plan's earlier victims come first, so they spend the shared budgets first.
        violating, non_violating = filter_pods_with_pdb_violation(
            [*self.victims, *sort_by_importance(potential, self.now)], self.request.pdbs
        )
        earlier = frozenset(victim.uid for victim in self.victims)
        victims: list[Pod] = []
        violations = 0
        for group_violates, group in ((True, violating), (False, non_violating)):
            for other in group:
                if other.uid in earlier:
                    continue
                if not self._add(state, pod, other, node):
                    return None
                if self._fits(pod, state, node).is_success():
                    continue
                if not self._remove(state, pod, other, node):
                    return None
                victims.append(other)
                violations += group_violates
        if violations and not self.violate_pdbs:
            self.blocking.add(_PDBS)
            return None
        return _NodeChoice(
            base.name, tuple(sort_by_importance(victims, self.now)), tuple(going), violations
        )

    def _remove(self, state: CycleState, member: Pod, other: Pod, node: NodeInfo) -> bool:
        if not node.remove_pod(other):
            return False
        status = self.framework.run_pre_filter_extension_remove_pod(state, member, other, node)
        return status.is_success()

    def _add(self, state: CycleState, member: Pod, other: Pod, node: NodeInfo) -> bool:
        node.add_pod(other)
        status = self.framework.run_pre_filter_extension_add_pod(state, member, other, node)
        return status.is_success()

    # Placing ---------------------------------------------------------------------------------

    def _commit(self, member: _Member, choice: _NodeChoice) -> None:
        """Apply ``choice`` to the plan's copy of the node and to every other member's state;
        a member whose PreFilter extensions fail on it can no longer be placed."""
        name = choice.node
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = self.request.snapshot.node_info_map[name].clone()
        broken: set[int] = set()
        for gone in (*choice.going, *choice.victims):
            node.remove_pod(gone)
            self._tell_pending(
                self.framework.run_pre_filter_extension_remove_pod, gone, node, broken
            )
        placed = member.pod.assigned_to(name)
        node.add_pod(placed)
        self._tell_pending(self.framework.run_pre_filter_extension_add_pod, placed, node, broken)
        later_states = [other.state for other in self.pending]
        for plugin in self.framework.plugins.all:
            if isinstance(plugin, GangPlanningPlugin):
                plugin.planned_on(member.state, member.pod, name, later_states)
        self.pending = [other for index, other in enumerate(self.pending) if index not in broken]
        self.placements[member.pod.uid] = name
        if choice.victims:
            self.victims.extend(choice.victims)
            self.victims_by_node.setdefault(name, []).extend(choice.victims)
            self.violations += choice.violations
            for victim in choice.victims:
                group = self.request.group_of(victim)
                if group is not None:
                    self.taken_from_group[group.key] = self.taken_from_group.get(group.key, 0) + 1

    def _tell_pending(
        self,
        extension: Callable[[CycleState, Pod, Pod, NodeInfo], Status],
        changed: Pod,
        node: NodeInfo,
        broken: set[int],
    ) -> None:
        """Run a PreFilter extension (RemovePod or AddPod of ``changed`` on ``node``) for every
        pending member, adding to ``broken`` the index of each member it fails for."""
        for index, other in enumerate(self.pending):
            if not extension(other.state, other.pod, changed, node).is_success():
                broken.add(index)
