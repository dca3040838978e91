"""The vectorised Filter, Score and host selection, equivalent to the per-node path.

Filtering computes, with numpy over every node at once, which nodes each supported Filter plugin
rejects, then walks the round-robin window exactly as the per-node loop does: from the start
index, in snapshot order, until enough feasible nodes are found. Rejected nodes in the window get
the very Status the per-node path would give them: nodes are grouped by what rejects them (the
first failing plugin and, for NodeResourcesFit, which resources fall short and whether any
shortfall is unresolvable), one node per group runs the real plugins, and the group shares the
resulting Status. Nominated pods of equal or higher priority are counted on their nodes the way
the per-node path counts them (see :meth:`FastPath.nominated`); when a PreFilter extension keeps
per-pod state (PodTopologySpread, InterPodAffinity), the few nodes with such nominated pods run
the real plugins instead.

PodTopologySpread and InterPodAffinity read the pods of the whole cluster. Their PreFilter and
PreScore get their counts from columns kept in step with the snapshot (:mod:`.spread`,
:mod:`.inter_pod`), which :meth:`FastPath.offer_counters` offers them through the cycle state;
their Filter and Score are then evaluated from the state those PreFilter and PreScore wrote.

Scoring reproduces each supported plugin's integers (Go's truncating division, the same float64
operations where upstream uses floats), normalisation and weights. Host selection replays the
reservoir sampling over the same totals in the same order, so it draws the same random numbers.

Whenever an attempt falls outside what is supported (a plugin or argument the fast path does not
model, a PreFilter restricting the node set, extended resources, an error status), the engine
returns ``None`` and the caller runs the per-node path instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import PodNominator
from kopf_scheduler.framework.interfaces import MAX_NODE_SCORE
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodePluginScores, NodeToStatus
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resources import CPU, Resource
from kopf_scheduler.model.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
)
from kopf_scheduler.model.taints import Toleration, find_untolerated_taint, tolerations_tolerate
from kopf_scheduler.plugins import (
    image_locality,
    node_affinity,
    node_resources_fit,
    taint_toleration,
)
from kopf_scheduler.plugins import node_resources_balanced_allocation as balanced
from kopf_scheduler.plugins.inter_pod_affinity import filtering as affinity_filtering
from kopf_scheduler.plugins.inter_pod_affinity import scoring as affinity_scoring
from kopf_scheduler.plugins.inter_pod_affinity.counting import AFFINITY_COUNTER_KEY
from kopf_scheduler.plugins.node_resources_fit import LEAST_ALLOCATED
from kopf_scheduler.plugins.node_unschedulable import UNSCHEDULABLE_TAINT
from kopf_scheduler.plugins.pod_topology_spread import filtering as spread_filtering
from kopf_scheduler.plugins.pod_topology_spread import scoring as spread_scoring
from kopf_scheduler.plugins.pod_topology_spread.counting import DOMAIN_COUNTER_KEY
from kopf_scheduler.plugins.resource_allocation import is_scalar_resource_name
from kopf_scheduler.queue.nominator import Nominator
from kopf_scheduler.scheduler.fast_path.fallback import Fallback
from kopf_scheduler.scheduler.fast_path.inter_pod import InterPodModel
from kopf_scheduler.scheduler.fast_path.mirror import (
    NODE_NAME_FIELD,
    SAFE_LIMIT,
    BoolArray,
    IntArray,
    NodeMirror,
)
from kopf_scheduler.scheduler.fast_path.pod_counts import PodCounts
from kopf_scheduler.scheduler.fast_path.profile import Kind, ProfileSupport, Step, analyse
from kopf_scheduler.scheduler.fast_path.rng import randrange_many
from kopf_scheduler.scheduler.fast_path.spread import SpreadModel
from kopf_scheduler.scheduler.fast_path.term_census import TermCensus

_FIT_TOO_MANY_PODS = 1
_FIT_CPU = 2
_FIT_MEMORY = 4
_FIT_EPHEMERAL = 8
_FIT_UNRESOLVABLE = 16
_SIGNATURE_STRIDE = 32
"""Rejection signature = first failing filter index * stride + NodeResourcesFit bits."""

_TOLERATION_CACHE_LIMIT = 256


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
) -> list[tuple[int, int, int, int, int]]:
    """``(position, cpu, memory, ephemeral storage, pod count)`` of the nominated pods that
    count against ``pod`` on each node: those of equal or higher priority other than ``pod``,
    as :meth:`~kopf_scheduler.queue.nominator.Nominator.nominated_pods_for_node` returns them
    (the queued object, or an identity-only stub: priority 0, no requests)."""
    position = mirror.position
    priority = pod.priority
    uid = pod.uid
    loads: list[tuple[int, int, int, int, int]] = []
    if type(nominator) is Nominator:
        # The walk nominated_pods_for_node does, without building stub pods.
        lookup = nominator.lookup
        stub_counts = priority <= 0
        for name, refs in nominator._by_node.items():
            index = position.get(name)
            if index is None:
                continue
            cpu = memory = ephemeral = count = 0
            for ref in refs:
                current = lookup(f"{ref.namespace}/{ref.name}") if lookup is not None else None
                if current is None:
                    if stub_counts and (ref.uid or f"{ref.namespace}/{ref.name}") != uid:
                        count += 1
                    continue
                if current.priority < priority or current.uid == uid:
                    continue
                requests = current.requests
                if requests.scalar and any(
                    is_scalar_resource_name(name) for name in requests.scalar
                ):
                    raise Fallback
                cpu += requests.milli_cpu
                memory += requests.memory
                ephemeral += requests.ephemeral_storage
                count += 1
            if count:
                loads.append((index, cpu, memory, ephemeral, count))
        return loads
    nominations = getattr(nominator, "nominations", None)
    names = list(nominations()) if callable(nominations) else mirror.names
    for name in names:
        index = position.get(name)
        if index is None:
            continue
        cpu = memory = ephemeral = count = 0
        for other in nominator.nominated_pods_for_node(name):
            if other.priority < priority or other.uid == uid:
                continue
            requests = other.requests
            if requests.scalar and any(is_scalar_resource_name(name) for name in requests.scalar):
                raise Fallback
            cpu += requests.milli_cpu
            memory += requests.memory
            ephemeral += requests.ephemeral_storage
            count += 1
        if count:
            loads.append((index, cpu, memory, ephemeral, count))
    return loads


class StepFailure(NamedTuple):
    """The nodes one Filter rejects."""

    filter_index: int
    """The Filter's position in the profile."""
    fails: BoolArray
    detail: IntArray | None
    """Per node, which of the Filter's rejections applies (for Filters with several)."""


