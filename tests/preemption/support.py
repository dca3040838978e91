"""Fakes and a small environment for the preemption tests.

The environment wires a real Framework with the real NodeResourcesFit plugin (PreFilter and
Filter) and DefaultPreemption, a Handle whose API ports record what they are asked to do (and
can be told to fail), a pod store standing in for the watch cache, and a nominator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import NodeToStatus, NominatingInfo, PostFilterResult
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import node_resources_fit
from kopf_scheduler.plugins.default_preemption import Args, DefaultPreemption
from kopf_scheduler.ports import Event, PodStatusPatch

# Upstream's test sizes (default_preemption_test.go).
NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}


def seconds(value: int) -> str:
    """An RFC 3339 time ``value`` seconds after 2026-01-01T00:00:00Z."""
    minutes, secs = divmod(value, 60)
    hours, minutes = divmod(minutes, 60)
    return f"2026-01-01T{hours:02d}:{minutes:02d}:{secs:02d}Z"


class ScriptedRandom(random.Random):
    """A Random whose ``randrange`` returns scripted values (upstream pins its offset RNG)."""

    def __init__(self, *offsets: int) -> None:
        super().__init__(0)
        self.offsets = list(offsets)
        self.calls: list[int] = []

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        self.calls.append(start)
        if self.offsets:
            return self.offsets.pop(0)
        return 0


class FakeMetrics:
    def __init__(self) -> None:
        self.counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.observations: list[tuple[str, float, dict[str, str]]] = []

    @staticmethod
    def _key(
        name: str, labels: Mapping[str, str] | None
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        return name, tuple(sorted((labels or {}).items()))

    def inc(self, name: str, labels: Mapping[str, str] | None = None, value: float = 1) -> None:
        key = self._key(name, labels)
        self.counters[key] = self.counters.get(key, 0) + value

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        self.observations.append((name, value, dict(labels or {})))

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        return None

    def count(self, name: str, **labels: str) -> float:
        return self.counters.get(self._key(name, labels), 0)

    def observed(self, name: str) -> list[float]:
        return [value for metric, value, _ in self.observations if metric == name]


class FakeStatusWriter:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, Exception] = {}
        self.on_patch: list[Callable[[Any], None]] = []
        """Called with the pod when its patch starts."""

    async def patch_status(self, pod: Any, patch: PodStatusPatch) -> None:
        for hook in self.on_patch:
            hook(pod)
        error = self.fail.get(pod.key)
        if error is not None:
            raise error
        self.patches.append((pod.key, patch.body()))


class FakeDeleter:
    def __init__(self, store: dict[str, Pod]) -> None:
        self.store = store
        self.deleted: list[str] = []
        self.fail: dict[str, Exception] = {}
        self.on_delete: list[Callable[[Pod], None]] = []
        """Called with the victim when its deletion starts (before the store changes)."""

    async def delete_pod(self, pod: Pod) -> None:
        for hook in self.on_delete:
            hook(pod)
        error = self.fail.get(pod.key)
        if error is not None:
            raise error
        self.deleted.append(pod.key)
        self.store.pop(pod.key, None)


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)


class FakeNominator:
    def __init__(self) -> None:
        self.by_node: dict[str, list[Pod]] = {}

    def nominate(self, pod: Pod, node: str) -> None:
        self.by_node.setdefault(node, []).append(pod)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.by_node.get(node_name, []))

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        return None

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        return None


class CountingFilter:
    """A filter that counts its calls and fails with a fixed code (upstream's FakeFilterPlugin)."""

    name: ClassVar[str] = "FakeFilter"

    def __init__(self, code: Code = Code.SUCCESS) -> None:
        self.code = code
        self.calls = 0

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        self.calls += 1
        if self.code == Code.SUCCESS:
            return SUCCESS
        return Status(self.code, "fake filter rejected the node")


class ErrorOnLabelPlugin:
    """PreFilter extensions that fail on nodes labelled ``error=true`` (upstream's TestPlugin)."""

    name: ClassVar[str] = "test-plugin"

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[None, Status]:
        return None, SUCCESS

    def pre_filter_extensions(self) -> ErrorOnLabelPlugin:
        return self

    def _check(self, pod: Pod, node_info: NodeInfo, verb: str) -> Status:
        node = node_info.node
        if node is not None and node.labels.get("error") == "true":
            return Status.from_error(RuntimeError(f"failed to {verb} pod: {pod.name}"))
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo) -> Status:
        return self._check(pod, node_info, "add")

    def remove_pod(self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo) -> Status:
        return self._check(pod, node_info, "remove")


