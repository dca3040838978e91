"""Finding preemption candidates and choosing one: upstream's findCandidates, DryRunPreemption
and SelectCandidate (``pickOneNodeForPreemption``).

Which nodes are tried
    Only nodes whose filter status in this cycle was exactly Unschedulable; an
    UnschedulableAndUnresolvable node cannot be fixed by removing pods. Nodes without an
    explicit status take the map's "absent" status, which is UnschedulableAndUnresolvable unless
    a PreFilter rejected the pod with plain Unschedulable (then every node is tried). Nodes are
    listed in snapshot order (upstream uses Go map order when only explicit entries match).

How many
    ``numCandidates = max(n * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``,
    capped at ``n`` (integer arithmetic). The dry run starts at a random offset (from the
    handle's seeded RNG) and wraps around.

The dry run
    Each node is tried on clones of its NodeInfo and of the CycleState. A node that can be made
    to fit becomes a candidate in one of two lists, by whether any of its victims violates a
    PDB. Both lists hold at most ``numCandidates`` entries; later ones are dropped. The run stops
    as soon as there is at least one non-violating candidate and the two lists together hold
    ``numCandidates``. Upstream runs 16 nodes in parallel, so a few more nodes may be tried
    there before the stop takes effect; here nodes are tried one at a time, exactly like
    upstream's tests with parallelism 1.

Choosing
    The non-violating candidates come first, then the violating ones. SelectCandidate keeps the
    candidates with the best value of each criterion in turn until one remains: fewest PDB
    violations; lowest priority of the most important victim; smallest sum of
    ``priority + 2**31``; fewest victims; latest start time of the highest-priority victims.
    Any tie left is broken by dry-run order (the first candidate wins), which is as random as
    the offset; upstream takes the first node of a Go map iteration.

Acceleration
    When the framework carries a dry-run accelerator (the scheduler's vectorised fast path),
    nodes it can decide exactly are decided without cloning; every other node goes through
    :func:`~kopf_scheduler.preemption.victims.select_victims_on_node` as usual.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.record import (
    CRITERION_DRY_RUN_ORDER,
    CRITERION_FEWEST_PDB_VIOLATIONS,
    CRITERION_FEWEST_VICTIMS,
    CRITERION_LATEST_START_TIME,
    CRITERION_LOWEST_HIGHEST_PRIORITY,
    CRITERION_ONLY_CANDIDATE,
    CRITERION_SMALLEST_PRIORITY_SUM,
    CandidateCriteria,
    CandidateRecord,
)
from kopf_scheduler.preemption.victims import (
    IsEligiblePod,
    VictimSelection,
    pod_start_time,
    select_victims_on_node,
)

PRIORITY_OFFSET = 2**31
"""Added to every victim priority in the sum criterion (upstream: ``math.MaxInt32 + 1``)."""


@dataclass(frozen=True)
class Candidate:
    """A node the preemptor fits on once ``victims`` are gone."""

    node: str
    victims: tuple[Pod, ...]
    """Most important first."""
    num_pdb_violations: int = 0


def potential_nodes(snapshot: Snapshot, node_to_status: NodeToStatus) -> list[NodeInfo]:
    """Nodes whose filter status is Unschedulable (the ones removing pods might fix)."""
    names = node_to_status.nodes_with_code(
        (info.name for info in snapshot.node_info_list), Code.UNSCHEDULABLE
    )
    infos = snapshot.node_info_map
    return [infos[name] for name in names]


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """How many candidates the dry run aims for among ``num_nodes`` potential nodes."""
    count = num_nodes * percentage // 100
    count = max(count, absolute)
    return min(count, num_nodes)


def get_offset_and_num_candidates(
    rng: random.Random, num_nodes: int, percentage: int, absolute: int
) -> tuple[int, int]:
    """A uniformly random start offset in ``[0, num_nodes)`` and the candidate target."""
    return rng.randrange(num_nodes), calculate_num_candidates(num_nodes, percentage, absolute)


class _BoundedList:
    """Keeps the first ``capacity`` candidates; later ones are counted as dropped."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: list[Candidate] = []
        self.dropped: list[Candidate] = []

    def add(self, candidate: Candidate) -> None:
        if len(self.items) < self.capacity:
            self.items.append(candidate)
        else:
            self.dropped.append(candidate)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class DryRunResult:
    candidates: list[Candidate]
    """Non-violating candidates first, then violating ones, each in dry-run order."""
    node_to_status: NodeToStatus
    """Why each rejected node cannot be used (absent status: UnschedulableAndUnresolvable)."""
    errors: list[Status] = field(default_factory=list)
    """Error statuses met on the way (reported only when there is no candidate at all)."""
    evaluated: list[str] = field(default_factory=list)
    """Nodes tried, in order."""
    dropped: list[Candidate] = field(default_factory=list)
    """Candidates found beyond a full list (violating ones, in practice)."""


