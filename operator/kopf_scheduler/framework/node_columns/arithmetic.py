"""Go's integer division over arrays, for batch scores that must equal the per-node integers.

Upstream divides with Go's ``/``, which truncates toward zero; Python's ``//`` floors. The two
differ for negative operands, which normalising scores can meet.
"""

from __future__ import annotations

import numpy as np

from kopf_scheduler.framework.node_columns.mirror import IntArray


def go_div_array(numerator: IntArray, denominator: int) -> IntArray:
    """Integer division truncating toward zero, elementwise (Go's ``/``)."""
    quotient = np.abs(numerator) // abs(denominator)
    negative = (numerator < 0) != (denominator < 0)
    result: IntArray = np.where(negative, -quotient, quotient)
    return result