@dataclass
class Env:
    handle: Handle
    framework: Framework
    plugin: DefaultPreemption
    store: dict[str, Pod]
    writer: FakeStatusWriter
    deleter: FakeDeleter
    recorder: FakeRecorder
    metrics: FakeMetrics
    nominator: FakeNominator
    spawned: list[Coroutine[Any, Any, None]] = field(default_factory=list)
    activated: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> list[NodeInfo]:
        return self.handle.snapshot.node_info_list

    def add_pod(self, pod: Pod) -> None:
        self.store[pod.key] = pod

    def new_state(self, pod: Pod) -> CycleState:
        state = CycleState()
        _, status, _ = self.framework.run_pre_filter(state, pod, self.nodes)
        assert status.is_success(), status
        return state

    def filter_statuses(self, state: CycleState, pod: Pod) -> NodeToStatus:
        """The cycle's statuses: every node that fails the filters, with its status."""
        statuses = NodeToStatus()
        for node_info in self.nodes:
            status = self.framework.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if not status.is_success():
                statuses.set(node_info.name, status)
        return statuses

    def post_filter(
        self, pod: Pod, statuses: NodeToStatus | None = None
    ) -> tuple[PostFilterResult | None, Status, CycleState]:
        self.store.setdefault(pod.key, pod)
        state = self.new_state(pod)
        if statuses is None:
            statuses = self.filter_statuses(state, pod)
        result, status = self.plugin.post_filter(state, pod, statuses)
        return result, status, state

    async def run_spawned(self) -> None:
        while self.spawned:
            await self.spawned.pop(0)

    def patches_of(self, key: str) -> list[dict[str, Any]]:
        return [body for target, body in self.writer.patches if target == key]


_LIVE_ENVS: list[Env] = []


def close_envs() -> None:
    """Close the background coroutines a test left unawaited."""
    for env in _LIVE_ENVS:
        for coroutine in env.spawned:
            coroutine.close()
    _LIVE_ENVS.clear()


def make_env(
    node_infos: Sequence[NodeInfo],
    *,
    pods: Iterable[Pod] = (),
    pdbs: Sequence[PodDisruptionBudget] = (),
    args: Mapping[str, Any] | None = None,
    async_preemption: bool = True,
    rng: random.Random | None = None,
    now: float = 1_800_000_000.0,
    filters: Sequence[Any] = (),
    pre_filters: Sequence[Any] = (),
    with_fit: bool = True,
    scheduler_name: str = "default-scheduler",
) -> Env:
    store: dict[str, Pod] = {}
    for node_info in node_infos:
        for pod in node_info.pods:
            store[pod.key] = pod
    for pod in pods:
        store[pod.key] = pod
    snapshot = Snapshot.from_node_infos(list(node_infos))
    metrics = FakeMetrics()
    nominator = FakeNominator()
    writer = FakeStatusWriter()
    deleter = FakeDeleter(store)
    recorder = FakeRecorder()
    spawned: list[Coroutine[Any, Any, None]] = []
    activated: list[str] = []
    handle = Handle(
        snapshot=snapshot,
        nominator=nominator,
        now=lambda: now,
        rng=rng if rng is not None else random.Random(0),
        metrics=metrics,
        scheduler_name=scheduler_name,
        get_pod=store.get,
        pdbs=lambda: list(pdbs),
        status_writer=writer,
        pod_deleter=deleter,
        event_recorder=recorder,
        spawn=spawned.append,
        activate=lambda pods: activated.extend(p.key for p in pods),
    )
    plugin = DefaultPreemption(handle, Args.parse(args), async_preemption=async_preemption)
    pre_filter_plugins: list[Any] = list(pre_filters)
    filter_plugins: list[Any] = list(filters)
    if with_fit:
        # Extra filters run before NodeResourcesFit, so a counting filter sees every call.
        fit = node_resources_fit.new(None, handle)
        pre_filter_plugins.insert(0, fit)
        filter_plugins.append(fit)
    profile = ProfilePlugins(
        pre_enqueue=[plugin],
        pre_filter=pre_filter_plugins,
        filter=filter_plugins,
        post_filter=[plugin],
        all=[plugin, *pre_filter_plugins, *filter_plugins],
    )
    framework = Framework(scheduler_name, profile, handle)
    env = Env(
        handle,
        framework,
        plugin,
        store,
        writer,
        deleter,
        recorder,
        metrics,
        nominator,
        spawned,
        activated,
    )
    _LIVE_ENVS.append(env)
    return env


def unschedulable_everywhere(node_infos: Sequence[NodeInfo]) -> NodeToStatus:
    """Every node Unschedulable (upstream's TestPreempt marks all nodes so)."""
    return NodeToStatus({n.name: Status(Code.UNSCHEDULABLE) for n in node_infos})