def dry_run_preemption(
    framework: Framework,
    state: CycleState,
    preemptor: Pod,
    nodes: Sequence[NodeInfo],
    pdbs: Sequence[PodDisruptionBudget],
    *,
    offset: int,
    num_candidates: int,
    now: float,
    is_eligible_pod: IsEligiblePod | None = None,
) -> DryRunResult:
    """Try preemption on ``nodes`` starting at ``offset``; see the module docstring."""
    non_violating = _BoundedList(num_candidates)
    violating = _BoundedList(num_candidates)
    statuses = NodeToStatus()
    errors: list[Status] = []
    evaluated: list[str] = []
    count = len(nodes)
    finder: Callable[[NodeInfo], VictimSelection | None] | None = None
    accelerator = framework.dry_run_accelerator
    if accelerator is not None and is_eligible_pod is None:
        finder = accelerator.victim_finder(framework, state, preemptor, pdbs, now)
    for step in range(count):
        node_info = nodes[(offset + step) % count]
        name = node_info.name
        evaluated.append(name)
        selection = finder(node_info) if finder is not None else None
        if selection is None:
            selection = select_victims_on_node(
                framework,
                state,
                preemptor,
                node_info,
                pdbs,
                now=now,
                is_eligible_pod=is_eligible_pod,
            )
        status = selection.status
        if status.is_success() and selection.victims:
            candidate = Candidate(name, tuple(selection.victims), selection.num_violating)
            (violating if selection.num_violating else non_violating).add(candidate)
            if len(non_violating) > 0 and len(non_violating) + len(violating) >= num_candidates:
                break
            continue
        if status.is_success():
            status = Status.from_error(
                RuntimeError(f'expected at least one victim pod on node "{name}"')
            )
        if status.code == Code.ERROR:
            errors.append(status)
        statuses.set(name, status)
    return DryRunResult(
        candidates=non_violating.items + violating.items,
        node_to_status=statuses,
        errors=errors,
        evaluated=evaluated,
        dropped=non_violating.dropped + violating.dropped,
    )


def earliest_start_time(victims: Sequence[Pod], now: float) -> float:
    """Earliest start time among the victims with the highest priority."""
    top = victims[0].priority
    earliest = pod_start_time(victims[0], now)
    for pod in victims:
        if pod.priority == top:
            earliest = min(earliest, pod_start_time(pod, now))
        elif pod.priority > top:
            top = pod.priority
            earliest = pod_start_time(pod, now)
    return earliest


def candidate_criteria(candidate: Candidate, index: int, now: float) -> CandidateCriteria:
    victims = candidate.victims
    return CandidateCriteria(
        num_pdb_violations=candidate.num_pdb_violations,
        highest_victim_priority=victims[0].priority,
        priority_sum=sum(pod.priority + PRIORITY_OFFSET for pod in victims),
        num_victims=len(victims),
        earliest_start_time=earliest_start_time(victims, now),
        dry_run_index=index,
    )


_SCORE_FUNCTIONS: tuple[tuple[str, Callable[[CandidateCriteria], float]], ...] = (
    (CRITERION_FEWEST_PDB_VIOLATIONS, lambda c: -c.num_pdb_violations),
    (CRITERION_LOWEST_HIGHEST_PRIORITY, lambda c: -c.highest_victim_priority),
    (CRITERION_SMALLEST_PRIORITY_SUM, lambda c: -c.priority_sum),
    (CRITERION_FEWEST_VICTIMS, lambda c: -c.num_victims),
    (CRITERION_LATEST_START_TIME, lambda c: c.earliest_start_time),
)
"""Each maps a candidate to a score; higher is better."""


@dataclass(frozen=True)
class Selection:
    candidate: Candidate
    deciding_criterion: str
    records: tuple[CandidateRecord, ...]
    """Every candidate in input order, with its criteria and the criterion it lost on."""


def select_candidate(candidates: Sequence[Candidate], now: float) -> Selection | None:
    """Upstream's SelectCandidate with the default criteria; ``None`` for no candidates."""
    if not candidates:
        return None
    criteria = [candidate_criteria(c, index, now) for index, c in enumerate(candidates)]
    eliminated: dict[int, str] = {}
    remaining = list(range(len(candidates)))
    deciding = CRITERION_ONLY_CANDIDATE
    if len(remaining) > 1:
        deciding = CRITERION_DRY_RUN_ORDER
        for name, score in _SCORE_FUNCTIONS:
            scores = {index: score(criteria[index]) for index in remaining}
            best = max(scores.values())
            kept = [index for index in remaining if scores[index] == best]
            for index in remaining:
                if scores[index] != best:
                    eliminated[index] = name
            remaining = kept
            if len(remaining) == 1:
                deciding = name
                break
        for index in remaining[1:]:
            eliminated[index] = CRITERION_DRY_RUN_ORDER
    winner = remaining[0]
    records = tuple(
        CandidateRecord(
            node=candidate.node,
            victims=tuple(pod.key for pod in candidate.victims),
            criteria=criteria[index],
            eliminated_by=eliminated.get(index, ""),
        )
        for index, candidate in enumerate(candidates)
    )
    return Selection(candidates[winner], deciding, records)


def candidate_record(
    candidate: Candidate, index: int, now: float, eliminated_by: str
) -> CandidateRecord:
    """A record of a candidate that did not take part in the selection."""
    return CandidateRecord(
        node=candidate.node,
        victims=tuple(pod.key for pod in candidate.victims),
        criteria=candidate_criteria(candidate, index, now),
        eliminated_by=eliminated_by,
    )
