"""Write annotations on a pod through ``pods/status`` (the permission the scheduler has anyway).

The API server accepts metadata annotations in a status patch, so storing decision records needs
no broader right than writing the PodScheduled condition.
"""

from __future__ import annotations

from kopf_scheduler.k8s.client import STRATEGIC_MERGE_PATCH, Api
from kopf_scheduler.ports import PodRef


class StatusAnnotationWriter:
    def __init__(self, api: Api) -> None:
        self._api = api

    async def annotate(self, pod: PodRef, annotations: dict[str, str | None]) -> None:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        body = {"metadata": {"annotations": annotations}}
        await self._api.request("PATCH", path, body, STRATEGIC_MERGE_PATCH)
