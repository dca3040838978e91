"""Preempt: the numbered steps of upstream's ``Evaluator.Preempt``
(``pkg/scheduler/framework/preemption/preemption.go``, v1.34).

0. Re-read the preemptor from the watch cache (gone: Error).
1. Check it may preempt (``preemptionPolicy: Never``; victims of an earlier preemption still
   terminating on its nominated node): if not, Unschedulable with the reason and no change to
   its nomination.
2. Find candidates: the nodes whose filter status was Unschedulable, dry-run on clones
   (:mod:`~kopf_scheduler.preemption.candidates`). Errors with no candidate at all: Error.
   With ``pdbPolicy: Strict`` (our addition) candidates that would violate a
   PodDisruptionBudget are dropped here.
3. No candidate: Unschedulable with a FitError message built from the dry-run statuses (nodes
   not tried read "Preemption is not helpful for scheduling"), and the nomination is cleared.
4. (Extenders filter the candidates upstream; kopf-scheduler has no extenders.)
5. Select the best candidate (:func:`~kopf_scheduler.preemption.candidates.select_candidate`).
6. Prepare it: preempt the victims, asynchronously by default
   (:mod:`~kopf_scheduler.preemption.executor`).
7. Success, nominating the chosen node. The scheduling cycle itself still fails; the pod retries
   and usually lands on the nominated node once the victims are gone.

Every call leaves a :class:`~kopf_scheduler.preemption.record.PreemptionRecord` in the
CycleState under :data:`~kopf_scheduler.preemption.record.PREEMPTION_RECORD`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodeToStatus,
    NominatingInfo,
    PostFilterResult,
)
from kopf_scheduler.model.pod import PREEMPT_NEVER, Pod
from kopf_scheduler.preemption.candidates import (
    Candidate,
    DryRunResult,
    candidate_record,
    dry_run_preemption,
    get_offset_and_num_candidates,
    potential_nodes,
    select_candidate,
)
from kopf_scheduler.preemption.executor import Executor
from kopf_scheduler.preemption.record import (
    CRITERION_PDB_POLICY_STRICT,
    OUTCOME_ERROR,
    OUTCOME_NO_CANDIDATE,
    OUTCOME_NOMINATED,
    OUTCOME_NOT_ELIGIBLE,
    PREEMPTION_RECORD,
    CandidateRecord,
    PreemptionRecord,
)
from kopf_scheduler.preemption.victims import IsEligiblePod, is_preemption_allowed

PDB_POLICY_BEST_EFFORT = "BestEffort"
PDB_POLICY_STRICT = "Strict"
PDB_POLICIES = (PDB_POLICY_BEST_EFFORT, PDB_POLICY_STRICT)

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE_NODE = "no candidate node for preemption"
NO_NODES_AVAILABLE = "no nodes available"
STRICT_PDB_REASON = "Preemption would violate a PodDisruptionBudget (pdbPolicy=Strict)"
"""Node status of every candidate dropped by the Strict PDB policy; it shows up in the
FailedScheduling message, e.g. ``preemption: 0/3 nodes are available: 1 Insufficient cpu,
2 Preemption would violate a PodDisruptionBudget (pdbPolicy=Strict).``"""


@dataclass(frozen=True)
class PreemptionSettings:
    """How the evaluator searches and acts (DefaultPreemptionArgs plus the execution mode)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    pdb_policy: str = PDB_POLICY_BEST_EFFORT
    async_preemption: bool = True


def _aggregate_message(errors: Sequence[Status]) -> str:
    """Go's ``utilerrors.NewAggregate(...).Error()`` formatting."""
    messages = [status.message() for status in errors]
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


