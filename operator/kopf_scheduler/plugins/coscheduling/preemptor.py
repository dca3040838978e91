"""The seam through which a gang-wide preemption joins Coscheduling's PostFilter.

DefaultPreemption looks for victims for one pod; a group that misses room for several members
needs victims chosen for all of them at once. Whatever does that is given to the plugin at
construction and asked first whenever a member fails its filters; the plugin works the same
without one. :mod:`.gang_preemption` is the one built by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kopf_scheduler import plugin_api as api
    from kopf_scheduler.model.pod import Pod


class GangPreemptor(Protocol):
    def preempt_for_group(
        self, framework: api.Framework, state: api.CycleState, pod: Pod, group_key: str
    ) -> tuple[api.PostFilterResult | None, api.Status] | None:
        """Make room for the group ``group_key`` that ``pod`` belongs to; the PostFilter result
        and status to return, or ``None`` when it did not handle the group (the plugin then
        rejects the group's waiting members as without it)."""
