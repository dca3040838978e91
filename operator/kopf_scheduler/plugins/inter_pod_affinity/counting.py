"""A faster source of InterPodAffinity's topology counts and weights, which the scheduler may
offer.

PreFilter and PreScore match affinity terms against every existing pod of the cluster, which is
what they spend their time on. An :class:`AffinityCounter` written under
:data:`AFFINITY_COUNTER_KEY` in the cycle state answers instead; without one, the plugin counts
from the node columns the scheduler offers (:mod:`.batch`), which keep per-node counts in step
with the snapshot. It walks the pods itself when nothing is offered or the counter declines;
the results are the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from kopf_scheduler import plugin_api as api

if TYPE_CHECKING:
    from kopf_scheduler.model.affinity import AffinityTerm
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.plugins.inter_pod_affinity.filtering import TopologyCounts
    from kopf_scheduler.plugins.inter_pod_affinity.scoring import TopologyScorer, TopologyScores


class AffinityCounter(Protocol):
    """Each method answers for all of ``nodes`` (the snapshot's node list), or returns ``None``
    when it cannot."""

    def existing_anti_affinity_counts(
        self, pod: Pod, namespace_labels: Mapping[str, str], nodes: Sequence[api.NodeInfo]
    ) -> TopologyCounts | None:
        """What :func:`.filtering.existing_anti_affinity_counts` computes."""

    def incoming_affinity_counts(
        self,
        affinity_terms: Sequence[AffinityTerm],
        anti_affinity_terms: Sequence[AffinityTerm],
        nodes: Sequence[api.NodeInfo],
    ) -> tuple[TopologyCounts, TopologyCounts] | None:
        """What :func:`.filtering.incoming_affinity_counts` computes."""

    def topology_scores(
        self, scorer: TopologyScorer, nodes: Sequence[api.NodeInfo]
    ) -> TopologyScores | None:
        """The scores ``scorer`` accumulates over every pod of ``nodes``."""


AFFINITY_COUNTER_KEY: api.StateKey[AffinityCounter] = api.StateKey("InterPodAffinityCounter")
