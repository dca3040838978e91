"""VolumeBinding Reserve/Unreserve: what is assumed in the storage cache, what later pods of the
same burst see, and what Unreserve restores; cases follow upstream's TestAssumePodVolumes,
TestRevertAssumedPodVolumes and TestFindAssumeVolumes."""

from __future__ import annotations

from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.node_columns.columns import NodeColumns
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.volume_binding import REASON_BIND_CONFLICT
from kopf_scheduler.plugins.volume_binding.plugin import STATE_KEY, VolumeBinding
from tests.builders import make_pod
from tests.plugins.volume_binding_support import (
    NODE_KEY,
    PROVISIONED,
    PROVISIONER,
    WAIT,
    StorageObject,
    add,
    chosen,
    deliver,
    filter_all,
    handle_with,
    node,
    plugin_on,
    storage_with,
    updated,
)
from tests.storage_builders import make_claim, make_class, make_volume

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _setup(*objects: StorageObject) -> tuple[Handle, VolumeBinding]:
    handle = handle_with(storage_with(*objects), [node("node1"), node("node2")])
    return handle, plugin_on(handle)


def _schedule(
    plugin: VolumeBinding, handle: Handle, pod: Pod, node_name: str = "node1"
) -> tuple[CycleState, dict[str, Status], Status]:
    """PreFilter, Filter on every node, then Reserve on ``node_name``."""
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert status.is_success() or status.is_skip(), status
    statuses = filter_all(plugin, state, pod, handle)
    return state, statuses, plugin.reserve(state, pod, node_name)


def _volume(name: str, on: str = "node1", size: str = "5G") -> StorageObject:
    return make_volume(name).storage_class(WAIT).size(size).node_affinity(NODE_KEY, on)


def _claim_ref(storage: StorageCache, volume: str) -> str | None:
    seen = storage.volume(volume)
    assert seen is not None
    return seen.claim_ref.key if seen.claim_ref is not None else None


def test_all_bound_assumes_nothing() -> None:
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a"),
        make_volume("pv-a").storage_class(WAIT).claimed_by("default", "pvc-a", "uid"),
    )
    state, _, status = _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    assert status == SUCCESS
    assert state.read(STATE_KEY).all_bound
    assert not handle.storage.volumes.is_assumed("pv-a")


def test_pod_without_claims_is_all_bound() -> None:
    handle, plugin = _setup()
    state, _, status = _schedule(plugin, handle, make_pod("pod-a").pod())
    assert status == SUCCESS
    assert state.read(STATE_KEY).all_bound


def test_static_binding_is_assumed_not_written() -> None:
    handle, plugin = _setup(make_claim("pvc-a").storage_class(WAIT), _volume("pv-a"))
    state, _, status = _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    assert status == SUCCESS
    storage = handle.storage
    assert not state.read(STATE_KEY).all_bound
    assert _claim_ref(storage, "pv-a") == "default/pvc-a"
    assumed = storage.volume("pv-a")
    assert assumed is not None
    assert assumed.annotations == {"pv.kubernetes.io/bound-by-controller": "yes"}
    api = storage.volumes.get_api_object("pv-a")
    assert api is not None and api.claim_ref is None
    [binding] = state.read(STATE_KEY).pod_volumes_by_node["node1"].static_bindings
    assert binding.volume is assumed


def test_claim_to_provision_is_assumed_with_the_selected_node() -> None:
    handle, plugin = _setup(
        make_claim("pvc-static").storage_class(WAIT),
        _volume("pv-a"),
        make_claim("pvc-new").storage_class(PROVISIONED),
    )
    pod = make_pod("pod-a").claim("pvc-static").claim("pvc-new").pod()
    state, _, status = _schedule(plugin, handle, pod)
    assert status == SUCCESS
    storage = handle.storage
    assumed = storage.claims.get("default/pvc-new")
    assert assumed is not None and assumed.selected_node == "node1"
    api = storage.claims.get_api_object("default/pvc-new")
    assert api is not None and SELECTED_NODE not in api.annotations
    assert _claim_ref(storage, "pv-a") == "default/pvc-static"
    assert chosen(state, "node1") == (["pvc-static->pv-a"], ["pvc-new"])


