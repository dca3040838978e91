"""VolumeBinding PreBind: exactly what is written, the wait for the PV controller on the
scheduler's clock, the timeout, and upstream's fail-fast conditions with their texts; cases
follow upstream's TestBindAPIUpdate, TestCheckBindings and TestBindPodVolumes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from kopf_scheduler.plugins.volume_binding.plugin import VolumeBinding
from kopf_scheduler.ports import ConflictError
from tests.builders import PodBuilder, make_pod
from tests.plugins.volume_binding_support import (
    NODE_KEY,
    PROVISIONED,
    WAIT,
    FakeClock,
    FakeStorageWriter,
    StorageObject,
    deliver,
    filter_all,
    handle_with,
    node,
    plugin_on,
    storage_with,
    updated,
)
from tests.storage_builders import make_claim, make_volume

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DEADLINE = "binding volumes: context deadline exceeded"


@dataclass
class Env:
    handle: Handle
    plugin: VolumeBinding
    state: CycleState
    pod: Pod
    clock: FakeClock
    writer: FakeStorageWriter
    pods: dict[str, Pod]

    @property
    def storage(self) -> StorageCache:
        return self.handle.storage

    def api_volume(self, name: str) -> PersistentVolume:
        volume = self.storage.volumes.get_api_object(name)
        assert volume is not None
        return volume

    def api_claim(self, name: str) -> PersistentVolumeClaim:
        claim = self.storage.claims.get_api_object(f"default/{name}")
        assert claim is not None
        return claim

    def bind_claim(self, claim: str, volume: str) -> Callable[[], None]:
        """The PV controller binding ``claim`` to ``volume`` (an action for the clock)."""

        def bind(raw: dict[str, Any]) -> None:
            raw["spec"]["volumeName"] = volume
            raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
            raw["status"]["phase"] = "Bound"

        return lambda: deliver(self.storage, updated(self.api_claim(claim), bind))

    async def pre_bind(self, node_name: str = "node1") -> Status:
        return await self.plugin.pre_bind(self.state, self.pod, node_name)


def _reserved(
    pod: PodBuilder,
    *objects: StorageObject,
    args: dict[str, Any] | None = None,
    writer: Callable[[StorageCache], FakeStorageWriter] = FakeStorageWriter,
) -> Env:
    """The pod filtered on node1 and node2 and reserved on node1."""
    storage = storage_with(*objects)
    clock = FakeClock()
    fake_writer = writer(storage)
    view = pod.pod()
    handle = handle_with(storage, [node("node1"), node("node2")], clock=clock, writer=fake_writer)
    pods = {view.key: view}
    handle.get_pod = pods.get
    plugin = plugin_on(handle, args)
    state = CycleState()
    _, status = plugin.pre_filter(state, view, handle.snapshot.node_info_list)
    assert status.is_success() or status.is_skip(), status
    filter_all(plugin, state, view, handle)
    assert plugin.reserve(state, view, "node1") == SUCCESS
    return Env(handle, plugin, state, view, clock, fake_writer, pods)


def _static(name: str = "pv-a", on: str = "node1") -> StorageObject:
    return make_volume(name).storage_class(WAIT).node_affinity(NODE_KEY, on)


def _static_env(**options: Any) -> Env:
    return _reserved(
        make_pod("pod-a").claim("pvc-a"),
        make_claim("pvc-a").storage_class(WAIT),
        _static(),
        **options,
    )


def _provisioning_env(**options: Any) -> Env:
    return _reserved(
        make_pod("pod-a").claim("pvc-new"),
        make_claim("pvc-new").storage_class(PROVISIONED),
        **options,
    )


def _provision(env: Env, volume: str, on: str) -> Callable[[], None]:
    """The provisioner creating a PV for ``pvc-new`` on ``on``."""
    created = (
        make_volume(volume)
        .storage_class(PROVISIONED)
        .node_affinity(NODE_KEY, on)
        .claimed_by("default", "pvc-new", "pvc-uid-default-pvc-new")
        .phase("Bound")
        .volume()
    )
    return lambda: deliver(env.storage, created)


async def test_all_bound_writes_nothing() -> None:
    env = _reserved(
        make_pod("pod-a").claim("pvc-a"),
        make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a"),
        make_volume("pv-a").storage_class(WAIT).claimed_by("default", "pvc-a", "uid"),
    )
    assert await env.pre_bind() == SUCCESS
    assert (env.writer.volumes, env.writer.claims, env.clock.sleeps) == ([], [], [])


async def test_pod_without_claims_writes_nothing() -> None:
    env = _reserved(make_pod("pod-a"))
    assert await env.pre_bind() == SUCCESS
    assert (env.writer.volumes, env.writer.claims, env.clock.sleeps) == ([], [], [])


async def test_static_binding_writes_the_claim_ref_and_waits_for_the_pv_controller() -> None:
    env = _static_env()
    claim_version = env.api_claim("pvc-a").resource_version
    volume_version = env.api_volume("pv-a").resource_version
    env.clock.at(3, env.bind_claim("pvc-a", "pv-a"))
    assert await env.pre_bind() == SUCCESS
    assert env.clock.sleeps == [1.0, 1.0, 1.0]
    assert env.writer.claims == []
    [written] = env.writer.volumes
    assert written["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "pvc-a",
        "uid": "pvc-uid-default-pvc-a",
        "apiVersion": "v1",
        "resourceVersion": claim_version,
    }
    assert written["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert int(written["metadata"]["resourceVersion"]) > int(volume_version)


async def test_provisioning_writes_the_selected_node_and_waits_for_the_new_volume() -> None:
    env = _provisioning_env()
    env.clock.at(2, _provision(env, "pv-new", "node1"))
    env.clock.at(2, env.bind_claim("pvc-new", "pv-new"))
    assert await env.pre_bind() == SUCCESS
    assert env.clock.elapsed == 2
    assert env.writer.volumes == []
    [written] = env.writer.claims
    assert written["metadata"]["annotations"] == {SELECTED_NODE: "node1"}


async def test_provisioned_claim_bound_to_a_volume_not_yet_seen_keeps_waiting() -> None:
    env = _provisioning_env()
    env.clock.at(2, env.bind_claim("pvc-new", "pv-new"))
    env.clock.at(4, _provision(env, "pv-new", "node1"))
    assert await env.pre_bind() == SUCCESS
    assert env.clock.elapsed == 4


async def test_objects_older_than_the_write_are_not_judged() -> None:
    """Until the watch delivers the written PV, the old one (without claimRef) is ignored."""
    env = _static_env(writer=lambda storage: FakeStorageWriter(storage, deliver=False))
    env.clock.at(3, env.writer.release)
    env.clock.at(3, env.bind_claim("pvc-a", "pv-a"))
    assert await env.pre_bind() == SUCCESS
    assert env.clock.elapsed == 3


async def test_bind_timeout_uses_the_scheduler_clock() -> None:
    env = _static_env(args={"bindTimeoutSeconds": 5})
    status = await env.pre_bind()
    assert (status.code, status.message()) == (Code.ERROR, DEADLINE)
    assert env.clock.sleeps == [1.0] * 5


async def test_zero_timeout_fails_after_the_writes_without_waiting() -> None:
    env = _static_env(args={"bindTimeoutSeconds": 0})
    status = await env.pre_bind()
    assert status.message() == DEADLINE
    assert env.clock.sleeps == []
    assert len(env.writer.volumes) == 1


async def test_default_timeout_is_ten_minutes() -> None:
    env = _static_env()
    status = await env.pre_bind()
    assert status.message() == DEADLINE
    assert env.clock.elapsed == 600


def _pv(
    env: Env, name: str = "pv-a", change: Callable[[dict[str, Any]], None] | None = None
) -> Callable[[], None]:
    return lambda: deliver(env.storage, updated(env.api_volume(name), change or (lambda _: None)))


def _claim(env: Env, name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    return lambda: deliver(env.storage, updated(env.api_claim(name), change))


def _drop_claim_ref_uid(raw: dict[str, Any]) -> None:
    raw["spec"]["claimRef"].pop("uid")


def _drop_claim_ref(raw: dict[str, Any]) -> None:
    raw["spec"].pop("claimRef")


def _move_to_node2(raw: dict[str, Any]) -> None:
    expression = raw["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    expression["matchExpressions"][0]["values"] = ["node2"]


def _drop_selected_node(raw: dict[str, Any]) -> None:
    raw["metadata"]["annotations"].pop(SELECTED_NODE)


def _drop_selected_node_keep_others(raw: dict[str, Any]) -> None:
    raw["metadata"]["annotations"] = {"volume.kubernetes.io/storage-provisioner": "x"}


def _select_node2(raw: dict[str, Any]) -> None:
    raw["metadata"]["annotations"][SELECTED_NODE] = "node2"


Scenario = Callable[[Env], Callable[[], None]]


@pytest.mark.parametrize(
    ("make_env", "event", "message"),
    [
        pytest.param(
            _static_env,
            lambda env: env.pods.clear,
            'binding volumes: pod does not exist any more: pod "pod-a" not found',
            id="pod-deleted",
        ),
        pytest.param(
            _static_env,
            lambda env: lambda: setattr(env.handle, "snapshot", Snapshot()),
            'binding volumes: failed to get node "node1": node "node1" not found',
            id="node-deleted",
        ),
        pytest.param(
            _static_env,
            lambda env: _pv(env, change=_drop_claim_ref_uid),
            'binding volumes: ClaimRef got reset for pv "pv-a"',
            id="claim-ref-uid-reset",
        ),
        pytest.param(
            _static_env,
            lambda env: _pv(env, change=_drop_claim_ref),
            'binding volumes: ClaimRef got reset for pv "pv-a"',
            id="claim-ref-removed",
        ),
        pytest.param(
            _static_env,
            lambda env: _pv(env, change=_move_to_node2),
            'binding volumes: pv "pv-a" node affinity doesn\'t match node "node1": '
            "no matching NodeSelectorTerms",
            id="volume-affinity-changed",
        ),
        pytest.param(
            _static_env,
            lambda env: lambda: env.storage.volumes.delete("pv-a"),
            'binding volumes: failed to check binding: could not find v1.PersistentVolume "pv-a"',
            id="volume-deleted",
        ),
        pytest.param(
            _static_env,
            lambda env: lambda: env.storage.claims.delete("default/pvc-a"),
            "binding volumes: failed to check binding: could not find "
            'v1.PersistentVolumeClaim "default/pvc-a"',
            id="claim-deleted",
        ),
        pytest.param(
            _provisioning_env,
            lambda env: _claim(env, "pvc-new", _drop_selected_node),
            'binding volumes: selectedNode annotation reset for PVC "pvc-new"',
            id="selected-node-removed",
        ),
        pytest.param(
            _provisioning_env,
            lambda env: _claim(env, "pvc-new", _drop_selected_node_keep_others),
            'binding volumes: provisioning failed for PVC "pvc-new"',
            id="selected-node-removed-among-other-annotations",
        ),
        pytest.param(
            _provisioning_env,
            lambda env: _claim(env, "pvc-new", _select_node2),
            'binding volumes: provisioning failed for PVC "pvc-new"',
            id="selected-node-changed",
        ),
        pytest.param(
            _provisioning_env,
            lambda env: (
                lambda: (
                    _provision(env, "pv-elsewhere", "node2")(),
                    env.bind_claim("pvc-new", "pv-elsewhere")(),
                )
            ),
            'binding volumes: pv "pv-elsewhere" node affinity doesn\'t match node "node1": '
            "no matching NodeSelectorTerms",
            id="provisioned-on-another-node",
        ),
        pytest.param(
            _provisioning_env,
            lambda env: lambda: env.storage.claims.delete("default/pvc-new"),
            "binding volumes: failed to check provisioning pvc: could not find "
            'v1.PersistentVolumeClaim "default/pvc-new"',
            id="provisioned-claim-deleted",
        ),
    ],
)
async def test_fails_fast(make_env: Callable[[], Env], event: Scenario, message: str) -> None:
    env = make_env()
    env.clock.at(2, event(env))
    status = await env.pre_bind()
    assert (status.code, status.message()) == (Code.ERROR, message)
    assert env.clock.elapsed == 2


async def test_failed_write_reports_the_api_message_and_drops_unwritten_assumptions() -> None:
    conflict = ConflictError(
        'Operation cannot be fulfilled on persistentvolumes "pv-b": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    env = _reserved(
        make_pod("pod-a").claim("pvc-a").claim("pvc-b").claim("pvc-new"),
        make_claim("pvc-a").storage_class(WAIT).size("1G"),
        make_claim("pvc-b").storage_class(WAIT).size("2G"),
        make_claim("pvc-new").storage_class(PROVISIONED),
        _static("pv-a"),
        make_volume("pv-b").storage_class(WAIT).size("2G").node_affinity(NODE_KEY, "node1"),
        writer=lambda storage: FakeStorageWriter(storage, failures={"pv-b": conflict}),
    )
    assert env.storage.volumes.is_assumed("pv-b")
    assert env.storage.claims.is_assumed("default/pvc-new")
    status = await env.pre_bind()
    assert (status.code, status.message()) == (Code.ERROR, conflict.message)
    assert [raw["metadata"]["name"] for raw in env.writer.volumes] == ["pv-a"]
    assert env.writer.claims == []
    assert not env.storage.volumes.is_assumed("pv-b")
    assert not env.storage.claims.is_assumed("default/pvc-new")
    assert env.clock.sleeps == []


async def test_unreserve_after_a_failure_restores_the_cache() -> None:
    env = _provisioning_env(args={"bindTimeoutSeconds": 1})
    assert (await env.pre_bind()).message() == DEADLINE
    env.plugin.unreserve(env.state, env.pod, "node1")
    assert not env.storage.claims.is_assumed("default/pvc-new")


async def test_no_decisions_for_the_node() -> None:
    env = _static_env()
    status = await env.pre_bind("node2")
    assert (status.code, status.message()) == (Code.ERROR, 'no pod volume found for node "node2"')


async def test_without_a_storage_writer() -> None:
    env = _static_env()
    env.handle.storage_writer = None
    status = await env.pre_bind()
    assert (status.code, status.message()) == (
        Code.ERROR,
        "no storage writer is attached to the scheduler",
    )


async def test_framework_reports_the_failure_as_upstream_does() -> None:
    env = _static_env(args={"bindTimeoutSeconds": 2})
    framework = Framework("default-scheduler", ProfilePlugins(pre_bind=[env.plugin]), env.handle)
    status = await framework.run_pre_bind(env.state, env.pod, "node1")
    assert (status.code, status.message()) == (
        Code.ERROR,
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded',
    )
