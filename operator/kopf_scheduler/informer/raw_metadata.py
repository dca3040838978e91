"""A watched object's key and resourceVersion, read without trusting its shape.

A malformed object must not stop the watch that delivered it, so the handlers read what they
need to find or drop it before parsing the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def object_key(raw: Mapping[str, Any], namespaced: bool) -> str:
    """``namespace/name`` (``default`` when unset) for a namespaced kind, else ``name``."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping):
        return ""
    name = str(metadata.get("name") or "")
    return f"{metadata.get('namespace') or 'default'}/{name}" if namespaced else name


def namespaced_key(raw: Mapping[str, Any]) -> str:
    """``namespace/name`` (``default`` when unset) of a kind whose store keys it so, as
    :func:`~kopf_scheduler.model.pod.pod_key` reads a pod's."""
    metadata = raw.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


def resource_version(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) else ""
