"""ResourceClaims (``resource.k8s.io/v1``) as the DynamicResources plugin reads them, and the
claims a pod names.

The view parses only what scheduling reads: identity, the allocation, who the claim is reserved
for, its controller and whether it is being deleted. The allocator reads the raw object itself
(requests, selectors, constraints), so :attr:`ResourceClaim.raw` is kept whole.

A pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``) or through a
template (``resourceClaimTemplateName``), in which case the resource-claim controller creates the
claim and records its name in the pod's ``status.resourceClaimStatuses``. The texts of
:func:`pod_claim_name`'s errors are those of ``k8s.io/dynamic-resource-allocation/resourceclaim``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError

FINALIZER = "resource.kubernetes.io/delete-protection"
"""The finalizer the scheduler puts on a claim it allocates (``resourceapi.Finalizer``)."""
RESERVED_FOR_MAX_SIZE = 256
"""The most consumers a claim's ``status.reservedFor`` may list."""


class ResourceClaim:
    """A read-only view of a raw ResourceClaim."""

    __slots__ = (
        "allocation",
        "controller_uid",
        "deleting",
        "finalizers",
        "key",
        "name",
        "namespace",
        "raw",
        "reserved_for",
        "resource_version",
        "uid",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata")
        if not isinstance(metadata, Mapping) or not metadata.get("name"):
            raise InvalidObjectError("metadata.name", "a ResourceClaim needs a name")
        self.raw = raw
        self.name = str(metadata["name"])
        self.namespace = str(metadata.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        self.uid = str(metadata.get("uid") or "")
        self.resource_version = str(metadata.get("resourceVersion") or "")
        self.deleting = bool(metadata.get("deletionTimestamp"))
        finalizers = metadata.get("finalizers") or []
        if not isinstance(finalizers, list):
            raise InvalidObjectError("metadata.finalizers", "must be a list")
        self.finalizers: tuple[str, ...] = tuple(str(f) for f in finalizers)
        self.controller_uid = _controller_uid(metadata.get("ownerReferences"))
        status = raw.get("status") or {}
        if not isinstance(status, Mapping):
            raise InvalidObjectError("status", "must be an object")
        allocation = status.get("allocation")
        if allocation is not None and not isinstance(allocation, Mapping):
            raise InvalidObjectError("status.allocation", "must be an object")
        self.allocation: Mapping[str, Any] | None = allocation
        reserved = status.get("reservedFor") or []
        if not isinstance(reserved, list) or not all(isinstance(r, Mapping) for r in reserved):
            raise InvalidObjectError("status.reservedFor", "must be a list of objects")
        self.reserved_for: tuple[str, ...] = tuple(str(r.get("uid") or "") for r in reserved)

    def is_reserved_for(self, pod_uid: str) -> bool:
        return pod_uid in self.reserved_for

    def __repr__(self) -> str:
        return f"ResourceClaim({self.key})"


def _controller_uid(owners: Any) -> str:
    if not isinstance(owners, list):
        return ""
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            return str(owner.get("uid") or "")
    return ""


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims``, resolved to a claim name."""

    entry: str
    """The entry's ``name`` (what containers reference)."""
    claim_name: str | None
    """The ResourceClaim's name; ``None`` when the template needed no claim."""
    from_template: bool
    """Made from a template: the claim must be controlled by the pod."""


class ClaimNotReadyError(Exception):
    """A pod's claim cannot be named yet, or its entry names nothing (upstream's texts)."""


def pod_claims(pod_raw: Mapping[str, Any]) -> list[PodClaim]:
    """Resolve every entry of the pod's ``spec.resourceClaims``, in order.

    Raises :class:`ClaimNotReadyError` for the first entry made from a template whose claim the
    controller has not recorded yet, or that names neither a claim nor a template.
    """
    spec = pod_raw.get("spec") or {}
    entries: Sequence[Any] = spec.get("resourceClaims") or []
    if not entries:
        return []
    metadata = pod_raw.get("metadata") or {}
    pod_name = f"{metadata.get('namespace') or 'default'}/{metadata.get('name') or ''}"
    status = pod_raw.get("status") or {}
    generated: dict[str, Any] = {}
    for recorded in status.get("resourceClaimStatuses") or []:
        if isinstance(recorded, Mapping):
            generated.setdefault(str(recorded.get("name") or ""), recorded.get("resourceClaimName"))
    claims: list[PodClaim] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name") or "")
        if entry.get("resourceClaimName"):
            claims.append(PodClaim(name, str(entry["resourceClaimName"]), False))
        elif entry.get("resourceClaimTemplateName"):
            if name not in generated:
                raise ClaimNotReadyError(f'pod "{pod_name}": ResourceClaim not created yet')
            claim_name = generated[name]
            claims.append(PodClaim(name, str(claim_name) if claim_name else None, True))
        else:
            raise ClaimNotReadyError(
                f'pod "{pod_name}", spec.resourceClaim "{name}": '
                "none of the supported fields are set"
            )
    return claims


def named_claims(pod_raw: Mapping[str, Any]) -> frozenset[str]:
    """The names of every ResourceClaim the pod refers to so far: those its spec names and those
    the controller recorded for its templates. A claim outside this set is none of the pod's,
    whether or not the pod's claims can all be resolved yet."""
    spec = pod_raw.get("spec") or {}
    entries = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    if not entries or not isinstance(entries, list):
        return _NO_NAMES
    names = {
        str(entry["resourceClaimName"])
        for entry in entries
        if isinstance(entry, Mapping) and entry.get("resourceClaimName")
    }
    status = pod_raw.get("status") or {}
    recorded = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
    for entry in recorded if isinstance(recorded, list) else ():
        if isinstance(entry, Mapping) and entry.get("resourceClaimName"):
            names.add(str(entry["resourceClaimName"]))
    return frozenset(names)


_NO_NAMES: frozenset[str] = frozenset()


def has_claims(pod_raw: Mapping[str, Any]) -> bool:
    return bool((pod_raw.get("spec") or {}).get("resourceClaims"))
