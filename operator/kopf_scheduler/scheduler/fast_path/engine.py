"""The vectorised Filter, Score and host selection, equivalent to the per-node path.

The arithmetic belongs to the plugins: each Filter and Score plugin may offer a batch form
(:mod:`kopf_scheduler.framework.interfaces`) computed over the node columns
(:mod:`kopf_scheduler.framework.node_columns`). The framework lists, in profile order, the
Filter and Score plugins with their batch forms. Filtering is served here when every Filter
plugin that runs in the attempt has one (a plugin its PreFilter skipped does not run), and
otherwise takes the per-node path, the plugins' own ``filter``. Scoring mixes both: batch
scores come from the columns, and a Score plugin without a batch form scores the feasible nodes
one by one with its own ``score``, in the same sum.

Filtering asks every batch Filter which nodes it rejects, then walks the round-robin window
exactly as the per-node loop does: from the start index, in snapshot order, until enough
feasible nodes are found. Rejected nodes in the window get the very Status the per-node path
would give them: nodes are grouped by what rejects them (the first rejecting plugin and the
rejection number it reports), one node per group runs the real plugins, and the group shares
the resulting Status. Nominated pods of equal or higher priority are counted on their nodes the
way the per-node path counts them (see :meth:`FastPath.nominated`); when a PreFilter extension
keeps per-pod state (PodTopologySpread, InterPodAffinity), the few nodes with such nominated
pods run the real plugins instead.

Plugins that read the pods of the whole cluster in PreFilter and PreScore count them from the
same columns, which :meth:`FastPath.offer_counters` offers them through the cycle state.

Scoring sums the weighted batch scores. Host selection replays the reservoir sampling over the
same totals in the same order, so it draws the same random numbers.

Whenever an attempt falls outside what is modelled (a running Filter plugin without a batch
form, a PreFilter restricting the node set, an amount the arithmetic cannot take, an error
status), the engine returns ``None`` and the caller runs the per-node path instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    MAX_REJECTION_REASONS,
    BatchFilter,
    BatchFilterOverPodVolumes,
    NodeRejections,
    is_resource_fit,
)
from kopf_scheduler.framework.node_columns.columns import NODE_COLUMNS_KEY, NodeColumns
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.node_columns.free_capacity import FreeColumns
from kopf_scheduler.framework.node_columns.mirror import SAFE_LIMIT, IntArray, NodeMirror
from kopf_scheduler.framework.pod_nominator import (
    PodNominator,
    counts_against,
    nominated_pods_by_node,
)
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodePluginScores, NodeToStatus
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.scheduler.fast_path.rng import randrange_many

BatchFilters = tuple[tuple[str, BatchFilter | None], ...]
"""The profile's Filter plugins in order: name and batch Filter (``None`` without one)."""


@dataclass
class FilterResult:
    """The outcome of the vectorised Filter: feasible positions in examination order."""

    feasible: IntArray
    examined: int
    """How many nodes the window covered (feasible plus rejected)."""


@dataclass
class ScoreResult:
    """Per-plugin weighted scores and totals for the feasible nodes, in the same order.

    Node names are looked up only when asked for: most attempts need just the winner's.
    """

    positions: IntArray
    all_names: list[str]
    """The mirror's node names (by position) when the scores were computed."""
    plugin_scores: list[tuple[str, IntArray]]
    totals: IntArray

    def name(self, index: int) -> str:
        return self.all_names[int(self.positions[index])]

    def names(self) -> list[str]:
        all_names = self.all_names
        return [all_names[position] for position in self.positions.tolist()]

    def node_plugin_scores(self) -> list[NodePluginScores]:
        """The same list the per-node ``run_score`` builds."""
        columns = [(name, values.tolist()) for name, values in self.plugin_scores]
        totals = self.totals.tolist()
        result = []
        for index, node in enumerate(self.names()):
            result.append(
                NodePluginScores(
                    node, {name: values[index] for name, values in columns}, totals[index]
                )
            )
        return result