def test_volume_already_bound_to_the_claim_is_not_assumed_again() -> None:
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT),
        make_volume("pv-a")
        .storage_class(WAIT)
        .size("5G")
        .node_affinity(NODE_KEY, "node1")
        .claimed_by("default", "pvc-a", "pvc-uid-default-pvc-a"),
    )
    state, _, status = _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    assert status == SUCCESS
    assert not handle.storage.volumes.is_assumed("pv-a")
    assert chosen(state, "node1") == (["pvc-a->pv-a"], [])


def test_unreserve_restores_every_assumption() -> None:
    handle, plugin = _setup(
        make_claim("pvc-static").storage_class(WAIT),
        _volume("pv-a"),
        make_claim("pvc-new").storage_class(PROVISIONED),
    )
    pod = make_pod("pod-a").claim("pvc-static").claim("pvc-new").pod()
    state, _, _ = _schedule(plugin, handle, pod)
    plugin.unreserve(state, pod, "node1")
    storage = handle.storage
    assert not storage.volumes.is_assumed("pv-a")
    assert not storage.claims.is_assumed("default/pvc-new")
    assert _claim_ref(storage, "pv-a") is None


def test_volume_gone_before_reserve_fails_and_drops_earlier_assumptions() -> None:
    handle, plugin = _setup(
        make_claim("pvc-small").storage_class(WAIT).size("1G"),
        make_claim("pvc-large").storage_class(WAIT).size("5G"),
        _volume("pv-small", size="1G"),
        _volume("pv-large", size="5G"),
    )
    pod = make_pod("pod-a").claim("pvc-small").claim("pvc-large").pod()
    state = CycleState()
    plugin.pre_filter(state, pod, [])
    filter_all(plugin, state, pod, handle)
    handle.storage.volumes.delete("pv-large")
    status = plugin.reserve(state, pod, "node1")
    assert (status.code, status.message()) == (
        Code.ERROR,
        'could not find v1.PersistentVolume "pv-large"',
    )
    assert not handle.storage.volumes.is_assumed("pv-small")


def test_claim_newer_than_the_decision_fails_to_assume() -> None:
    handle, plugin = _setup(
        make_claim("pvc-static").storage_class(WAIT).version("5"),
        _volume("pv-a"),
        make_claim("pvc-new").storage_class(PROVISIONED).version("7"),
    )
    pod = make_pod("pod-a").claim("pvc-static").claim("pvc-new").pod()
    state = CycleState()
    plugin.pre_filter(state, pod, [])
    filter_all(plugin, state, pod, handle)
    newer = make_claim("pvc-new").storage_class(PROVISIONED).version("9").claim()
    handle.storage.claims.upsert(newer)
    status = plugin.reserve(state, pod, "node1")
    assert (status.code, status.message()) == (
        Code.ERROR,
        'v1.PersistentVolumeClaim "default/pvc-new" is out of sync (stored: 9, assume: 7)',
    )
    assert not handle.storage.volumes.is_assumed("pv-a")


def test_next_pod_of_the_burst_never_gets_the_same_volume() -> None:
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT),
        make_claim("pvc-b").storage_class(WAIT),
        _volume("pv-1"),
        _volume("pv-2", size="6G"),
    )
    state_a, _, _ = _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    state_b, statuses_b, _ = _schedule(plugin, handle, make_pod("pod-b").claim("pvc-b").pod())
    assert chosen(state_a, "node1") == (["pvc-a->pv-1"], [])
    assert statuses_b["node1"] == SUCCESS
    assert chosen(state_b, "node1") == (["pvc-b->pv-2"], [])
    assert _claim_ref(handle.storage, "pv-2") == "default/pvc-b"


