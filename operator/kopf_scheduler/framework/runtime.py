"""The framework runtime: runs one profile's plugins at each extension point.

Rules kept from upstream: the first rejecting Filter stops the node and its plugin name is stamped
on the status; a PreFilter returning Skip skips its Filter (and a PreScore Skip its Score); a
non-rejection failure becomes an Error naming the plugin; scores are normalised per plugin, checked
to lie in [0, 100], then weighted and summed. Nominated pods of equal or higher priority are
counted on a node during filtering, and the node must pass with and without them.

Every run of an extension point is timed through :func:`_timed`
(``scheduler_framework_extension_point_duration_seconds``); each plugin call is timed too
(``scheduler_plugin_execution_duration_seconds``), but only in the cycles whose state asks for
it (``CycleState.record_plugin_metrics``, set for a sample of cycles), because per-node Filter
and Score calls are many.

The runtime reads its profile's :class:`~kopf_scheduler.framework.handle.Handle` through
:class:`ProfileHandle`, so that the handle may name the framework without the two modules
importing each other.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import WILDCARD_EVENT, ClusterEventWithHint
from kopf_scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilter,
    BatchFilterPlugin,
    BatchScore,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    ExplainingPlugin,
    FilterPlugin,
    NodeScore,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kopf_scheduler.framework.pod_nominator import PodNominator, counts_against
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import (
    NodePluginScores,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from kopf_scheduler.metric_names import (
    FRAMEWORK_EXTENSION_POINT_DURATION,
    PLUGIN_EXECUTION_DURATION,
)
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import Metrics

MAX_TIMEOUT_SECONDS = 15 * 60.0
_REJECTING_POINTS = (
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
)


@dataclass
class ProfilePlugins:
    """The plugin instances of one profile, in configured order per extension point."""

    queue_sort: QueueSortPlugin | None = None
    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)
    all: list[Plugin] = field(default_factory=list)

    @functools.cached_property
    def explaining(self) -> list[ExplainingPlugin]:
        """The plugins that add their own facts to decision records, found once: a failed
        attempt's record asks them on every attempt."""
        return [plugin for plugin in self.all if isinstance(plugin, ExplainingPlugin)]


class ProfileHandle(Protocol):
    """What the runtime, and the code driving a profile, read of the profile's handle."""

    snapshot: Snapshot
    nominator: PodNominator
    now: Callable[[], float]
    metrics: Metrics
    framework: Framework | None


_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def _timed(
    point: str, status_of: Callable[[Any], Status]
) -> Callable[
    [Callable[Concatenate[Framework, _Params], _Result]],
    Callable[Concatenate[Framework, _Params], _Result],
]:
    """Record every run of the decorated method as one run of the extension point ``point``,
    with the status ``status_of`` finds in its result."""

    def decorate(
        run: Callable[Concatenate[Framework, _Params], _Result],
    ) -> Callable[Concatenate[Framework, _Params], _Result]:
        @functools.wraps(run)
        def timed(
            framework: Framework, /, *args: _Params.args, **kwargs: _Params.kwargs
        ) -> _Result:
            started = framework.handle.now()
            result = run(framework, *args, **kwargs)
            framework.observe_extension_point(point, started, status_of(result))
            return result

        return timed

    return decorate


def _timed_async(
    point: str,
) -> Callable[
    [Callable[Concatenate[Framework, _Params], Awaitable[Status]]],
    Callable[Concatenate[Framework, _Params], Coroutine[Any, Any, Status]],
]:
    """:func:`_timed` for the extension points that are coroutines returning a status."""

    def decorate(
        run: Callable[Concatenate[Framework, _Params], Awaitable[Status]],
    ) -> Callable[Concatenate[Framework, _Params], Coroutine[Any, Any, Status]]:
        @functools.wraps(run)
        async def timed(
            framework: Framework, /, *args: _Params.args, **kwargs: _Params.kwargs
        ) -> Status:
            started = framework.handle.now()
            status = await run(framework, *args, **kwargs)
            framework.observe_extension_point(point, started, status)
            return status

        return timed

    return decorate


def _status_itself(status: Status) -> Status:
    return status


def _status_in_result(result: tuple[Any, ...]) -> Status:
    """The status of a ``(result, status, ...)`` tuple."""
    status: Status = result[1]
    return status


def _success(_: None) -> Status:
    return SUCCESS