def _nominated_loads(
    nominator: PodNominator, mirror: NodeMirror, pod: Pod
) -> tuple[list[tuple[int, int, int, int, int]], dict[str, dict[int, int]]]:
    """``(position, cpu, memory, ephemeral storage, pod count)`` of the nominated pods that
    count against ``pod`` on each node (see :func:`counts_against`), and what they request of
    other resources: resource -> position -> amount."""
    position = mirror.position
    loads: list[tuple[int, int, int, int, int]] = []
    scalar: dict[str, dict[int, int]] = {}
    for name, pods in nominated_pods_by_node(nominator, mirror.names):
        index = position.get(name)
        if index is None:
            continue
        cpu = memory = ephemeral = count = 0
        for other in pods:
            if not counts_against(other, pod):
                continue
            requests = other.requests
            for resource, amount in requests.scalar.items():
                at = scalar.setdefault(resource, {})
                at[index] = at.get(index, 0) + amount
            cpu += requests.milli_cpu
            memory += requests.memory
            ephemeral += requests.ephemeral_storage
            count += 1
        if count:
            loads.append((index, cpu, memory, ephemeral, count))
    return loads, scalar


class FilterRejections(NamedTuple):
    """The nodes one Filter plugin rejects."""

    filter_index: int
    """The plugin's position in the profile."""
    rejections: NodeRejections


