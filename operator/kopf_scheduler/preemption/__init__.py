"""Preemption as kube-scheduler v1.34 does it, behind the DefaultPreemption plugin.

``evaluator``   the numbered steps of Preempt (eligibility, candidates, selection, execution)
``candidates``  potential nodes, the dry run with its bounded candidate lists, SelectCandidate
``victims``     SelectVictimsOnNode, the PodDisruptionBudget split, pod importance
``executor``    the API actions (DisruptionTarget condition, delete, event, nominations),
                synchronous or in the background
``record``      the PreemptionRecord each attempt leaves in the CycleState

The plugin module (``plugins/default_preemption.py``) only parses arguments and wires these
into the PostFilter and PreEnqueue extension points.
"""

from kopf_scheduler.preemption.candidates import Candidate, select_candidate
from kopf_scheduler.preemption.evaluator import (
    PDB_POLICY_BEST_EFFORT,
    PDB_POLICY_STRICT,
    Evaluator,
    PreemptionSettings,
)
from kopf_scheduler.preemption.record import (
    PREEMPTION_RECORD,
    CandidateCriteria,
    CandidateRecord,
    PreemptionRecord,
)

__all__ = [
    "PDB_POLICY_BEST_EFFORT",
    "PDB_POLICY_STRICT",
    "PREEMPTION_RECORD",
    "Candidate",
    "CandidateCriteria",
    "CandidateRecord",
    "Evaluator",
    "PreemptionRecord",
    "PreemptionSettings",
    "select_candidate",
]
