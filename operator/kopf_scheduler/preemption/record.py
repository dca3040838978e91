"""What one preemption attempt decided, and why, as plain immutable data.

Upstream logs its preemption reasoning at high verbosity and then throws it away; users asking
"why was *that* pod evicted?" get no answer (kubernetes/kubernetes#58242, cluster-capacity#137).
DefaultPreemption therefore leaves a :class:`PreemptionRecord` in the CycleState under
:data:`PREEMPTION_RECORD` on every PostFilter call. The scheduler reads it after PostFilter to
log, explain or annotate: the chosen node and victims, the PDB violations, every candidate with
the values of the selection criteria and the criterion that decided between them, and, when no
node was nominated, the reason.

All records are frozen dataclasses of tuples and strings, so the CycleState can share them
between clones without copying.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kopf_scheduler.framework.cycle_state import StateKey

# Outcomes of one PostFilter call.
OUTCOME_NOMINATED = "Nominated"
"""A node was chosen and its victims are being (or have been) preempted."""
OUTCOME_NOT_ELIGIBLE = "NotEligible"
"""The preemptor may not preempt now (preemptionPolicy Never, or victims still terminating)."""
OUTCOME_NO_CANDIDATE = "NoCandidate"
"""No node can be made to fit by removing lower-priority pods (or, in Strict mode, without
violating a PodDisruptionBudget)."""
OUTCOME_ERROR = "Error"
"""Something failed (preemptor gone, a plugin error during the dry run, an API call)."""

# Selection criteria, in the order SelectCandidate applies them.
CRITERION_ONLY_CANDIDATE = "OnlyCandidate"
CRITERION_FEWEST_PDB_VIOLATIONS = "FewestPDBViolations"
CRITERION_LOWEST_HIGHEST_PRIORITY = "LowestHighestVictimPriority"
CRITERION_SMALLEST_PRIORITY_SUM = "SmallestPrioritySum"
CRITERION_FEWEST_VICTIMS = "FewestVictims"
CRITERION_LATEST_START_TIME = "LatestStartTime"
CRITERION_DRY_RUN_ORDER = "DryRunOrder"
"""Still tied after every criterion: the first candidate in dry-run order wins. That order
starts at the random offset drawn from the handle's seeded RNG (upstream: Go map order)."""

CRITERION_GANG_PLAN = "GangPreemption"
"""Not a selection criterion: the victims are those of a plan for a whole PodGroup
(:mod:`kopf_scheduler.preemption.gang_planner`), made by Coscheduling's PostFilter."""

CRITERION_PDB_POLICY_STRICT = "PDBPolicyStrict"
"""Not a selection criterion: the candidate was dropped before selection because it would
violate a PodDisruptionBudget and ``pdbPolicy`` is Strict."""

SELECTION_CRITERIA: tuple[str, ...] = (
    CRITERION_FEWEST_PDB_VIOLATIONS,
    CRITERION_LOWEST_HIGHEST_PRIORITY,
    CRITERION_SMALLEST_PRIORITY_SUM,
    CRITERION_FEWEST_VICTIMS,
    CRITERION_LATEST_START_TIME,
    CRITERION_DRY_RUN_ORDER,
)


@dataclass(frozen=True)
class CandidateCriteria:
    """The values SelectCandidate compares, for one candidate node."""

    num_pdb_violations: int
    """Victims whose eviction would exceed a PodDisruptionBudget (fewer is better)."""
    highest_victim_priority: int
    """Priority of the most important victim (lower is better)."""
    priority_sum: int
    """Sum over victims of ``priority + 2**31`` (smaller is better; the offset makes every
    term positive, so an extra victim always costs more)."""
    num_victims: int
    """Fewer is better."""
    earliest_start_time: float
    """Earliest start time (POSIX seconds) among the highest-priority victims; a victim that
    has not started counts as "now". Later is better: it disturbs the youngest workload."""
    dry_run_index: int
    """Position in the dry-run candidate list (non-violating candidates first); the final
    tie-break."""


