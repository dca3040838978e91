"""The writes of volume binding: a PersistentVolume's ``claimRef``, a claim's selected node.

Both are full-object updates (PUT) of the copy the binding step changed, as kube-scheduler's
volume binder sends them. The copy carries the ``resourceVersion`` it was read at, so the API
server refuses it with 409 (:class:`~kopf_scheduler.ports.ConflictError`) when someone else
changed the object in between, and a retry of a write that did land is refused the same way
instead of being applied twice. A deleted object raises
:class:`~kopf_scheduler.ports.NotFoundError`. The reply is the object as stored, with its new
``resourceVersion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.k8s.client import Api


def volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


def claim_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"


def _metadata(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise ValueError("a storage object to update needs metadata.name")
    return metadata


def _with_type(raw: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The object as sent: its own ``apiVersion``/``kind``, or the core v1 ones if it has none."""
    return {"apiVersion": "v1", "kind": kind, **raw}


class ApiStorageWriter:
    """:class:`kopf_scheduler.ports.StorageWriter` over the API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def update_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = _metadata(raw)
        return await self._api.request(
            "PUT", volume_path(metadata["name"]), _with_type(raw, "PersistentVolume")
        )

    async def update_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = _metadata(raw)
        return await self._api.request(
            "PUT",
            claim_path(metadata.get("namespace") or "default", metadata["name"]),
            _with_type(raw, "PersistentVolumeClaim"),
        )
