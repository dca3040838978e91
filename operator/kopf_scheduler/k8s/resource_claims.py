"""The writes of dynamic resource allocation: a claim's finalizer, allocation and reservations.

PreBind adds the finalizer with an update of the claim, then writes ``status.allocation`` and
``status.reservedFor`` with an update of the status subresource, as kube-scheduler does; both
carry the resourceVersion they were based on, so the API server refuses them with 409
(:class:`~kopf_scheduler.ports.ConflictError`) when the claim changed in between, and PreBind
reads the claim again and retries. Unreserve takes a pod out of ``reservedFor`` with a
strategic-merge patch whose UID precondition keeps it off a claim re-created under the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.k8s.client import STRATEGIC_MERGE_PATCH, Api

API_VERSION = "resource.k8s.io/v1"


def claim_path(namespace: str, name: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims/{name}"


def _path_of(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise ValueError("a ResourceClaim to update needs metadata.name")
    return claim_path(str(metadata.get("namespace") or "default"), str(metadata["name"]))


def _with_type(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ResourceClaim", **raw}


class ApiResourceClaimWriter:
    """:class:`kopf_scheduler.ports.ResourceClaimWriter` over the API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def get_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        return await self._api.request("GET", claim_path(namespace, name))

    async def update_resource_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._api.request("PUT", _path_of(raw), _with_type(raw))

    async def update_resource_claim_status(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._api.request("PUT", _path_of(raw) + "/status", _with_type(raw))

    async def remove_resource_claim_reservation(
        self, namespace: str, name: str, claim_uid: str, pod_uid: str
    ) -> None:
        patch = {
            "metadata": {"uid": claim_uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
        }
        await self._api.request(
            "PATCH",
            claim_path(namespace, name) + "/status",
            patch,
            content_type=STRATEGIC_MERGE_PATCH,
        )
