"""What one run of a scenario left behind, as the API server showed it, before normalisation.

A record holds raw objects only (final pods, every pod change the watch saw, the Events, the
volume and resource claims), so it can be saved as JSON, read back and normalised again when
the normaliser changes, and a run can be examined long after its namespace is gone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

Raw = dict[str, Any]

UPSTREAM = "upstream"
OURS = "kopf"
SIDES = (UPSTREAM, OURS)


@dataclass
class RunRecord:
    scenario: str
    side: str
    """:data:`UPSTREAM` or :data:`OURS`."""
    scheduler_name: str
    namespace: str
    settled: bool
    """False when the run hit its time limit before the cluster came to rest."""
    seconds: float
    pods: list[Raw] = field(default_factory=list)
    """The pods of the namespace at the end."""
    history: list[Raw] = field(default_factory=list)
    """Every pod change the watch saw, in order: ``{"type": "MODIFIED", "object": pod}``."""
    events: list[Raw] = field(default_factory=list)
    """``events.k8s.io/v1`` Events of the namespace at the end."""
    claims: list[Raw] = field(default_factory=list)
    """PersistentVolumeClaims of the namespace at the end."""
    resource_claims: list[Raw] = field(default_factory=list)
    """ResourceClaims (``resource.k8s.io/v1``) of the namespace at the end."""

    def to_json(self) -> Raw:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Raw) -> RunRecord:
        return cls(**data)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: Path) -> RunRecord:
        return cls.from_json(json.loads(path.read_text()))
