"""Gang preemption carried out: the GangPreemptor Coscheduling uses by default.

Why
    The planner (:mod:`kopf_scheduler.preemption.gang_planner`) decides over the snapshot where a
    group's missing members go and whom to evict for them. The rest is what DefaultPreemption
    does around its own search, done once for the group: check that the group may preempt now,
    gather what the planner needs, and carry a plan out through the executor per-pod preemption
    uses (DisruptionTarget condition, deletion, ``Preempted`` event, victims waiting at Permit
    rejected), so that a gang's victim looks exactly like any other victim.

Steps
    1. Eligibility, upstream's per-pod rule applied to the group: while a member nominated to a
       node still finds lower-priority pods there terminating by preemption, the group waits
       for them: Unschedulable, nothing planned or evicted again. A preemptor with
       ``preemptionPolicy: Never`` leaves the group unhandled.
    2. The request: the group's members not on a node, ``pod`` first; ``needed`` is
       ``minMember`` minus the members placed; every pod's group from the PodGroup store; the
       PodDisruptionBudgets; the settings of the profile's DefaultPreemption when it has one.
    3. No plan: the group is not handled, and nothing is evicted. A plan after which the nodes
       could still not hold the group's ``minResources`` (PreFilter's check, which it leaves
       to the plan) is no plan either. Either way the decision record says why.
    4. A plan: every planned member is nominated to its node (in the nominator and in
       ``status.nominatedNodeName``; ``pod``'s own nomination is the PostFilter result, which the
       failure handler writes), lower-priority pods nominated to the victims' nodes lose their
       nomination, and the victims are preempted, in the background unless the profile's
       preemption is synchronous. The victims' deletions requeue the members. The decision
       record lists every victim, node by node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import PREEMPT_NEVER, Pod
from kopf_scheduler.model.pod_group import pod_group_key
from kopf_scheduler.plugins.coscheduling.resource_gap import describe_gap, resource_gap
from kopf_scheduler.preemption.evaluator import Evaluator, PreemptionSettings
from kopf_scheduler.preemption.executor import (
    METRIC_PREEMPTION_VICTIMS,
    Executor,
    SuspendedError,
    run_to_completion,
)
from kopf_scheduler.preemption.gang_planner import (
    GangPlan,
    GangRequest,
    GroupInfo,
    GroupOf,
    plan_gang_preemption,
)
from kopf_scheduler.preemption.record import (
    CRITERION_GANG_PLAN,
    OUTCOME_NO_CANDIDATE,
    OUTCOME_NOMINATED,
    PREEMPTION_RECORD,
    PreemptionRecord,
)
from kopf_scheduler.preemption.victims import is_preemption_allowed

NO_PLAN = "gang preemption"
"""How a refusal to plan starts, in the preemption record's reason."""
WAITING_FOR_VICTIMS = "waiting for the victims of the group's preemption to terminate"
PLACED_ELSEWHERE = "the group's preemption made room for other members"


