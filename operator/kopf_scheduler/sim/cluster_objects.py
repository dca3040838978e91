"""The in-memory API server as the simulated controllers use it, and the owner reference they
mark the objects they create with.

Each controller takes the API server through the smallest of these Protocols that covers what
it does, so a test can drive it with a plain fake; the simulated cluster satisfies them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

Raw = dict[str, Any]


class ClusterObjects(Protocol):
    """Reading the stored objects and creating new ones."""

    @property
    def pods(self) -> Mapping[str, Raw]: ...

    def objects(self, kind: str) -> Mapping[str, Raw]:
        """The stored objects of a kind, by key; never modify them in place."""

    def create(self, raw: Mapping[str, Any]) -> Raw: ...


class ChangingClusterObjects(ClusterObjects, Protocol):
    """Also changing and deleting stored objects."""

    def replace(self, kind: str, raw: Raw) -> Raw:
        """Store a changed copy of an object (a new version, a MODIFIED event); returns it."""

    def delete_object(self, kind: str, key: str) -> None: ...


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> Raw:
    """The ``metadata.ownerReferences`` entry naming the controller of an object, which the
    garbage collector deletes the object with."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