class FastPath:
    """Vectorised scheduling for one scheduler (one snapshot)."""

    def __init__(self) -> None:
        self.columns = NodeColumns()
        self.mirror = self.columns.mirror
        self._nominated_cache: (
            tuple[CycleState, tuple[str, int], Snapshot | None, FreeColumns] | None
        ) = None
        self.used_filter = 0
        self.used_score = 0
        """Counters of attempts the vectorised path served (for tests and diagnostics)."""

    # Counts offered to PreFilter and PreScore ----------------------------------------------------

    def offer_counters(self, state: CycleState, snapshot: Snapshot) -> None:
        """Offer the attempt's plugins the columns kept for ``snapshot``, so that those that
        count pods across the cluster count from them instead of walking every pod."""
        self.mirror.sync(snapshot)
        state.write(NODE_COLUMNS_KEY, self.columns)

    # Filter ----------------------------------------------------------------------------------

    def find_feasible(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        statuses: NodeToStatus,
        add_status: Callable[[Status], None],
        start_index: int,
        to_find: int,
    ) -> FilterResult | None:
        """Filter every node of ``snapshot``; ``None`` when the per-node path must run.

        On success the rejected nodes of the window are recorded in ``statuses`` (in
        examination order) and passed to ``add_status``, exactly as the per-node loop does.
        """
        filters = framework.batch_filters()
        if not self.batch_filters_cover(filters, state):
            return None
        mirror = self.mirror
        mirror.sync(snapshot)
        if not mirror.safe or mirror.size == 0:
            return None
        try:
            if self.extensions_active(framework, state):
                free = self.columns.free_columns()
                with_nominated = self._nominated_positions(framework, pod)
            else:
                free = self.nominated(framework, state, pod)
                with_nominated = []
            failures = self.filter_rejections(filters, state, pod, free)
        except Fallback:
            return None
        size = mirror.size
        if failures:
            rejects = failures[0].rejections.fails.copy()
            for failure in failures[1:]:
                rejects |= failure.rejections.fails
            feasible_mask = ~rejects
        else:
            feasible_mask = np.ones(size, dtype=np.bool_)
        verdicts: dict[int, Status] = {}
        for index in with_nominated:
            # The plugins' own pass, with the nominated pods added through their extensions.
            status = framework.run_filter_plugins_with_nominated_pods(
                state, pod, mirror.infos[index]
            )
            if status.code == Code.SUCCESS:
                feasible_mask[index] = True
            elif status.is_rejected():
                feasible_mask[index] = False
                verdicts[index] = status
            else:
                return None

        start = start_index % size
        rotated = np.concatenate((feasible_mask[start:], feasible_mask[:start]))
        counts = np.cumsum(rotated)
        window = int(np.searchsorted(counts, to_find)) + 1 if counts[-1] >= to_find else size
        order = np.arange(start, start + window, dtype=np.int64)
        if start + window > size:
            order %= size
        in_window = rotated[:window]
        feasible = order[in_window]
        rejected = order[~in_window]
        if len(rejected) and not self._record_rejections(
            framework,
            state,
            pod,
            filters,
            rejected,
            self._signatures(failures, rejected),
            verdicts,
            statuses,
            add_status,
        ):
            return None
        self.used_filter += 1
        return FilterResult(feasible, window)

    @staticmethod
    def batch_filters_cover(filters: BatchFilters, state: CycleState) -> bool:
        """Whether every Filter plugin that runs in the attempt has a batch form."""
        skip = state.skip_filter_plugins
        return all(batch is not None or name in skip for name, batch in filters)

    @staticmethod
    def _signatures(failures: list[FilterRejections], positions: IntArray) -> IntArray:
        """What rejects each node at ``positions``: the first rejecting plugin's index times
        :data:`MAX_REJECTION_REASONS`, plus that plugin's rejection number."""
        first = np.full(len(positions), -1, dtype=np.int64)
        for failure in reversed(failures):
            first[failure.rejections.fails[positions]] = failure.filter_index
        signature = np.where(first >= 0, first * MAX_REJECTION_REASONS, -1)
        for failure in failures:
            reasons = failure.rejections.reasons
            if reasons is None:
                continue
            chosen = first == failure.filter_index
            if chosen.any():
                signature[chosen] += reasons(positions[chosen])
        return signature

    def _record_rejections(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        filters: BatchFilters,
        rejected: IntArray,
        signatures: IntArray,
        verdicts: dict[int, Status],
        statuses: NodeToStatus,
        add_status: Callable[[Status], None],
    ) -> bool:
        """Give every rejected node of the window its status, in examination order.

        Nodes in ``verdicts`` already ran the real plugins. Of the others, one node per
        signature runs them and its status is shared by the group; ``False`` (use the per-node
        path) if that status is not the predicted rejection.
        """
        mirror = self.mirror
        positions = rejected.tolist()
        codes = signatures.tolist()
        by_signature: dict[int, Status] = {}
        for index, code in zip(positions, codes, strict=True):
            if code in by_signature or index in verdicts:
                continue
            status = framework.run_filter_plugins_with_nominated_pods(
                state, pod, mirror.infos[index]
            )
            if code < 0 or not status.is_rejected():
                return False
            if status.plugin != filters[code // MAX_REJECTION_REASONS][0]:
                return False
            by_signature[code] = status
        names = mirror.names
        found = [
            verdicts[index] if index in verdicts else by_signature[code]
            for index, code in zip(positions, codes, strict=True)
        ]
        statuses.explicit().update(zip([names[index] for index in positions], found, strict=True))
        for status in by_signature.values():
            add_status(status)
        for index in positions:
            if index in verdicts:
                add_status(verdicts[index])
        return True

    def nominated(self, framework: Framework, state: CycleState, pod: Pod) -> FreeColumns:
        """The free-capacity columns with the nominated pods that count against ``pod`` (equal
        or higher priority, not ``pod`` itself) taken off their nodes.

        Counting them this way is exact: the per-node path filters a node with them added and,
        if it fits, again without them; with only batch Filters active (PreFilter extensions
        would update cycle state per added pod, so they must be inactive) a node that fits with
        more pods also fits with fewer. Cached for the attempt, since the PostFilter dry run
        asks again.
        """
        cached = self._nominated_cache
        if (
            cached is not None
            and cached[0] is state
            and cached[1] == (pod.uid, pod.priority)
            and cached[2] is self.mirror.snapshot
        ):
            return cached[3]
        if self.extensions_active(framework, state):
            raise Fallback
        mirror = self.mirror
        free = self.columns.free_columns()
        loads, scalar = _nominated_loads(framework.handle.nominator, mirror, pod)
        if loads:
            table = np.array(loads, dtype=np.int64)
            if table.min() < 0 or table.max() >= SAFE_LIMIT:
                raise Fallback
            where = table[:, 0]
            free = FreeColumns(
                free.cpu.copy(), free.memory.copy(), free.ephemeral.copy(), free.pods.copy()
            )
            free.cpu[where] -= table[:, 1]
            free.memory[where] -= table[:, 2]
            free.ephemeral[where] -= table[:, 3]
            free.pods[where] -= table[:, 4]
            free.extra = {row[0]: row[1:] for row in loads}
            free.nominated_scalars = scalar
        self._nominated_cache = (state, (pod.uid, pod.priority), mirror.snapshot, free)
        return free

    def _nominated_positions(self, framework: Framework, pod: Pod) -> list[int]:
        """The nodes where nominated pods count against ``pod``."""
        loads, _ = _nominated_loads(framework.handle.nominator, self.mirror, pod)
        return [load[0] for load in loads]

    @staticmethod
    def extensions_active(framework: Framework, state: CycleState) -> bool:
        """Whether a PreFilter plugin not skipped for this attempt has AddPod/RemovePod."""
        skip = state.skip_filter_plugins
        return any(
            plugin.name not in skip and plugin.pre_filter_extensions() is not None
            for plugin in framework.plugins.pre_filter
        )

    def filter_rejections(
        self,
        filters: BatchFilters,
        state: CycleState,
        pod: Pod,
        free: FreeColumns | None,
    ) -> list[FilterRejections]:
        """The rejections of every Filter plugin that runs in the attempt and rejects any node;
        raises :class:`Fallback` when one of them cannot be evaluated for this pod.

        Without ``free`` (the node's pods are about to change) the resource-fit Filters
        (:class:`~kopf_scheduler.framework.interfaces.BatchResourceFit`) are left out, and a
        Filter that reads the volumes of the node's pods makes the attempt fall back.
        """
        failures: list[FilterRejections] = []
        skip = state.skip_filter_plugins
        columns = self.columns
        for index, (name, batch) in enumerate(filters):
            if skip and name in skip:
                continue
            if batch is None:
                raise Fallback
            if free is None:
                if is_resource_fit(batch):
                    continue
                if isinstance(batch, BatchFilterOverPodVolumes):
                    raise Fallback
                rejections = batch.filter_nodes(state, pod, columns, columns.free_columns())
            else:
                rejections = batch.filter_nodes(state, pod, columns, free)
            if rejections is not None:
                failures.append(FilterRejections(index, rejections))
        return failures

    # Score -----------------------------------------------------------------------------------

    def score(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        positions: IntArray,
    ) -> ScoreResult | None:
        """The weighted scores of ``positions`` after PreScore ran; ``None``: use the per-node
        path.

        Plugins with a batch form score the columns; the others score the same nodes by their
        per-node method, so one plugin without a batch form does not send the whole attempt
        node by node. A failed or out-of-range score leaves the attempt to the per-node path,
        which reports it.
        """
        scores = [
            entry for entry in framework.batch_scores() if entry[0] not in state.skip_score_plugins
        ]
        columns: dict[str, IntArray] = {}
        try:
            # The batch forms first: one that cannot serve this pod raises Fallback before any
            # per-node plugin has spent its time on nodes the per-node path would score again.
            for name, _, batch in scores:
                if batch is not None:
                    columns[name] = batch.score_nodes(state, pod, self.columns, positions)
        except Fallback:
            return None
        infos: list[NodeInfo] | None = None
        plugin_scores: list[tuple[str, IntArray]] = []
        totals = np.zeros(len(positions), dtype=np.int64)
        for name, weight, batch in scores:
            if batch is None:
                if infos is None:
                    infos = feasible_infos(self.mirror, positions)
                per_node, status = framework.run_score_plugin(name, state, pod, infos)
                if not status.is_success():
                    return None
                values = np.array(per_node, dtype=np.int64)
            else:
                values = columns[name]
            if len(values) and (values.min() < 0 or values.max() > MAX_NODE_SCORE):
                return None
            weighted = values * weight
            plugin_scores.append((name, weighted))
            totals += weighted
        self.used_score += 1
        return ScoreResult(positions, self.mirror.names, plugin_scores, totals)

    # Host selection ------------------------------------------------------------------------------

    @staticmethod
    def select_host(totals: IntArray, rng: random.Random) -> int:
        """The index the per-node reservoir sampling picks, drawing the same random numbers.

        Only nodes whose total is at least every earlier total take part ("leaders"): a
        strictly greater one resets the reservoir, an equal one is a tie that draws
        ``randrange(ties)`` and takes the lead on 0. The tie counts depend only on the totals,
        so all draws can be made at once.
        """
        leaders = np.flatnonzero(totals >= np.maximum.accumulate(totals))
        values = totals[leaders]
        count = len(leaders)
        steps = np.arange(count, dtype=np.int64)
        resets = np.ones(count, dtype=np.bool_)
        resets[1:] = values[1:] > values[:-1]
        last_reset = np.maximum.accumulate(np.where(resets, steps, 0))
        ties = np.flatnonzero(~resets)
        if not len(ties):
            return int(leaders[last_reset[-1]])
        draws = randrange_many(rng, (steps[ties] - last_reset[ties] + 1).tolist())
        final_reset = int(last_reset[-1])
        best = final_reset
        for tie, draw in zip(ties.tolist(), draws, strict=True):
            if draw == 0 and tie > best:
                best = tie
        return int(leaders[best])


def feasible_infos(mirror: NodeMirror, positions: IntArray) -> list[NodeInfo]:
    """The snapshot NodeInfos at ``positions``, in order."""
    count = len(positions)
    if count < 2:
        return [mirror.infos[int(positions[0])]] if count else []
    return list(itemgetter(*positions.tolist())(mirror.infos))