class FreeColumns:
    """Free capacity per node (allocatable minus requested), with nominated pods counted."""

    __slots__ = ("cpu", "ephemeral", "extra", "memory", "pods")

    def __init__(
        self, cpu: IntArray, memory: IntArray, ephemeral: IntArray, pods: IntArray
    ) -> None:
        self.cpu = cpu
        self.memory = memory
        self.ephemeral = ephemeral
        self.pods = pods
        self.extra: dict[int, tuple[int, int, int, int]] = {}
        """Position -> (cpu, memory, ephemeral storage, pod count) of counted nominated pods."""


def fit_bits(
    mirror: NodeMirror, request: Resource, positions: IntArray, free: FreeColumns
) -> IntArray:
    """NodeResourcesFit's shortfall signature (which resources fall short, and whether any
    shortfall exceeds the node's allocatable amount) for the nodes at ``positions``."""
    bits: IntArray = np.where(free.pods[positions] < 1, _FIT_TOO_MANY_PODS, 0)
    unresolvable = np.zeros(len(positions), dtype=np.bool_)
    for value, column, allocatable, bit in (
        (request.milli_cpu, free.cpu, mirror.alloc_cpu, _FIT_CPU),
        (request.memory, free.memory, mirror.alloc_mem, _FIT_MEMORY),
        (request.ephemeral_storage, free.ephemeral, mirror.alloc_eph, _FIT_EPHEMERAL),
    ):
        if value <= 0:
            continue
        short = column[positions] < value
        bits |= np.where(short, bit, 0)
        unresolvable |= short & (allocatable[positions] < value)
    result: IntArray = bits | np.where(unresolvable, _FIT_UNRESOLVABLE, 0)
    return result


def _toleration_signature(
    tolerations: tuple[Toleration, ...],
) -> tuple[tuple[str, str, str, str], ...]:
    return tuple((t.key, t.operator, t.value, t.effect) for t in tolerations)


def go_div_array(numerator: IntArray, denominator: int) -> IntArray:
    """Integer division truncating toward zero, elementwise (Go's ``/``)."""
    quotient = np.abs(numerator) // abs(denominator)
    negative = (numerator < 0) != (denominator < 0)
    return np.where(negative, -quotient, quotient)


