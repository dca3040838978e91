"""Every plugin's batch Filter and Score agree with its own per-node ``filter`` and ``score``.

The per-node methods are the reference. On random clusters (those of the fast-path properties:
capacities, labels, taints, cordons, images, existing pods with affinity terms, spreading pods)
and random pods, after PreFilter (and PreScore) ran with the node columns offered, each plugin of
the profile that has a batch form must:

* Filter: reject exactly the nodes its ``filter`` rejects, and give equal rejection numbers only
  to nodes whose ``filter`` statuses are equal;
* Score: return, for a random subset of the nodes, the scores its ``score`` and NormalizeScore
  give the same subset.

A batch form may decline an attempt (raise ``Fallback``); the attempts where one does not are
counted so that a property that only ever declined fails.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    NodeScore,
)
from kopf_scheduler.framework.node_columns.columns import NODE_COLUMNS_KEY, NodeColumns
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from tests.scheduler.test_fast_path import Setup, World, build, worlds
from tests.scheduler.test_fast_path_pod_relations import related_worlds

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _prepared(setup: Setup, columns: NodeColumns, pod: Pod) -> CycleState | None:
    """The cycle state after PreFilter and PreScore over every node, or ``None`` when
    PreFilter or PreScore stopped the attempt."""
    state = CycleState()
    columns.mirror.sync(setup.snapshot)
    state.write(NODE_COLUMNS_KEY, columns)
    nodes = setup.snapshot.node_info_list
    _, status, _ = setup.framework.run_pre_filter(state, pod, nodes)
    if not status.is_success():
        return None
    if not setup.framework.run_pre_score(state, pod, nodes).is_success():
        return None
    return state


def _status_key(status: Any) -> tuple[Any, ...]:
    return (status.code, tuple(status.reasons))


def _compare_filters(setup: Setup, columns: NodeColumns, state: CycleState, pod: Pod) -> int:
    """Check every batch Filter against its plugin's ``filter``; how many were compared."""
    infos = columns.mirror.infos
    compared = 0
    for plugin in setup.framework.plugins.filter:
        if plugin.name in state.skip_filter_plugins or not isinstance(plugin, BatchFilterPlugin):
            continue
        batch = plugin.batch_filter()
        if batch is None:
            continue
        try:
            rejections = batch.filter_nodes(state, pod, columns, columns.free_columns())
        except Fallback:
            continue
        statuses = [plugin.filter(state, pod, info) for info in infos]
        expected = [not status.is_success() for status in statuses]
        if rejections is None:
            assert not any(expected), plugin.name
            compared += 1
            continue
        assert rejections.fails.tolist() == expected, plugin.name
        positions = np.flatnonzero(rejections.fails)
        numbers = (
            rejections.reasons(positions).tolist()
            if rejections.reasons is not None
            else [0] * len(positions)
        )
        by_number: dict[int, set[tuple[Any, ...]]] = defaultdict(set)
        for position, number in zip(positions.tolist(), numbers, strict=True):
            assert statuses[position].is_rejected(), plugin.name
            by_number[number].add(_status_key(statuses[position]))
        assert all(len(keys) == 1 for keys in by_number.values()), (plugin.name, by_number)
        compared += 1
    return compared


def _compare_scores(
    setup: Setup, columns: NodeColumns, state: CycleState, pod: Pod, rng: random.Random
) -> int:
    """Check every batch Score against its plugin's ``score`` and NormalizeScore on a random
    subset of the nodes; how many were compared."""
    infos = columns.mirror.infos
    picked = sorted(rng.sample(range(len(infos)), rng.randint(1, len(infos))))
    positions = np.array(picked, dtype=np.int64)
    compared = 0
    for plugin, _ in setup.framework.plugins.score:
        if plugin.name in state.skip_score_plugins or not isinstance(plugin, BatchScorePlugin):
            continue
        batch = plugin.batch_score()
        if batch is None:
            continue
        try:
            values = batch.score_nodes(state, pod, columns, positions)
        except Fallback:
            continue
        scores = []
        for position in picked:
            value, status = plugin.score(state, pod, infos[position])
            assert status.is_success(), plugin.name
            scores.append(NodeScore(infos[position].name, value))
        extensions = plugin.score_extensions()
        if extensions is not None:
            assert extensions.normalize_score(state, pod, scores).is_success(), plugin.name
        assert values.tolist() == [score.score for score in scores], plugin.name
        compared += 1
    return compared


@SETTINGS
@given(world=st.one_of(worlds(), related_worlds()), seed=st.integers(0, 2**16))
def test_batch_forms_agree_with_the_per_node_methods(world: World, seed: int) -> None:
    setup = build(world)
    columns = NodeColumns()
    rng = random.Random(seed)
    for number, raw in enumerate(world.pending):
        if number < len(world.changes):
            change = world.changes[number]
            if change[0] in ("update", "add"):
                setup.cache.update_node(Node(change[1]))
            elif change[0] == "remove":
                setup.cache.remove_node(change[1])
            setup.cache.update_snapshot(setup.snapshot)
        if not setup.snapshot.node_info_list:
            continue
        pod = Pod(raw)
        state = _prepared(setup, columns, pod)
        if state is None:
            continue
        filters = _compare_filters(setup, columns, state, pod)
        scores = _compare_scores(setup, columns, state, pod, rng)
        assert filters + scores > 0, "no batch form took part"
        node_name = rng.choice(setup.snapshot.node_info_list).name
        setup.cache.assume_pod(pod.assigned_to(node_name))
        setup.cache.update_snapshot(setup.snapshot)
