"""A faster source of PodTopologySpread's per-domain pod counts, which the scheduler may offer.

Counting the pods a constraint selects on every node of the cluster is what PreFilter and
PreScore spend their time on. A :class:`DomainCounter` written under :data:`DOMAIN_COUNTER_KEY`
in the cycle state answers instead; without one, the plugin counts from the node columns the
scheduler offers (:mod:`.batch`), which keep per-node counts in step with the snapshot. It walks
every node's pods itself when nothing is offered or the counter declines; the counts are the
same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kopf_scheduler import plugin_api as api

if TYPE_CHECKING:
    from kopf_scheduler.model.affinity import TopologySpreadConstraint
    from kopf_scheduler.model.pod import Pod


class DomainCounter(Protocol):
    def domain_totals(
        self,
        pod: Pod,
        constraints: Sequence[TopologySpreadConstraint],
        nodes: Sequence[api.NodeInfo],
        *,
        require_all_keys: bool,
        indices: Sequence[int],
    ) -> dict[int, dict[str, int]] | None:
        """For each constraint at ``indices``: its domains and the pods in ``pod``'s namespace
        that its selector matches in each, leaving out terminating pods (an empty selector
        counts none).

        A node counts when it passes the constraint's inclusion policies for ``pod`` and, with
        ``require_all_keys``, carries every constraint's topology key; without, a node lacking
        the constraint's key belongs to the domain ``""``. Domains are listed in the order in
        which ``nodes`` first name them. ``None`` when the counter cannot answer for ``nodes``.
        """


DOMAIN_COUNTER_KEY: api.StateKey[DomainCounter] = api.StateKey("PodTopologySpreadDomainCounter")