@dataclass(frozen=True)
class CandidateRecord:
    node: str
    victims: tuple[str, ...]
    """Victim pod keys (``namespace/name``), most important first."""
    criteria: CandidateCriteria
    eliminated_by: str = ""
    """The criterion on which this candidate lost; empty for the chosen candidate."""


@dataclass(frozen=True)
class PreemptionRecord:
    preemptor: str
    """``namespace/name`` of the pod that tried to preempt."""
    outcome: str
    """One of the ``OUTCOME_*`` constants."""
    nominated_node: str = ""
    victims: tuple[str, ...] = ()
    """Keys of the pods chosen for preemption on ``nominated_node``, most important first."""
    num_pdb_violations: int = 0
    deciding_criterion: str = ""
    """The criterion that singled out the chosen candidate (``CRITERION_*``)."""
    candidates: tuple[CandidateRecord, ...] = ()
    """Every candidate that took part in the selection, in dry-run order."""
    reason: str = ""
    """Why no node was nominated (or why the attempt failed); empty on success."""
    pdb_policy: str = "BestEffort"
    potential_nodes: int = 0
    """Nodes whose filter status was Unschedulable (the ones preemption might help)."""
    offset: int = 0
    """Where the dry run started in the potential-node list."""
    num_candidates: int = 0
    """How many candidates the dry run aimed for (minCandidateNodes* arguments)."""
    node_statuses: tuple[tuple[str, str], ...] = ()
    """``(node, message)`` for every node the dry run rejected, in dry-run order."""
    pdb_rejected: tuple[CandidateRecord, ...] = ()
    """Candidates dropped because they would violate a PDB (pdbPolicy Strict only)."""
    victims_by_node: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """A gang plan's victims, node by node (the plan makes room on several nodes at once);
    ``victims`` lists them all."""


PREEMPTION_RECORD: StateKey[PreemptionRecord] = StateKey("DefaultPreemption/record")
"""Where DefaultPreemption leaves its :class:`PreemptionRecord` in the CycleState."""


def _criteria_as_dict(criteria: CandidateCriteria) -> dict[str, Any]:
    return {
        "num_pdb_violations": criteria.num_pdb_violations,
        "highest_victim_priority": criteria.highest_victim_priority,
        "priority_sum": criteria.priority_sum,
        "num_victims": criteria.num_victims,
        "earliest_start_time": criteria.earliest_start_time,
        "dry_run_index": criteria.dry_run_index,
    }


def _candidate_as_dict(candidate: CandidateRecord) -> dict[str, Any]:
    return {
        "node": candidate.node,
        "victims": tuple(candidate.victims),
        "criteria": _criteria_as_dict(candidate.criteria),
        "eliminated_by": candidate.eliminated_by,
    }


def preemption_as_dict(record: PreemptionRecord) -> dict[str, Any]:
    """``dataclasses.asdict(record)``, built directly (a record can list hundreds of
    candidates, and the generic recursive copy dominated the cost of reporting an attempt)."""
    return {
        "preemptor": record.preemptor,
        "outcome": record.outcome,
        "nominated_node": record.nominated_node,
        "victims": tuple(record.victims),
        "num_pdb_violations": record.num_pdb_violations,
        "deciding_criterion": record.deciding_criterion,
        "candidates": tuple(_candidate_as_dict(c) for c in record.candidates),
        "reason": record.reason,
        "pdb_policy": record.pdb_policy,
        "potential_nodes": record.potential_nodes,
        "offset": record.offset,
        "num_candidates": record.num_candidates,
        "node_statuses": tuple(tuple(entry) for entry in record.node_statuses),
        "pdb_rejected": tuple(_candidate_as_dict(c) for c in record.pdb_rejected),
        "victims_by_node": tuple((node, tuple(keys)) for node, keys in record.victims_by_node),
    }