def _failed(point: str, plugin: str, status: Status) -> Status:
    """A plugin's unsuccessful status as its extension point reports it: a rejection keeps its
    code and names the plugin, anything else becomes an Error that says where it came from."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status(
        Code.ERROR,
        f'running {point} plugin "{plugin}": {status.message()}',
        plugin=plugin,
        error=status.error,
    )


class DryRunAccelerator(Protocol):
    """Speeds up preemption dry runs for the attempts it can serve with identical results.

    ``victim_finder`` returns, for one preemption attempt, a function taking a snapshot
    NodeInfo and returning that node's victim selection (without modifying anything), or
    ``None`` for a node it cannot decide exactly; the whole result is ``None`` when the attempt
    is not served at all. The preemption package defines what a selection is.
    """

    def victim_finder(
        self,
        framework: Framework,
        state: CycleState,
        preemptor: Pod,
        pdbs: Sequence[Any],
        now: float,
    ) -> Callable[[NodeInfo], Any] | None: ...


class WaitingPod:
    """A pod assumed on a node and held at Permit until every plugin that said Wait allows it
    (upstream's ``WaitingPod``). Plugins reach the waiting pods through
    :meth:`Framework.waiting_pods`; the binding cycle waits on :attr:`result`."""

    def __init__(self, pod: Pod, pending: dict[str, float]) -> None:
        self.pod = pod
        self.pending = dict(pending)
        """The plugins that have not allowed the pod yet, with their timeouts."""
        self.result: asyncio.Future[Status] = asyncio.get_running_loop().create_future()

    def pending_plugins(self) -> list[str]:
        return list(self.pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; it binds once no plugin is pending."""
        self.pending.pop(plugin, None)
        if not self.pending and not self.result.done():
            self.result.set_result(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        """End the wait with an Unschedulable status from ``plugin``; the reservation is undone."""
        if not self.result.done():
            self.result.set_result(Status(Code.UNSCHEDULABLE, message, plugin=plugin))


class Framework:
    """One scheduling profile: its name, plugins and the handle they share."""

    def __init__(
        self,
        scheduler_name: str,
        plugins: ProfilePlugins,
        handle: ProfileHandle,
        percentage_of_nodes_to_score: int | None = None,
        dry_run_accelerator: DryRunAccelerator | None = None,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.plugins = plugins
        self.handle = handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._waiting: dict[str, WaitingPod] = {}
        self._batch_filters: tuple[tuple[str, BatchFilter | None], ...] | None = None
        self._batch_scores: tuple[tuple[str, int, BatchScore | None], ...] | None = None
        self.dry_run_accelerator = dry_run_accelerator
        """Faster preemption dry runs, given when the vectorised fast path is on."""
        handle.framework = self

    # Queueing --------------------------------------------------------------------------------

    def queue_sort_less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        sorter = self.plugins.queue_sort
        if sorter is None:
            raise ValueError(f"profile {self.scheduler_name!r} has no QueueSort plugin")
        return sorter.less

    def run_pre_enqueue(self, pod: Pod) -> Status:
        for plugin in self.plugins.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success():
                if not status.is_rejected():
                    return Status.from_error(
                        RuntimeError(
                            f'running PreEnqueue plugin "{plugin.name}": {status.message()}'
                        ),
                        plugin.name,
                    )
                return status.with_plugin(plugin.name)
        return SUCCESS

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name → the cluster events that can make a pod it rejected schedulable."""
        result: dict[str, list[ClusterEventWithHint]] = {}
        for plugin in self.plugins.all:
            if isinstance(plugin, EnqueueExtensions):
                result[plugin.name] = plugin.events_to_register()
            elif isinstance(plugin, _REJECTING_POINTS):
                # A plugin that can reject a pod but names no events is retried on any event.
                result[plugin.name] = [ClusterEventWithHint(WILDCARD_EVENT)]
        return result

    # Filtering -----------------------------------------------------------------------------

    def has_filter_plugins(self) -> bool:
        return bool(self.plugins.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.plugins.score)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.plugins.post_filter)

    def batch_filters(self) -> tuple[tuple[str, BatchFilter | None], ...]:
        """Each Filter plugin's name and its batch Filter (``None`` when it has none), in
        profile order."""
        if self._batch_filters is None:
            self._batch_filters = tuple(
                (
                    plugin.name,
                    plugin.batch_filter() if isinstance(plugin, BatchFilterPlugin) else None,
                )
                for plugin in self.plugins.filter
            )
        return self._batch_filters

    def batch_scores(self) -> tuple[tuple[str, int, BatchScore | None], ...]:
        """Each Score plugin's name, weight and batch Score (``None`` when it has none), in
        profile order."""
        if self._batch_scores is None:
            self._batch_scores = tuple(
                (
                    plugin.name,
                    weight,
                    plugin.batch_score() if isinstance(plugin, BatchScorePlugin) else None,
                )
                for plugin, weight in self.plugins.score
            )
        return self._batch_scores

    @_timed("PreFilter", _status_in_result)
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Run PreFilter. Returns the merged node restriction, the status, and the plugins that
        restricted the node set (or rejected the pod).

        An UnschedulableAndUnresolvable status stops at once; an Unschedulable one lets the
        remaining PreFilters run (preemption needs their state) and the last such status wins.
        """
        result: PreFilterResult | None = None
        rejector: Status | None = None
        plugins_with_nodes: set[str] = set()
        skip = state.skip_filter_plugins
        timed = state.record_plugin_metrics
        for plugin in self.plugins.pre_filter:
            started = self.handle.now() if timed else 0.0
            plugin_result, status = plugin.pre_filter(state, pod, nodes)
            if timed:
                self.observe_plugin("PreFilter", plugin.name, started, status)
            if status.is_skip():
                skip.add(plugin.name)
                continue
            if not status.is_success():
                status = status.with_plugin(plugin.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, set()
                if status.code == Code.UNSCHEDULABLE:
                    rejector = status
                    continue
                error = RuntimeError(
                    f'running PreFilter plugin "{plugin.name}": {status.message()}'
                )
                return None, Status.from_error(error, plugin.name), set()
            if plugin_result is None or plugin_result.all_nodes():
                continue
            plugins_with_nodes.add(plugin.name)
            result = plugin_result if result is None else result.merge(plugin_result)
            if result.node_names is not None and not result.node_names:
                names = sorted(plugins_with_nodes)
                if len(names) == 1:
                    message = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    message = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
                return result, status, plugins_with_nodes
        if rejector is not None:
            return result, rejector, plugins_with_nodes
        return result, SUCCESS, plugins_with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(
            "AddPod", state, pod_to_schedule, pod_to_add, node_info
        )

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(
            "RemovePod", state, pod_to_schedule, pod_to_remove, node_info
        )

    def _run_pre_filter_extension(
        self,
        action: str,
        state: CycleState,
        pod_to_schedule: Pod,
        other: Pod,
        node_info: NodeInfo,
    ) -> Status:
        """Tell every active PreFilter plugin that ``other`` was added to or removed from a node."""
        for plugin in self.plugins.pre_filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            extensions = plugin.pre_filter_extensions()
            if extensions is None:
                continue
            method = extensions.add_pod if action == "AddPod" else extensions.remove_pod
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status = method(state, pod_to_schedule, other, node_info)
            if state.record_plugin_metrics:
                self.observe_plugin(f"PreFilterExtension{action}", plugin.name, started, status)
            if not status.is_success():
                message = (
                    f'running {action} on PreFilter plugin "{plugin.name}": {status.message()}'
                )
                return Status.from_error(RuntimeError(message), plugin.name)
        return SUCCESS

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        skip = state.skip_filter_plugins
        timed = state.record_plugin_metrics
        for plugin in self.plugins.filter:
            if skip and plugin.name in skip:
                continue
            started = self.handle.now() if timed else 0.0
            status = plugin.filter(state, pod, node_info)
            if timed:
                self.observe_plugin("Filter", plugin.name, started, status)
            if status.code != Code.SUCCESS:
                if not status.is_rejected():
                    return Status(
                        Code.ERROR,
                        f'running "{plugin.name}" filter plugin: {status.message()}',
                        plugin=plugin.name,
                        error=status.error,
                    )
                return status.with_plugin(plugin.name)
        return SUCCESS

    def _add_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo, Status]:
        nominated = self.handle.nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info, SUCCESS
        node_out: NodeInfo | None = None
        state_out = state
        for other in nominated:
            if counts_against(other, pod):
                if node_out is None:
                    node_out = node_info.clone()
                    state_out = state.clone()
                node_out.add_pod(other)
                status = self.run_pre_filter_extension_add_pod(state_out, pod, other, node_out)
                if not status.is_success():
                    return False, state, node_info, status
        if node_out is None:
            return False, state, node_info, SUCCESS
        return True, state_out, node_out, SUCCESS

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status:
        """Filter with nominated pods of equal or higher priority counted, then (if any) without."""
        added, state_with, node_with, status = self._add_nominated_pods(state, pod, node_info)
        if not status.is_success():
            return status
        status = self.run_filter_plugins(state_with, pod, node_with)
        if not added or not status.is_success():
            return status
        return self.run_filter_plugins(state, pod, node_info)

    @_timed("PostFilter", _status_in_result)
    def run_post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Run PostFilter until one succeeds; rejection reasons are joined as upstream does."""
        reasons: list[str] = []
        rejector = ""
        result: PostFilterResult | None = None
        for plugin in self.plugins.post_filter:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            plugin_result, status = plugin.post_filter(state, pod, node_to_status)
            if state.record_plugin_metrics:
                self.observe_plugin("PostFilter", plugin.name, started, status)
            if status.is_success():
                return plugin_result, status.with_plugin(plugin.name)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return plugin_result, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status.from_error(
                    RuntimeError(status.message()), plugin.name
                ) if status.error is None else status.with_plugin(plugin.name)
            if not rejector:
                rejector = plugin.name
            reasons.extend(status.reasons)
            if plugin_result is not None:
                result = plugin_result
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # Scoring -----------------------------------------------------------------------------------

    @_timed("PreScore", _status_itself)
    def run_pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        skip = state.skip_score_plugins
        for plugin in self.plugins.pre_score:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status = plugin.pre_score(state, pod, nodes)
            if state.record_plugin_metrics:
                self.observe_plugin("PreScore", plugin.name, started, status)
            if status.is_skip():
                skip.add(plugin.name)
                continue
            if not status.is_success():
                return Status.from_error(
                    RuntimeError(f'running PreScore plugin "{plugin.name}": {status.message()}'),
                    plugin.name,
                )
        return SUCCESS

    @_timed("Score", _status_in_result)
    def run_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status]:
        totals = [NodePluginScores(n.name) for n in nodes]
        skip = state.skip_score_plugins
        for plugin, weight in self.plugins.score:
            if plugin.name in skip:
                continue
            scores, status = self._plugin_scores(plugin, state, pod, nodes)
            if not status.is_success():
                return [], status
            name = plugin.name
            for total, node_score in zip(totals, scores, strict=True):
                weighted = node_score.score * weight
                total.scores[name] = weighted
                total.total += weighted
        return totals, SUCCESS

    def run_score_plugin(
        self, name: str, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """The Score plugin ``name`` on ``nodes`` by its per-node method, normalised and checked
        as in :meth:`run_score` (its weight not applied); for an attempt whose other scores are
        batch forms."""
        plugin = next(plugin for plugin, _ in self.plugins.score if plugin.name == name)
        scores, status = self._plugin_scores(plugin, state, pod, nodes)
        return [node_score.score for node_score in scores], status

    def _plugin_scores(
        self, plugin: ScorePlugin, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeScore], Status]:
        """One Score plugin's scores of ``nodes`` after NormalizeScore, or the error that ends
        the attempt (a failed score or normalisation, a score out of range)."""
        timed = state.record_plugin_metrics
        scores: list[NodeScore] = []
        for node_info in nodes:
            started = self.handle.now() if timed else 0.0
            value, status = plugin.score(state, pod, node_info)
            if timed:
                self.observe_plugin("Score", plugin.name, started, status)
            if not status.is_success():
                return [], Status.from_error(
                    RuntimeError(f'running Score plugin "{plugin.name}": {status.message()}'),
                    plugin.name,
                )
            scores.append(NodeScore(node_info.name, value))
        extensions = plugin.score_extensions()
        if extensions is not None:
            started = self.handle.now() if timed else 0.0
            status = extensions.normalize_score(state, pod, scores)
            if timed:
                self.observe_plugin("ScoreExtensionNormalize", plugin.name, started, status)
            if not status.is_success():
                return [], Status.from_error(
                    RuntimeError(f"running Normalize on Score plugins: {status.message()}"),
                    plugin.name,
                )
        name = plugin.name
        for node_score in scores:
            value = node_score.score
            if value > MAX_NODE_SCORE or value < MIN_NODE_SCORE:
                return [], Status.from_error(
                    RuntimeError(
                        f"plugin {name!r} returns an invalid score {value}, it should in the "
                        f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    ),
                    name,
                )
        return scores, SUCCESS

    # Reserve, permit, binding -----------------------------------------------------------------

    @_timed("Reserve", _status_itself)
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.plugins.reserve:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status = plugin.reserve(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("Reserve", plugin.name, started, status)
            if not status.is_success():
                return _failed("Reserve", plugin.name, status)
        return SUCCESS

    @_timed("Unreserve", _success)
    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.plugins.reserve):
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            plugin.unreserve(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("Unreserve", plugin.name, started, SUCCESS)

    @_timed("Permit", _status_itself)
    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        waits: dict[str, float] = {}
        for plugin in self.plugins.permit:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status, timeout = plugin.permit(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("Permit", plugin.name, started, status)
            if status.is_wait():
                waits[plugin.name] = min(timeout, MAX_TIMEOUT_SECONDS)
            elif not status.is_success():
                return _failed("Permit", plugin.name, status)
        if waits:
            self._waiting[pod.uid] = WaitingPod(pod, waits)
            return Status(Code.WAIT, "one or more plugins prevented scheduling of the pod")
        return SUCCESS

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._waiting.get(uid)

    def waiting_pods(self) -> list[WaitingPod]:
        """The pods waiting at Permit now (upstream's ``IterateOverWaitingPods``); a copy, so a
        plugin may allow or reject them while it goes through the list."""
        return list(self._waiting.values())

    def reject_waiting_pod(self, uid: str, message: str = "removed") -> bool:
        waiting = self._waiting.get(uid)
        if waiting is None:
            return False
        waiting.reject("", message)
        return True

    async def wait_on_permit(
        self, pod: Pod, sleep: Callable[[float], Coroutine[Any, Any, None]]
    ) -> Status:
        waiting = self._waiting.get(pod.uid)
        if waiting is None:
            return SUCCESS
        plugin, timeout = min(waiting.pending.items(), key=lambda item: item[1])
        timer: asyncio.Future[None] = asyncio.ensure_future(sleep(timeout))
        try:
            pending: set[asyncio.Future[Any]] = {waiting.result, timer}
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if waiting.result.done():
                status = waiting.result.result()
            else:
                status = Status(
                    Code.UNSCHEDULABLE,
                    f"rejected due to timeout after waiting {timeout:g}s at plugin {plugin}",
                    plugin=plugin,
                )
        finally:
            timer.cancel()
            self._waiting.pop(pod.uid, None)
        return status

    @_timed_async("PreBind")
    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.plugins.pre_bind:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status = await plugin.pre_bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("PreBind", plugin.name, started, status)
            if not status.is_success() and not status.is_skip():
                return _failed("PreBind", plugin.name, status)
        return SUCCESS

    @_timed_async("Bind")
    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        status = Status(Code.SKIP)
        for plugin in self.plugins.bind:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            status = await plugin.bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("Bind", plugin.name, started, status)
            if status.is_skip():
                continue
            return status if status.is_success() else _failed("Bind", plugin.name, status)
        return status

    @_timed("PostBind", _success)
    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.plugins.post_bind:
            started = self.handle.now() if state.record_plugin_metrics else 0.0
            plugin.post_bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self.observe_plugin("PostBind", plugin.name, started, SUCCESS)

    # Timing -----------------------------------------------------------------------------------

    def observe_extension_point(self, point: str, started: float, status: Status) -> None:
        """Record one run of the extension point ``point`` that began at ``started``."""
        self.handle.metrics.observe(
            FRAMEWORK_EXTENSION_POINT_DURATION,
            self.handle.now() - started,
            {"extension_point": point, "status": status.code.label, "profile": self.scheduler_name},
        )

    def observe_plugin(self, point: str, plugin: str, started: float, status: Status) -> None:
        """Record one call of ``plugin`` at ``point`` that began at ``started`` (sampled cycles)."""
        self.handle.metrics.observe(
            PLUGIN_EXECUTION_DURATION,
            self.handle.now() - started,
            {"plugin": plugin, "extension_point": point, "status": status.code.label},
        )