def test_next_pod_of_the_burst_finds_no_volume_left() -> None:
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT),
        make_claim("pvc-b").storage_class(WAIT),
        _volume("pv-1"),
    )
    _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    state = CycleState()
    pod_b = make_pod("pod-b").claim("pvc-b").pod()
    plugin.pre_filter(state, pod_b, [])
    assert filter_all(plugin, state, pod_b, handle)["node1"] == Status(
        UNRESOLVABLE, REASON_BIND_CONFLICT
    )


def test_volume_is_free_again_after_unreserve() -> None:
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT),
        make_claim("pvc-b").storage_class(WAIT),
        _volume("pv-1"),
    )
    pod_a = make_pod("pod-a").claim("pvc-a").pod()
    state_a, _, _ = _schedule(plugin, handle, pod_a)
    plugin.unreserve(state_a, pod_a, "node1")
    state_b, statuses, _ = _schedule(plugin, handle, make_pod("pod-b").claim("pvc-b").pod())
    assert statuses["node1"] == SUCCESS
    assert chosen(state_b, "node1") == (["pvc-b->pv-1"], [])


def test_pod_sharing_a_claim_follows_its_selected_node() -> None:
    anywhere = make_class("anywhere").wait_for_first_consumer().provisioner(PROVISIONER)
    handle, plugin = _setup(anywhere, make_claim("shared").storage_class("anywhere"))
    _, first, _ = _schedule(plugin, handle, make_pod("pod-a").claim("shared").pod(), "node2")
    assert first == {"node1": SUCCESS, "node2": SUCCESS}
    _, statuses, _ = _schedule(plugin, handle, make_pod("pod-b").claim("shared").pod(), "node2")
    assert statuses == {"node1": Status(UNRESOLVABLE, REASON_BIND_CONFLICT), "node2": SUCCESS}


def test_same_pod_finds_its_assumed_volume_again() -> None:
    """After Reserve, filtering the pod again yields the same PV (now pre-bound to its claim),
    even when a smaller one has appeared since."""
    handle, plugin = _setup(
        make_claim("pvc-a").storage_class(WAIT),
        _volume("pv-node2", on="node2"),
        _volume("pv-1", size="5G"),
        _volume("pv-2", size="5G"),
    )
    pod = make_pod("pod-a").claim("pvc-a").pod()
    state, _, _ = _schedule(plugin, handle, pod)
    [first] = chosen(state, "node1")[0]
    add(handle.storage, _volume("pv-smaller", size="2G"))
    for _ in range(3):
        again = CycleState()
        plugin.pre_filter(again, pod, [])
        assert filter_all(plugin, again, pod, handle)["node1"] == SUCCESS
        assert chosen(again, "node1")[0] == [first]


def test_newer_api_object_replaces_the_assumption() -> None:
    handle, plugin = _setup(make_claim("pvc-a").storage_class(WAIT), _volume("pv-1"))
    _schedule(plugin, handle, make_pod("pod-a").claim("pvc-a").pod())
    api = handle.storage.volumes.get_api_object("pv-1")
    assert api is not None
    handle.storage.volumes.upsert(
        updated(api, lambda raw: raw["metadata"].update(labels={"x": "y"}))
    )
    assert _claim_ref(handle.storage, "pv-1") is None


def test_reserve_after_the_batch_form_finds_the_decisions_filter_would_have_left() -> None:
    """The batch form passes every node with the same decisions (none, all claims being
    bound); Reserve reads them for the chosen node as after the per-node Filter, so a claim
    unbound in between leaves the pod not all bound, for PreBind to wait on."""
    claim = make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a").claim()
    handle, plugin = _setup(
        claim, make_volume("pv-a").storage_class(WAIT).claimed_by("default", "pvc-a", "uid")
    )
    pod = make_pod("pod-a").claim("pvc-a").pod()
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert status == SUCCESS
    columns = NodeColumns()
    columns.mirror.sync(handle.snapshot)
    assert plugin.filter_nodes(state, pod, columns, columns.free_columns()) is None
    deliver(handle.storage, updated(claim, lambda raw: raw["spec"].pop("volumeName")))
    assert plugin.reserve(state, pod, "node1") == SUCCESS
    assert not state.read(STATE_KEY).all_bound