class GangPreemption:
    """Makes room for a whole group, through the handle of the profile it serves."""

    def __init__(self, handle: api.Handle, plugin_name: str) -> None:
        self._handle = handle
        self._executor = Executor(handle, plugin_name)
        self._planned: dict[str, dict[str, str]] = {}
        """Group key -> member UID -> node of the group's last plan: the nominations until the
        watch shows them on the pods."""

    def preempt_for_group(
        self, framework: api.Framework, state: api.CycleState, pod: Pod, group_key: str
    ) -> tuple[api.PostFilterResult | None, api.Status] | None:
        handle = self._handle
        self._forget_deleted_groups()
        group = handle.pod_groups.get(group_key)
        if group is None or pod.preemption_policy == PREEMPT_NEVER:
            return None
        snapshot = handle.snapshot
        placed_uids, placed_by_group = _placed(snapshot)
        members = _pending_members(handle.pod_groups, group_key, pod, placed_uids)
        if self._victims_still_going(group_key, members, snapshot):
            return None, api.Status(api.Code.UNSCHEDULABLE, WAITING_FOR_VICTIMS)
        settings = _preemption_settings(framework)
        needed = max(0, group.min_member - placed_by_group[group_key])
        plan = plan_gang_preemption(
            GangRequest(
                members=members,
                needed=needed,
                framework=framework,
                snapshot=snapshot,
                pdbs=handle.pdbs(),
                group_of=_group_of(handle.pod_groups, placed_by_group),
                now=handle.now(),
                settings=settings,
            )
        )
        refusal = ""
        if plan is None or not plan.placements:
            refusal = f"{NO_PLAN}: no room can be made for {needed} members of PodGroup {group_key}"
        else:
            # PreFilter left the free capacity to the plan: the plan must leave room for it.
            gap = resource_gap(group, _after(snapshot, plan))
            if gap is not None:
                refusal = (
                    f"{NO_PLAN}: PodGroup {group_key} would still lack its minResources, "
                    f"{describe_gap(gap)}"
                )
        if plan is None or refusal:
            self._planned.pop(group_key, None)
            state.write(
                PREEMPTION_RECORD,
                PreemptionRecord(pod.key, OUTCOME_NO_CANDIDATE, reason=refusal),
            )
            return None
        self._planned[group_key] = dict(plan.placements)
        by_uid = {member.uid: member for member in members}
        others = [(by_uid[uid], node) for uid, node in plan.placements.items() if uid != pod.uid]
        for member, node in others:
            handle.nominator.add_nominated_pod(member, api.NominatingInfo.override(node))
        own_node = plan.placements.get(pod.uid)
        state.write(PREEMPTION_RECORD, _record(pod, own_node or "", plan))
        status = self._carry_out(plan, by_uid, others, settings.async_preemption)
        if not status.is_success():
            return None, status
        if own_node is None:
            return None, api.Status(api.Code.UNSCHEDULABLE, PLACED_ELSEWHERE)
        return api.PostFilterResult(api.NominatingInfo.override(own_node)), api.SUCCESS

    def _forget_deleted_groups(self) -> None:
        """Drop the last plans of groups that no longer exist: jobs come and go with their
        PodGroups, and a long-running scheduler must not keep a plan for each one it saw."""
        for key in [key for key in self._planned if self._handle.pod_groups.get(key) is None]:
            del self._planned[key]

    def _victims_still_going(
        self, group_key: str, members: Sequence[Pod], snapshot: api.Snapshot
    ) -> bool:
        planned = self._planned.get(group_key, {})
        for member in members:
            node_name = member.nominated_node_name or planned.get(member.uid)
            node = snapshot.get(node_name) if node_name else None
            if node is None:
                continue
            if any(
                is_preemption_allowed(other, member) and other.is_preempted_by_scheduler
                for other in node.pods
            ):
                return True
        return False

    def _carry_out(
        self,
        plan: GangPlan,
        by_uid: dict[str, Pod],
        others: list[tuple[Pod, str]],
        in_background: bool,
    ) -> api.Status:
        handle = self._handle
        preemptor_on = {node: by_uid[uid] for uid, node in plan.placements.items()}
        handle.metrics.observe(
            METRIC_PREEMPTION_VICTIMS, sum(len(pods) for pods in plan.victims_by_node.values())
        )
        work = self._preempt(plan, preemptor_on, others, frozenset(by_uid))
        if in_background:
            try:
                handle.spawn(self._in_background(work))
            except Exception as error:
                return api.Status.from_error(error)
            return api.SUCCESS
        try:
            failure = run_to_completion(work)
        except SuspendedError as error:
            return api.Status.from_error(error)
        return api.SUCCESS if failure is None else api.Status.from_error(failure)

    @staticmethod
    async def _in_background(work: Coroutine[Any, Any, Exception | None]) -> None:
        await work

    async def _preempt(
        self,
        plan: GangPlan,
        preemptor_on: dict[str, Pod],
        others: list[tuple[Pod, str]],
        gang: frozenset[str],
    ) -> Exception | None:
        """Nominations first (so no other pod takes the room), then the victims. The first
        failure stops it and sends the other members back to the active queue, so that they
        do not wait for room that is not coming; it is returned."""
        executor = self._executor
        try:
            await self._write_nominations(others)
            for node, victims in plan.victims_by_node.items():
                preemptor = preemptor_on[node]
                lower = [
                    other
                    for other in executor.lower_priority_nominated_pods(preemptor, node)
                    if other.uid not in gang
                ]
                # As upstream, a nomination that could not be cleared does not stop preemption.
                await executor.clear_nominated_node_name(lower)
                for victim in victims:
                    await executor.preempt_pod(node, preemptor, victim)
        except Exception as error:
            self._handle.activate([member for member, _ in others])
            return error
        return None

    async def _write_nominations(self, nominations: Iterable[tuple[Pod, str]]) -> None:
        writer = self._handle.status_writer
        if writer is None:
            raise RuntimeError("no pod status writer is attached to the handle")
        for member, node in nominations:
            if member.nominated_node_name != node:
                await writer.patch_status(
                    member,
                    api.PodStatusPatch(set_nominated_node_name=True, nominated_node_name=node),
                )


