"""Each node's free capacity for one attempt, with the nominated pods that count against the pod.

The per-node path filters a node with the nominated pods of equal or higher priority added to
it. The batch resource Filter sees the same amounts through these columns: allocatable minus
requested, less what those nominated pods request.
"""

from __future__ import annotations

import dataclasses

from kopf_scheduler.framework.node_columns.mirror import IntArray


@dataclasses.dataclass(slots=True, eq=False)
class FreeColumns:
    """Free capacity per node (allocatable minus requested), with nominated pods counted."""

    cpu: IntArray
    memory: IntArray
    ephemeral: IntArray
    pods: IntArray
    extra: dict[int, tuple[int, int, int, int]] = dataclasses.field(default_factory=dict)
    """Position -> (cpu, memory, ephemeral storage, pod count) of counted nominated pods."""
    nominated_scalars: dict[str, dict[int, int]] = dataclasses.field(default_factory=dict)
    """What the counted nominated pods request of other resources, not counted in these
    columns: resource -> position -> amount."""
