"""Each node's free capacity for one attempt, with the nominated pods that count against the pod.

The per-node path filters a node with the nominated pods of equal or higher priority added to
it. The batch resource Filter sees the same amounts through these columns: allocatable minus
requested, less what those nominated pods request.
"""

from __future__ import annotations

from kopf_scheduler.framework.node_columns.mirror import IntArray


class FreeColumns:
    """Free capacity per node (allocatable minus requested), with nominated pods counted."""

    __slots__ = ("cpu", "ephemeral", "extra", "memory", "nominated_scalar", "pods")

    def __init__(
        self, cpu: IntArray, memory: IntArray, ephemeral: IntArray, pods: IntArray
    ) -> None:
        self.cpu = cpu
        self.memory = memory
        self.ephemeral = ephemeral
        self.pods = pods
        self.extra: dict[int, tuple[int, int, int, int]] = {}
        """Position -> (cpu, memory, ephemeral storage, pod count) of counted nominated pods."""
        self.nominated_scalar: frozenset[str] = frozenset()
        """Names of the other resources the counted nominated pods request (not counted in
        these columns)."""
