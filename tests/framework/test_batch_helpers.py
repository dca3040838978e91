"""The pieces batch forms share: a label's per-value numbers as a table indexed by each node's
label code, and rejections whose reasons are known for every node up front."""

from __future__ import annotations

import numpy as np

from kopf_scheduler.framework.interfaces import NodeRejections
from kopf_scheduler.framework.node_columns.mirror import LabelColumn


def test_a_label_table_gives_each_node_the_number_of_its_value() -> None:
    column = LabelColumn("zone", 4)
    column.codes[:] = [column.intern("a"), column.intern("b"), -1, column.intern("a")]
    table = column.table({"a": 3, "b": -2, "never-seen": 9})
    assert table[column.codes].tolist() == [3, -2, 0, 3]
    assert len(table) == len(column.names) + 1


def test_rejections_by_detail_pick_each_positions_reason() -> None:
    fails = np.array([True, False, True])
    detail = np.array([7, 0, 2], dtype=np.int64)
    rejections = NodeRejections.by_detail(fails, detail)
    assert rejections.fails is fails
    assert rejections.reasons is not None
    assert rejections.reasons(np.array([2, 0], dtype=np.int64)).tolist() == [2, 7]
