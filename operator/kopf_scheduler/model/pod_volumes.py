"""A pod's volumes as the volume plugins read them.

Only the volume's name, which source it uses and, for claims, which PersistentVolumeClaim it
names matter to scheduling. A generic ephemeral volume uses the claim ``<pod name>-<volume
name>``, which the ephemeral-volume controller creates and owns on the pod's behalf; the
scheduler treats it as a claim of the pod like any other (it must exist, and belong to the pod).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError

PERSISTENT_VOLUME_CLAIM = "persistentVolumeClaim"
EPHEMERAL = "ephemeral"
CSI = "csi"


@dataclass(slots=True, eq=False)
class PodVolume:
    """One entry of ``spec.volumes``."""

    name: str
    source_kind: str
    """The volume source's field name (``persistentVolumeClaim``, ``ephemeral``, ...)."""
    source: Mapping[str, Any]
    claim_name: str
    """The claim this volume uses (``""`` when it uses none)."""
    read_only: bool

    @property
    def is_ephemeral(self) -> bool:
        return self.source_kind == EPHEMERAL

    def __repr__(self) -> str:
        return f"PodVolume({self.name}, {self.source_kind}, claim={self.claim_name!r})"


def ephemeral_claim_name(pod_name: str, volume_name: str) -> str:
    """The name of the claim the ephemeral-volume controller creates for a generic volume."""
    return f"{pod_name}-{volume_name}"


def parse_pod_volumes(raw: Any, pod_name: str) -> tuple[PodVolume, ...]:
    """Parse ``spec.volumes``; raises InvalidObjectError naming the field."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError("spec.volumes", "must be a list")
    volumes: list[PodVolume] = []
    for index, entry in enumerate(raw):
        field = f"spec.volumes[{index}]"
        if not isinstance(entry, Mapping):
            raise InvalidObjectError(field, "must be an object")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObjectError(f"{field}.name", "must be a non-empty string")
        kinds = [key for key, value in entry.items() if key != "name" and value is not None]
        kind = kinds[0] if kinds else ""
        source = entry.get(kind) if kind else {}
        if not isinstance(source, Mapping):
            raise InvalidObjectError(f"{field}.{kind}", "must be an object")
        claim_name = ""
        if kind == PERSISTENT_VOLUME_CLAIM:
            claim_name = source.get("claimName") or ""
            if not isinstance(claim_name, str) or not claim_name:
                raise InvalidObjectError(f"{field}.{kind}.claimName", "must be a non-empty string")
        elif kind == EPHEMERAL:
            claim_name = ephemeral_claim_name(pod_name, name)
        volumes.append(PodVolume(name, kind, source, claim_name, bool(source.get("readOnly"))))
    return tuple(volumes)
