"""Writing scheduling results into ``pod.status``: the PodScheduled condition and the nomination.

The patch is a strategic merge patch on the ``pods/status`` subresource, the form kube-scheduler's
``PatchPodStatus`` sends: ``status.conditions`` merges by ``type``, so a PodScheduled condition
replaces the previous one without touching the kubelet's conditions, and ``nominatedNodeName: null``
removes the field. A pod that is gone raises :class:`~kopf_scheduler.ports.NotFoundError`.
"""

from __future__ import annotations

from kopf_scheduler.k8s.client import STRATEGIC_MERGE_PATCH, Api
from kopf_scheduler.ports import PodRef, PodStatusPatch


def status_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}/status"


class ApiPodStatusWriter:
    """:class:`kopf_scheduler.ports.PodStatusWriter` over the API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
        await self._api.request(
            "PATCH",
            status_path(pod.namespace, pod.name),
            patch.body(),
            content_type=STRATEGIC_MERGE_PATCH,
        )
