"""Where an object of any kind is created, read from the API server's discovery documents.

``createAny``, ``updateAny`` and ``churn`` take templates of any kind (DeviceClasses,
ResourceClaimTemplates, Services, Nodes...), as upstream's dynamic client does with its REST
mapper. :class:`ResourceMap` asks ``/api/v1`` or ``/apis/<group>/<version>`` once per group
version for the resource that serves the kind and whether it is namespaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.kube import Client


@dataclass(frozen=True)
class Resource:
    base: str
    """``/api/v1`` or ``/apis/<group>/<version>``."""
    plural: str
    namespaced: bool

    def collection(self, namespace: str | None = None) -> str:
        if self.namespaced:
            if not namespace:
                raise ValueError(f"{self.plural} are namespaced: a namespace is needed")
            return f"{self.base}/namespaces/{namespace}/{self.plural}"
        return f"{self.base}/{self.plural}"

    def item(self, name: str, namespace: str | None = None) -> str:
        return f"{self.collection(namespace)}/{name}"


class ResourceMap:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._known: dict[tuple[str, str], Resource] = {}

    async def of(self, raw: Mapping[str, Any]) -> Resource:
        api_version, kind = str(raw.get("apiVersion", "")), str(raw.get("kind", ""))
        key = (api_version, kind)
        if key not in self._known:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listing = await self.client.request("GET", base)
            for entry in listing.get("resources") or []:
                if "/" not in entry["name"]:
                    self._known[(api_version, entry["kind"])] = Resource(
                        base, entry["name"], bool(entry.get("namespaced"))
                    )
        if key not in self._known:
            raise LookupError(f"the API server serves no {kind} in {api_version}")
        return self._known[key]
