"""Writing ``PodGroup.status`` (scheduling.x-k8s.io/v1alpha1) through its status subresource.

A JSON merge patch of the changed fields only, so that a field another writer owns is left as
it is and ``null`` removes a field, as Coscheduling's controller writes it (``omitempty``). A
group that is gone raises :class:`~kopf_scheduler.ports.NotFoundError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.k8s.client import MERGE_PATCH, Api


def pod_group_status_path(namespace: str, name: str) -> str:
    return f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/{name}/status"


class ApiPodGroupStatusWriter:
    """:class:`kopf_scheduler.pod_group_controller.status_keeper.PodGroupStatusWriter` over the
    API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        return await self._api.request(
            "PATCH", pod_group_status_path(namespace, name), patch, content_type=MERGE_PATCH
        )