def _after(snapshot: api.Snapshot, plan: GangPlan) -> list[api.NodeInfo]:
    """The nodes as the plan leaves them: its victims and the pods already terminating gone
    (their room is coming back; the plan counted it as free)."""
    nodes = []
    for info in snapshot.node_info_list:
        gone = [pod for pod in info.pods if pod.is_terminating]
        gone.extend(plan.victims_by_node.get(info.name, ()))
        if gone:
            info = info.clone()  # noqa: PLW2901
            for pod in gone:
                info.remove_pod(pod)
        nodes.append(info)
    return nodes


def _record(pod: Pod, own_node: str, plan: GangPlan) -> PreemptionRecord:
    """The decision record of a plan: every victim, and where each one goes from."""
    by_node = tuple(
        (node, tuple(victim.key for victim in victims))
        for node, victims in plan.victims_by_node.items()
    )
    return PreemptionRecord(
        pod.key,
        OUTCOME_NOMINATED,
        nominated_node=own_node,
        victims=tuple(key for _, keys in by_node for key in keys),
        num_pdb_violations=plan.pdb_violations,
        deciding_criterion=CRITERION_GANG_PLAN,
        victims_by_node=by_node,
    )


def _placed(snapshot: api.Snapshot) -> tuple[frozenset[str], Counter[str]]:
    """UIDs of the pods on a node (bound or assumed), and how many of each group's."""
    uids: set[str] = set()
    by_group: Counter[str] = Counter()
    for info in snapshot.node_info_list:
        for pod in info.pods:
            uids.add(pod.uid)
            key = pod_group_key(pod.namespace, pod.labels)
            if key is not None:
                by_group[key] += 1
    return frozenset(uids), by_group


def _pending_members(
    lister: api.PodGroupLister, group_key: str, pod: Pod, placed: frozenset[str]
) -> list[Pod]:
    """The group's members on no node, ``pod`` first, then by ``namespace/name``."""
    others = sorted(
        (
            member
            for member in lister.members(group_key)
            if member.uid != pod.uid and not member.node_name and member.uid not in placed
        ),
        key=lambda member: member.key,
    )
    return [pod, *others]


def _group_of(lister: api.PodGroupLister, placed_by_group: Counter[str]) -> GroupOf:
    known: dict[str, GroupInfo | None] = {}

    def group_of(pod: Pod) -> GroupInfo | None:
        key = pod_group_key(pod.namespace, pod.labels)
        if key is None:
            return None
        if key not in known:
            group = lister.get(key)
            known[key] = GroupInfo(key, group.min_member, placed_by_group[key]) if group else None
        return known[key]

    return group_of


def _preemption_settings(framework: api.Framework) -> PreemptionSettings:
    """The profile's DefaultPreemption settings, or the defaults when it has none."""
    for plugin in framework.plugins.post_filter:
        evaluator = getattr(plugin, "evaluator", None)
        if isinstance(evaluator, Evaluator):
            return evaluator.settings
    return PreemptionSettings()