class Evaluator:
    """Runs preemption for one profile; keeps the state of background preemptions."""

    def __init__(
        self,
        handle: Handle,
        settings: PreemptionSettings | None = None,
        plugin_name: str = "DefaultPreemption",
        is_eligible_pod: IsEligiblePod | None = None,
    ) -> None:
        self.handle = handle
        self.settings = settings if settings is not None else PreemptionSettings()
        self.plugin_name = plugin_name
        self.is_eligible_pod = is_eligible_pod
        self.executor = Executor(handle, plugin_name)

    def is_pod_running_preemption(self, uid: str) -> bool:
        return self.executor.is_pod_running_preemption(uid)

    # Step 1 ----------------------------------------------------------------------------------

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_node_status: Status
    ) -> tuple[bool, str]:
        """Upstream's PodEligibleToPreemptOthers: ``(eligible, reason if not)``."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node_info = self.handle.snapshot.get(nominated)
            if node_info is not None:
                for other in node_info.pods:
                    if not is_preemption_allowed(other, pod):
                        continue
                    if self.is_eligible_pod is not None and not self.is_eligible_pod(
                        node_info, other, pod
                    ):
                        continue
                    if other.is_preempted_by_scheduler:
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # The whole attempt -----------------------------------------------------------------------

    def preempt(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Returns the PostFilter result and status (without the "preemption: " prefix)."""
        handle = self.handle
        settings = self.settings
        record = PreemptionRecord(
            preemptor=pod.key, outcome=OUTCOME_ERROR, pdb_policy=settings.pdb_policy
        )

        def finish(
            result: PostFilterResult | None,
            status: Status,
            *,
            outcome: str = OUTCOME_ERROR,
            reason: str = "",
            node_statuses: tuple[tuple[str, str], ...] | None = None,
        ) -> tuple[PostFilterResult | None, Status]:
            final = replace(record, outcome=outcome, reason=reason)
            if node_statuses is not None:
                final = replace(final, node_statuses=node_statuses)
            state.write(PREEMPTION_RECORD, final)
            return result, status

        # 0) The latest version of the preemptor.
        latest = handle.get_pod(pod.key)
        if latest is None:
            message = f'pod "{pod.name}" not found'
            return finish(None, Status.from_error(LookupError(message)), reason=message)
        pod = latest

        # 1) May it preempt at all?
        eligible, why = self.pod_eligible_to_preempt_others(
            pod, node_to_status.get(pod.nominated_node_name)
        )
        if not eligible:
            return finish(
                None, Status(Code.UNSCHEDULABLE, why), outcome=OUTCOME_NOT_ELIGIBLE, reason=why
            )

        # 2) Candidates.
        framework = handle.framework
        snapshot = handle.snapshot
        num_all_nodes = snapshot.num_nodes()
        if num_all_nodes == 0:
            return finish(
                None, Status.from_error(RuntimeError(NO_NODES_AVAILABLE)), reason=NO_NODES_AVAILABLE
            )
        if framework is None:
            message = "no framework is attached to the handle"
            return finish(None, Status.from_error(RuntimeError(message)), reason=message)
        now = handle.now()
        nodes = potential_nodes(snapshot, node_to_status)
        offset = num_candidates = 0
        if nodes:
            pdbs = handle.pdbs()
            offset, num_candidates = get_offset_and_num_candidates(
                handle.rng,
                len(nodes),
                settings.min_candidate_nodes_percentage,
                settings.min_candidate_nodes_absolute,
            )
            dry_run = dry_run_preemption(
                framework,
                state,
                pod,
                nodes,
                pdbs,
                offset=offset,
                num_candidates=num_candidates,
                now=now,
                is_eligible_pod=self.is_eligible_pod,
            )
        else:
            dry_run = DryRunResult(candidates=[], node_to_status=NodeToStatus())
        record = replace(
            record,
            potential_nodes=len(nodes),
            offset=offset,
            num_candidates=num_candidates,
            node_statuses=tuple(
                (name, status.message()) for name, status in dry_run.node_to_status
            ),
        )
        candidates = dry_run.candidates
        if dry_run.errors and not candidates:
            message = _aggregate_message(dry_run.errors)
            error = dry_run.errors[0].error if len(dry_run.errors) == 1 else None
            return finish(None, Status(Code.ERROR, message, error=error), reason=message)

        pdb_rejected: tuple[CandidateRecord, ...] = ()
        if settings.pdb_policy == PDB_POLICY_STRICT:
            candidates, pdb_rejected = self._drop_pdb_violating(dry_run, now)
            record = replace(record, pdb_rejected=pdb_rejected)

        # 3) No candidate: say why on every node, and clear the nomination.
        if not candidates:
            statuses = dry_run.node_to_status
            statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)
            fit_error = FitError(pod, num_all_nodes, Diagnosis(node_to_status=statuses))
            message = str(fit_error)
            return finish(
                PostFilterResult(NominatingInfo.clear()),
                Status(Code.UNSCHEDULABLE, message),
                outcome=OUTCOME_NO_CANDIDATE,
                reason=message,
                node_statuses=tuple((name, status.message()) for name, status in statuses),
            )

        # 5) The best candidate.
        selection = select_candidate(candidates, now)
        if selection is None:
            return finish(
                None,
                Status(Code.UNSCHEDULABLE, NO_CANDIDATE_NODE),
                outcome=OUTCOME_NO_CANDIDATE,
                reason=NO_CANDIDATE_NODE,
            )
        best = selection.candidate
        record = replace(
            record,
            nominated_node=best.node,
            victims=tuple(victim.key for victim in best.victims),
            num_pdb_violations=best.num_pdb_violations,
            deciding_criterion=selection.deciding_criterion,
            candidates=selection.records,
        )

        # 6) Preempt the victims.
        if settings.async_preemption:
            try:
                self.executor.prepare_candidate_async(best, pod)
            except Exception as error:
                return finish(None, Status.from_error(error), reason=str(error))
        else:
            status = self.executor.prepare_candidate_sync(best, pod)
            if not status.is_success():
                return finish(None, status, reason=status.message())

        # 7) Nominate the node.
        return finish(
            PostFilterResult(NominatingInfo.override(best.node)),
            SUCCESS,
            outcome=OUTCOME_NOMINATED,
        )

    def _drop_pdb_violating(
        self, dry_run: DryRunResult, now: float
    ) -> tuple[list[Candidate], tuple[CandidateRecord, ...]]:
        """Strict PDB policy: keep only candidates that violate no PodDisruptionBudget and give
        the others a node status saying why they were not used."""
        kept = [c for c in dry_run.candidates if c.num_pdb_violations == 0]
        rejected: list[CandidateRecord] = []
        violating = [c for c in dry_run.candidates + dry_run.dropped if c.num_pdb_violations]
        for index, candidate in enumerate(violating, start=len(kept)):
            rejected.append(candidate_record(candidate, index, now, CRITERION_PDB_POLICY_STRICT))
            status = Status(Code.UNSCHEDULABLE, STRICT_PDB_REASON)
            dry_run.node_to_status.set(candidate.node, status)
        return kept, tuple(rejected)
