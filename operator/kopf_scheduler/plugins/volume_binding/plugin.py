"""The VolumeBinding plugin object: its extension points over the volume binding steps.

- PreFilter rejects, UnschedulableAndUnresolvable, a pod whose claims are missing, lost,
  terminating or not its own (:mod:`.claims`), or that has an unbound claim the PV controller
  should bind first (``pod has unbound immediate PersistentVolumeClaims``); a pod without claims
  skips the plugin. Otherwise it records the pod's claims for Filter.
- Filter answers per node (:mod:`.decisions`) and keeps each fitting node's decisions in the
  cycle state for Reserve; its rejections are UnschedulableAndUnresolvable, so preemption never
  picks such a node. When every claim of the pod is bound, the decisions are the same (none) on
  every node and only the bound PVs' node affinity tells nodes apart: the batch form
  (:mod:`.batch`) answers for all nodes at once from the node label columns.
- Score: upstream's plugin is a Score plugin, but it scores only behind the alpha
  ``StorageCapacityScoring`` gate. With the gate off its PreScore always skips, so it is listed
  among the score plugins and never contributes; this one does the same.
- Reserve and Unreserve assume and forget the decisions (:mod:`.reservation`); PreBind writes
  them and waits for the PV controller (:mod:`.prebind`).

There is no AddPod/RemovePod: volumes do not depend on the other pods of a node, so preemption's
dry runs simply run Filter again. The state is shared, never copied, by clones of the cycle
state, as upstream shares it: a dry run's Filter records the same per-node decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.migrated_nodes import MigratedNodes
from kopf_scheduler.plugins.volume_binding.args import Args
from kopf_scheduler.plugins.volume_binding.batch import nodes_admitting_bound_volumes
from kopf_scheduler.plugins.volume_binding.claims import (
    PodVolumeClaims,
    claims_rejection,
    classify_claims,
)
from kopf_scheduler.plugins.volume_binding.decisions import PodVolumes, find_pod_volumes
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError
from kopf_scheduler.plugins.volume_binding.hints import events_to_register
from kopf_scheduler.plugins.volume_binding.prebind import bind_pod_volumes
from kopf_scheduler.plugins.volume_binding.reservation import (
    assume_pod_volumes,
    revert_assumed_pod_volumes,
)

NAME = "VolumeBinding"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
STATE_NOT_FOUND = "not found"
"""What upstream's cycle state reports when the plugin's data is missing."""

NO_CLAIMS = PodVolumeClaims((), (), (), {})


class VolumeBindingState:
    """The pod's claims, each fitting node's decisions, and whether Reserve found all bound."""

    __slots__ = ("all_bound", "claims", "pod_volumes_by_node", "pod_volumes_on_any_node")

    def __init__(self, claims: PodVolumeClaims) -> None:
        self.claims = claims
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.pod_volumes_on_any_node: PodVolumes | None = None
        """The decisions of every node the batch form passed (they are the same everywhere)."""
        self.all_bound = False

    def pod_volumes_on(self, node_name: str) -> PodVolumes | None:
        found = self.pod_volumes_by_node.get(node_name)
        return found if found is not None else self.pod_volumes_on_any_node

    def clone(self) -> VolumeBindingState:
        return self


STATE_KEY: api.StateKey[VolumeBindingState] = api.StateKey(NAME)


def _error(error: VolumeBindingError) -> api.Status:
    return api.Status.from_error(error)


class VolumeBinding:
    name: ClassVar[str] = NAME

    def __init__(self, args: Args, handle: api.Handle) -> None:
        self.args = args
        self._handle = handle
        self._migration: MigratedNodes | None = None

    # PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        storage = self._handle.storage
        uses_claims, rejection = claims_rejection(pod, storage)
        if rejection:
            return None, api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, rejection)
        if not uses_claims:
            state.write(STATE_KEY, VolumeBindingState(NO_CLAIMS))
            return None, api.SKIP
        try:
            claims = classify_claims(pod, storage)
        except VolumeBindingError as error:
            return None, _error(error)
        if claims.immediate_unbound:
            return None, api.Status(
                api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNBOUND_IMMEDIATE
            )
        state.write(STATE_KEY, VolumeBindingState(claims))
        return None, api.SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        node = node_info.node
        if node is None:
            return api.Status(api.Code.ERROR, "node not found")
        data = state.get(STATE_KEY)
        if data is None:
            return api.Status(api.Code.ERROR, STATE_NOT_FOUND)
        try:
            volumes, reasons = find_pod_volumes(data.claims, node, self._handle.storage)
        except VolumeBindingError as error:
            return _error(error)
        if reasons:
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        data.pod_volumes_by_node[node.name] = volumes
        return api.SUCCESS

    def batch_filter(self) -> VolumeBinding:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        data = state.get(STATE_KEY)
        if data is None or data.claims.delay_binding:
            raise api.Fallback
        storage = self._handle.storage
        self._migration = MigratedNodes.over(self._migration, nodes.mirror, storage)
        admitted = nodes_admitting_bound_volumes(data.claims.bound, nodes, storage, self._migration)
        data.pod_volumes_on_any_node = PodVolumes()
        if admitted is None or admitted.all():
            return None
        return api.NodeRejections(~admitted)

    # PreScore / Score: listed, never scoring (capacity scoring is an alpha gate) ----------

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        return api.SKIP

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        return 0, api.SUCCESS

    def score_extensions(self) -> None:
        return None

    # Reserve / Unreserve ------------------------------------------------------------------

    def reserve(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        data = state.get(STATE_KEY)
        if data is None:
            return api.Status(api.Code.ERROR, STATE_NOT_FOUND)
        volumes = data.pod_volumes_on(node_name)
        if volumes is None:
            data.all_bound = True
            return api.SUCCESS
        try:
            all_bound, assumed = assume_pod_volumes(self._handle.storage, pod, node_name, volumes)
        except VolumeBindingError as error:
            return _error(error)
        data.all_bound = all_bound
        data.pod_volumes_by_node[node_name] = assumed
        return api.SUCCESS

    def unreserve(self, state: api.CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        volumes = data.pod_volumes_on(node_name) if data is not None else None
        if volumes is not None:
            revert_assumed_pod_volumes(self._handle.storage, volumes)

    # PreBind ------------------------------------------------------------------------------

    async def pre_bind(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        data = state.get(STATE_KEY)
        if data is None:
            return api.Status(api.Code.ERROR, STATE_NOT_FOUND)
        if data.all_bound:
            return api.SUCCESS
        volumes = data.pod_volumes_on(node_name)
        if volumes is None:
            return api.Status(api.Code.ERROR, f'no pod volume found for node "{node_name}"')
        try:
            await bind_pod_volumes(
                self._handle, pod, node_name, volumes, self.args.bind_timeout_seconds
            )
        except VolumeBindingError as error:
            return _error(error)
        return api.SUCCESS

    # Queueing -----------------------------------------------------------------------------

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return events_to_register()


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> VolumeBinding:
    return VolumeBinding(Args.parse(args), handle)
