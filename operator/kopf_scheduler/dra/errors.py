"""The error the allocator raises for what kube-scheduler's allocator returns as an error.

Upstream separates two outcomes of an allocation attempt on a node: the claims do not fit there
(no error, the node is simply not feasible) and the input cannot be used at all (a DeviceClass
that does not exist, a CEL selector that does not compile or fails at run time, an invalid pool,
a Filter that ran out of time). The second kind aborts the scheduling attempt, and its message
ends up in the pod's FailedScheduling event, so :class:`AllocationError` carries upstream's text.
"""

from __future__ import annotations


class AllocationError(Exception):
    """Allocation must stop; ``message`` is the text kube-scheduler v1.34 reports."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