class FastPath:
    """Vectorised scheduling for one scheduler (one snapshot)."""

    def __init__(self) -> None:
        self.mirror = NodeMirror()
        self.pod_counts = PodCounts(self.mirror)
        self.census = TermCensus(self.mirror)
        self.spread = SpreadModel(self)
        self.inter_pod = InterPodModel(self)
        self._profiles: dict[int, tuple[Framework, ProfileSupport]] = {}
        self._untolerated: dict[tuple[tuple[str, str, str, str], ...], BoolArray] = {}
        self._prefer_counts: dict[tuple[tuple[str, str, str, str], ...], IntArray] = {}
        self._nominated_cache: (
            tuple[CycleState, tuple[str, int], Snapshot | None, FreeColumns] | None
        ) = None
        self.used_filter = 0
        self.used_score = 0
        """Counters of attempts the vectorised path served (for tests and diagnostics)."""

    def support(self, framework: Framework) -> ProfileSupport:
        entry = self._profiles.get(id(framework))
        if entry is None or entry[0] is not framework:
            entry = (framework, analyse(framework))
            self._profiles[id(framework)] = entry
        return entry[1]

    # Counts offered to PreFilter and PreScore ----------------------------------------------------

    def offer_counters(self, state: CycleState, snapshot: Snapshot) -> None:
        """Let the attempt's PodTopologySpread and InterPodAffinity plugins count from the
        columns kept for ``snapshot`` instead of walking every pod."""
        self.mirror.sync(snapshot)
        state.write(DOMAIN_COUNTER_KEY, self.spread)
        state.write(AFFINITY_COUNTER_KEY, self.inter_pod)

    def serves(self, nodes: Sequence[NodeInfo]) -> bool:
        """Whether ``nodes`` is the node list the mirror follows (brought up to date)."""
        snapshot = self.mirror.snapshot
        if snapshot is None or nodes is not snapshot.node_info_list:
            return False
        self.mirror.sync(snapshot)
        return True

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
        steps = self.support(framework).filters
        if steps is None:
            return None
        mirror = self.mirror
        mirror.sync(snapshot)
        if not mirror.safe or mirror.size == 0:
            return None
        try:
            if self.extensions_active(framework, state):
                free = self._free_columns()
                with_nominated = self._nominated_positions(framework, pod)
            else:
                free = self.nominated(framework, state, pod)
                with_nominated = []
            failures = self.step_failures(steps, state, pod, free=free)
        except Fallback:
            return None
        size = mirror.size
        if failures:
            rejects = failures[0].fails.copy()
            for failure in failures[1:]:
                rejects |= failure.fails
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
            steps,
            rejected,
            self._signatures(steps, failures, state, rejected, free),
            verdicts,
            statuses,
            add_status,
        ):
            return None
        self.used_filter += 1
        return FilterResult(feasible, window)

    def _signatures(
        self,
        steps: tuple[Step, ...],
        failures: list[StepFailure],
        state: CycleState,
        positions: IntArray,
        free: FreeColumns,
    ) -> IntArray:
        """What rejects each node at ``positions``: the first failing Filter's index times
        the stride, plus that Filter's detail (for NodeResourcesFit, which resources fall
        short; for the plugins with several rejections, which one)."""
        first = np.full(len(positions), -1, dtype=np.int64)
        for failure in reversed(failures):
            first[failure.fails[positions]] = failure.filter_index
        signature = np.where(first >= 0, first * _SIGNATURE_STRIDE, -1)
        for failure in failures:
            chosen = first == failure.filter_index
            if not chosen.any():
                continue
            if failure.detail is not None:
                signature[chosen] += failure.detail[positions[chosen]]
            elif steps[failure.filter_index].kind is Kind.FIT:
                signature[chosen] += self._fit_bits(state, positions[chosen], free)
        return signature

    def _record_rejections(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        steps: tuple[Step, ...],
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
            if status.plugin != steps[code // _SIGNATURE_STRIDE].name:
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
        if it fits, again without them; with only the modelled Filters active (PreFilter
        extensions would update cycle state per added pod, so they must be inactive) a node
        that fits with more pods also fits with fewer. Cached for the attempt, since the
        PostFilter dry run asks again.
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
        free = self._free_columns()
        loads = _nominated_loads(framework.handle.nominator, mirror, pod)
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
        self._nominated_cache = (state, (pod.uid, pod.priority), mirror.snapshot, free)
        return free

    def _free_columns(self) -> FreeColumns:
        mirror = self.mirror
        return FreeColumns(mirror.free_cpu, mirror.free_mem, mirror.free_eph, mirror.free_pods)

    def _nominated_positions(self, framework: Framework, pod: Pod) -> list[int]:
        """The nodes where nominated pods count against ``pod``."""
        return [load[0] for load in _nominated_loads(framework.handle.nominator, self.mirror, pod)]

    @staticmethod
    def extensions_active(framework: Framework, state: CycleState) -> bool:
        """Whether a PreFilter plugin not skipped for this attempt has AddPod/RemovePod."""
        skip = state.skip_filter_plugins
        return any(
            plugin.name not in skip and plugin.pre_filter_extensions() is not None
            for plugin in framework.plugins.pre_filter
        )

    def step_failures(
        self,
        steps: tuple[Step, ...],
        state: CycleState,
        pod: Pod,
        *,
        free: FreeColumns | None = None,
    ) -> list[StepFailure]:
        """The rejections of every modelled Filter that rejects any node; raises
        :class:`Fallback` when a Filter that is not skipped cannot be modelled for this pod.

        Without ``free`` only the Filters that do not depend on the pods already on the node
        are evaluated: NodeResourcesFit is left out, and PodTopologySpread or InterPodAffinity
        (unless skipped) raise :class:`Fallback`.
        """
        failures: list[StepFailure] = []
        skip = state.skip_filter_plugins
        for index, step in enumerate(steps):
            if skip and step.name in skip:
                continue
            kind = step.kind
            fails: BoolArray | None
            detail: IntArray | None = None
            if kind is Kind.UNSCHEDULABLE:
                fails = self._unschedulable_fails(pod)
            elif kind is Kind.NODE_NAME:
                if pod.node_name:
                    raise Fallback
                fails = None
            elif kind is Kind.TAINTS:
                fails = self.untolerated_mask(pod)
            elif kind is Kind.NODE_AFFINITY:
                required = state.get(node_affinity.PRE_FILTER_KEY)
                if required is None:
                    required = node_affinity.RequiredNodeAffinity(pod)
                fails = ~self._selector_mask(required.node_selector, required.terms)
            elif kind is Kind.FIT:
                fails = self._fit_fails(state, free) if free is not None else None
            elif kind is Kind.SPREAD and free is not None:
                spread_state = state.get(spread_filtering.PRE_FILTER_KEY)
                if spread_state is None:
                    raise Fallback
                fails, detail = self.spread.filter_failures(spread_state, pod) or (None, None)
            elif kind is Kind.INTER_POD_AFFINITY and free is not None:
                affinity_state = state.get(affinity_filtering.PRE_FILTER_KEY)
                if affinity_state is None:
                    raise Fallback
                fails, detail = self.inter_pod.filter_failures(affinity_state) or (None, None)
            else:
                raise Fallback
            if fails is not None:
                failures.append(StepFailure(index, fails, detail))
        return failures

    def _unschedulable_fails(self, pod: Pod) -> BoolArray | None:
        unschedulable = self.mirror.unschedulable
        if not unschedulable.any():
            return None
        if tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return unschedulable.copy()

    def untolerated_mask(self, pod: Pod) -> BoolArray | None:
        """The nodes with a NoSchedule or NoExecute taint ``pod`` does not tolerate, or
        ``None`` when there are none."""
        table = self._per_taint_set(
            self._untolerated,
            pod.tolerations,
            lambda taints, tolerations: (
                find_untolerated_taint(
                    taints, tolerations, taint_toleration.DO_NOT_SCHEDULE_EFFECTS
                )
                is not None
            ),
            np.bool_,
        )
        if not table.any():
            return None
        result: BoolArray = table[self.mirror.taint_id]
        return result

    def _per_taint_set(
        self,
        cache: dict[tuple[tuple[str, str, str, str], ...], Any],
        tolerations: tuple[Toleration, ...],
        evaluate: Callable[[Any, tuple[Toleration, ...]], Any],
        dtype: Any,
    ) -> Any:
        """``evaluate(taints, tolerations)`` for every known taint set, memoised per toleration
        list (taint set ids are never reused, so cached entries only need extending)."""
        taint_sets = self.mirror.taint_sets
        key = _toleration_signature(tolerations)
        table = cache.get(key)
        if table is None or len(table) < len(taint_sets):
            known = 0 if table is None else len(table)
            extra = np.array(
                [evaluate(taints, tolerations) for taints in taint_sets[known:]], dtype=dtype
            )
            table = extra if table is None else np.concatenate((table, extra))
            if len(cache) >= _TOLERATION_CACHE_LIMIT:
                cache.clear()
            cache[key] = table
        return table

    @staticmethod
    def fit_request(state: CycleState) -> Resource:
        """The pod's NodeResourcesFit request, if the fast path can model it."""
        pre_filter = state.get(node_resources_fit.PRE_FILTER_KEY)
        if pre_filter is None:
            raise Fallback
        request: Resource = pre_filter.request
        if any(is_scalar_resource_name(name) for name in request.scalar):
            raise Fallback
        wanted = (request.milli_cpu, request.memory, request.ephemeral_storage)
        if not all(0 <= value < SAFE_LIMIT for value in wanted):
            raise Fallback
        return request

    def _fit_fails(self, state: CycleState, free: FreeColumns) -> BoolArray | None:
        request = self.fit_request(state)
        fails: BoolArray = free.pods < 1
        for value, column in (
            (request.milli_cpu, free.cpu),
            (request.memory, free.memory),
            (request.ephemeral_storage, free.ephemeral),
        ):
            if value > 0:
                fails |= column < value
        return fails if fails.any() else None

    def _fit_bits(self, state: CycleState, positions: IntArray, free: FreeColumns) -> IntArray:
        """NodeResourcesFit's shortfall bits for the nodes at ``positions``."""
        return fit_bits(self.mirror, self.fit_request(state), positions, free)

    # Node affinity ------------------------------------------------------------------------------

    def pod_node_affinity_mask(self, pod: Pod) -> BoolArray:
        """The nodes matching ``pod``'s ``nodeSelector`` and one of the terms of its required
        node affinity (all of them, malformed ones too), as PodTopologySpread's inclusion
        policy reads them."""
        required = pod.node_affinity_required
        return self._selector_mask(pod.node_selector, None if required is None else required.terms)

    def _selector_mask(
        self, node_selector: Mapping[str, str], terms: Sequence[NodeSelectorTerm] | None
    ) -> BoolArray:
        """The nodes with every ``node_selector`` label that match one of ``terms`` (when
        there are terms)."""
        mirror = self.mirror
        mask = np.ones(mirror.size, dtype=np.bool_)
        for key, value in node_selector.items():
            column = mirror.labels(key)
            code = column.code_of(value)
            if code is None:
                return np.zeros(mirror.size, dtype=np.bool_)
            mask &= column.codes == code
        if terms is None:
            return mask
        matched = np.zeros(mirror.size, dtype=np.bool_)
        for term in terms:
            matched |= self._term_mask(term)
        return mask & matched

    def _term_mask(self, term: NodeSelectorTerm) -> BoolArray:
        size = self.mirror.size
        if not term.label_requirements and not term.field_requirements:
            return np.zeros(size, dtype=np.bool_)
        mask = np.ones(size, dtype=np.bool_)
        for requirement in term.label_requirements:
            mask &= self.requirement_mask(requirement)
        for requirement in term.field_requirements:
            mask &= self._field_mask(requirement)
        return mask

    def requirement_mask(self, requirement: Requirement) -> BoolArray:
        """Which nodes' labels satisfy ``requirement`` (``Requirement.matches`` per node)."""
        column = self.mirror.labels(requirement.key)
        codes = column.codes
        operator = requirement.operator
        if operator in (IN, NOT_IN):
            known = [column.code_of(value) for value in requirement.values]
            wanted = [code for code in known if code is not None]
            if not wanted:
                hit = np.zeros(len(codes), dtype=np.bool_)
            elif len(wanted) == 1:
                hit = codes == wanted[0]
            else:
                hit = np.isin(codes, wanted)
            return hit if operator == IN else ~hit
        if operator == EXISTS:
            result: BoolArray = codes >= 0
            return result
        if operator == DOES_NOT_EXIST:
            result = codes < 0
            return result
        # Gt / Lt: evaluate once per distinct value; the last entry stands for "no such label".
        key = requirement.key
        table = [requirement.matches({key: value}) for value in column.values]
        table.append(requirement.matches({}))
        lookup: BoolArray = np.array(table, dtype=np.bool_)[codes]
        return lookup

    def _field_mask(self, requirement: Requirement) -> BoolArray:
        mirror = self.mirror
        if requirement.key != NODE_NAME_FIELD or requirement.operator not in (IN, NOT_IN):
            raise Fallback
        hit = np.zeros(mirror.size, dtype=np.bool_)
        for name in requirement.values:
            index = mirror.position.get(name)
            if index is not None:
                hit[index] = True
        return hit if requirement.operator == IN else ~hit

    # Score -----------------------------------------------------------------------------------

    def score(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        positions: IntArray,
    ) -> ScoreResult | None:
        """The weighted scores of ``positions`` after PreScore ran; ``None``: use the per-node
        path."""
        steps = self.support(framework).scores
        if steps is None:
            return None
        skip = state.skip_score_plugins
        plugin_scores: list[tuple[str, IntArray]] = []
        totals = np.zeros(len(positions), dtype=np.int64)
        try:
            for step in steps:
                if step.name in skip:
                    continue
                values = self._plugin_scores(step, state, pod, positions)
                if len(values) and (values.min() < 0 or values.max() > MAX_NODE_SCORE):
                    return None
                weighted = values * step.weight
                plugin_scores.append((step.name, weighted))
                totals += weighted
        except Fallback:
            return None
        self.used_score += 1
        return ScoreResult(positions, self.mirror.names, plugin_scores, totals)

    def _plugin_scores(
        self, step: Step, state: CycleState, pod: Pod, positions: IntArray
    ) -> IntArray:
        kind = step.kind
        if kind is Kind.TAINTS:
            return self._taint_scores(state, positions)
        if kind is Kind.NODE_AFFINITY:
            return self._affinity_scores(state, pod, positions)
        if kind is Kind.FIT:
            return self._fit_scores(step.plugin, state, pod, positions)
        if kind is Kind.BALANCED:
            return self._balanced_scores(step.plugin, state, pod, positions)
        if kind is Kind.IMAGES:
            return self._image_scores(step.plugin, pod, positions)
        if kind is Kind.SPREAD:
            spread_state = state.get(spread_scoring.PRE_SCORE_KEY)
            if spread_state is None:
                raise Fallback
            return self.spread.scores(spread_state, pod, positions)
        if kind is Kind.INTER_POD_AFFINITY:
            affinity_state = state.get(affinity_scoring.PRE_SCORE_KEY)
            if affinity_state is None:
                raise Fallback
            return self.inter_pod.scores(affinity_state, positions)
        raise Fallback

    def _taint_scores(self, state: CycleState, positions: IntArray) -> IntArray:
        pre_score = state.get(taint_toleration.PRE_SCORE_KEY)
        if pre_score is None:
            raise Fallback
        table = self._per_taint_set(
            self._prefer_counts,
            pre_score.tolerations,
            taint_toleration.count_intolerable_prefer_no_schedule,
            np.int64,
        )
        counts: IntArray = table[self.mirror.taint_id[positions]]
        highest = int(counts.max()) if len(counts) else 0
        if highest <= 0:
            return np.full(len(positions), MAX_NODE_SCORE, dtype=np.int64)
        return MAX_NODE_SCORE - go_div_array(MAX_NODE_SCORE * counts, highest)

    def _affinity_scores(self, state: CycleState, pod: Pod, positions: IntArray) -> IntArray:
        pre_score = state.get(node_affinity.PRE_SCORE_KEY)
        if pre_score is None:
            raise Fallback
        preferred: tuple[PreferredSchedulingTerm, ...] = pre_score.preferred
        raw = np.zeros(len(positions), dtype=np.int64)
        for term in preferred:
            raw += np.where(self._term_mask(term.term)[positions], term.weight, 0)
        highest = max(int(raw.max()) if len(raw) else 0, 0)
        if highest == 0:
            return raw
        return go_div_array(MAX_NODE_SCORE * raw, highest)

    def _resource_columns(self, name: str, use_requested: bool) -> tuple[IntArray, IntArray]:
        mirror = self.mirror
        if name == CPU:
            return mirror.alloc_cpu, (mirror.req_cpu if use_requested else mirror.nz_cpu)
        return mirror.alloc_mem, (mirror.req_mem if use_requested else mirror.nz_mem)

    def _fit_scores(
        self, plugin: Any, state: CycleState, pod: Pod, positions: IntArray
    ) -> IntArray:
        pre_score = state.get(node_resources_fit.PRE_SCORE_KEY)
        scorer = plugin.scorer
        pod_requests: Sequence[int] = (
            pre_score.pod_requests if pre_score is not None else scorer.pod_request_list(pod)
        )
        least = plugin.args.scoring_strategy.type == LEAST_ALLOCATED
        count = len(positions)
        total = np.zeros(count, dtype=np.int64)
        weight_sum: IntArray | int = 0
        for spec, request in zip(scorer.resources, pod_requests, strict=True):
            if not 0 <= request < SAFE_LIMIT:
                raise Fallback
            allocatable_column, requested_column = self._resource_columns(spec.name, False)
            allocatable = allocatable_column[positions]
            requested = requested_column[positions] + request
            present = allocatable != 0
            everywhere = bool(present.all())
            divisor = allocatable if everywhere else np.where(present, allocatable, 1)
            if least:
                # Overfull (requested > allocatable) gives a negative quotient: clamp to 0.
                value = np.maximum((allocatable - requested) * MAX_NODE_SCORE // divisor, 0)
            else:
                value = np.minimum(requested, allocatable) * MAX_NODE_SCORE // divisor
            if everywhere:
                total += value * spec.weight
                weight_sum = weight_sum + spec.weight
            else:
                total += np.where(present, value * spec.weight, 0)
                weight_sum = weight_sum + np.where(present, spec.weight, 0)
        if isinstance(weight_sum, int):
            if weight_sum == 0:
                return np.zeros(count, dtype=np.int64)
            return total // weight_sum
        return np.where(weight_sum == 0, 0, total // np.where(weight_sum == 0, 1, weight_sum))

    def _balanced_scores(
        self, plugin: Any, state: CycleState, pod: Pod, positions: IntArray
    ) -> IntArray:
        pre_score = state.get(balanced.PRE_SCORE_KEY)
        scorer = plugin.scorer
        if pre_score is not None:
            pod_requests: Sequence[int] = pre_score.pod_requests
        else:
            pod_requests = scorer.pod_request_list(pod)
            if scorer.is_best_effort(pod_requests):
                return np.zeros(len(positions), dtype=np.int64)
        fractions = []
        for spec, request in zip(scorer.resources, pod_requests, strict=True):
            if not 0 <= request < SAFE_LIMIT:
                raise Fallback
            allocatable_column, requested_column = self._resource_columns(spec.name, True)
            allocatable = allocatable_column[positions]
            requested = requested_column[positions] + request
            present = allocatable != 0
            everywhere = bool(present.all())
            # Integer arrays divide in float64, like float(requested) / float(allocatable).
            fraction = np.true_divide(
                requested, allocatable if everywhere else np.where(present, allocatable, 1)
            )
            fractions.append((everywhere, present, np.minimum(fraction, 1.0)))
        count = len(positions)
        if len(fractions) != 2:
            if len(fractions) > 2:
                raise Fallback
            return np.full(count, MAX_NODE_SCORE, dtype=np.int64)
        (all_a, present_a, first), (all_b, present_b, second) = fractions
        std = np.abs((first - second) / 2)
        if not (all_a and all_b):
            std = np.where(present_a & present_b, std, 0.0)
        result: IntArray = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        return result

    def _image_scores(self, plugin: Any, pod: Pod, positions: IntArray) -> IntArray:
        total_num_nodes = plugin._handle.snapshot.num_nodes()
        images = image_locality.pod_container_images(pod)
        sums = np.zeros(self.mirror.size, dtype=np.int64)
        if total_num_nodes > 0 and images:
            index = self.mirror.image_index()
            for image in images:
                groups = index.get(image_locality.normalized_image_name(image))
                if not groups:
                    continue
                for state, members in groups:
                    sums[members] += image_locality.scaled_image_score(state, total_num_nodes)
        if not images:
            return np.zeros(len(positions), dtype=np.int64)
        picked = sums[positions]
        if picked.max(initial=0) >= SAFE_LIMIT:
            raise Fallback
        max_threshold = image_locality.MAX_CONTAINER_THRESHOLD * len(images)
        minimum = image_locality.MIN_THRESHOLD
        clamped = np.where(picked < minimum, minimum, np.minimum(picked, max_threshold))
        return MAX_NODE_SCORE * (clamped - minimum) // (max_threshold - minimum)

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
