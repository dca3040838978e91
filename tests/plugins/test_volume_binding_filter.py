"""VolumeBinding Filter: the reasons per node (exact texts, several at once, upstream's order)
and the decisions kept for Reserve; cases follow upstream's volume_binding_test.go and
binder_test.go (FindPodVolumes with and without provisioning, TestCapacity)."""

from __future__ import annotations

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.interfaces import ScorePlugin
from kopf_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from kopf_scheduler.model.storage import CSIStorageCapacity
from kopf_scheduler.plugins.volume_binding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
)
from kopf_scheduler.plugins.volume_binding.plugin import STATE_KEY
from tests.builders import PodBuilder, make_pod
from tests.plugins.volume_binding_support import (
    IMMEDIATE,
    NODE_KEY,
    PROVISIONED,
    PROVISIONER,
    TOPOLOGY_MISMATCH,
    WAIT,
    StorageObject,
    chosen,
    filter_all,
    handle_with,
    node,
    plugin_on,
    storage_with,
)
from tests.storage_builders import (
    ClaimBuilder,
    VolumeBuilder,
    make_capacity,
    make_claim,
    make_csi_driver,
    make_volume,
)

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _unbound(name: str, size: str = "1G", storage_class: str = WAIT) -> ClaimBuilder:
    return make_claim(name).storage_class(storage_class).size(size)


def _bound(name: str, volume: str, storage_class: str = WAIT) -> ClaimBuilder:
    return make_claim(name).storage_class(storage_class).bound_to(volume)


def _static(name: str, on: str, size: str = "1G", storage_class: str = WAIT) -> VolumeBuilder:
    """An Available volume with affinity ``nodeKey In [on]``."""
    return make_volume(name).storage_class(storage_class).size(size).node_affinity(NODE_KEY, on)


def _claimed(name: str, on: str, claim: str, storage_class: str = WAIT) -> VolumeBuilder:
    volume = make_volume(name).storage_class(storage_class).node_affinity(NODE_KEY, on)
    return volume.claimed_by("default", claim, f"pvc-uid-default-{claim}").phase("Bound")


def _pod(*claims: str) -> PodBuilder:
    pod = make_pod("pod-a")
    for claim in claims:
        pod.claim(claim)
    return pod


def _filter(pod: PodBuilder, *objects: StorageObject) -> tuple[CycleState, Status]:
    """PreFilter (must pass) then Filter on node1 (labelled ``nodeKey=node1``)."""
    handle = handle_with(storage_with(*objects), [node("node1")])
    plugin = plugin_on(handle)
    state = CycleState()
    view = pod.pod()
    _, status = plugin.pre_filter(state, view, handle.snapshot.node_info_list)
    assert status.is_success(), status
    return state, filter_all(plugin, state, view, handle)["node1"]


@pytest.mark.parametrize(
    ("pod", "objects", "reasons", "bindings"),
    [
        pytest.param(
            _pod("bound"),
            [_bound("bound", "pv-bound"), _claimed("pv-bound", "node1", "bound")],
            [],
            [],
            id="bound-claim",
        ),
        pytest.param(
            _pod("bound"),
            [_bound("bound", "pv-bound")],
            [REASON_PV_NOT_EXIST],
            None,
            id="bound-claim-volume-missing",
        ),
        pytest.param(
            _pod("unbound"),
            [
                _unbound("unbound"),
                _static("pv-node2", "node2"),
                _static("pv-5g", "node1", "5G"),
                _static("pv-10g", "node1", "10G"),
            ],
            [],
            ["unbound->pv-5g"],
            id="smallest-fitting-volume-on-the-node",
        ),
        pytest.param(
            _pod("unbound"),
            [_unbound("unbound"), _static("pv-node2", "node2")],
            [REASON_BIND_CONFLICT],
            None,
            id="volume-on-another-node",
        ),
        pytest.param(
            _pod("small", "large"),
            [
                _unbound("small", "1G"),
                _unbound("large", "5G"),
                _static("pv-5g", "node1", "5G"),
                _static("pv-10g", "node1", "10G"),
            ],
            [],
            ["small->pv-5g", "large->pv-10g"],
            id="two-claims-two-volumes",
        ),
        pytest.param(
            _pod("large", "small"),
            [
                _unbound("small", "1G"),
                _unbound("large", "5G"),
                _static("pv-5g", "node1", "5G"),
                _static("pv-10g", "node1", "10G"),
            ],
            [],
            ["small->pv-5g", "large->pv-10g"],
            id="smaller-request-chooses-first",
        ),
        pytest.param(
            _pod("small", "large"),
            [_unbound("small", "1G"), _unbound("large", "5G"), _static("pv-5g", "node1", "5G")],
            [REASON_BIND_CONFLICT],
            None,
            id="one-volume-for-two-claims",
        ),
        pytest.param(
            _pod("unbound", "bound"),
            [
                _unbound("unbound"),
                _bound("bound", "pv-bound"),
                _claimed("pv-bound", "node1", "bound"),
                _static("pv-5g", "node1", "5G"),
            ],
            [],
            ["unbound->pv-5g"],
            id="one-bound-one-matched",
        ),
        pytest.param(
            _pod("unbound", "bound"),
            [
                _unbound("unbound"),
                _bound("bound", "pv-bound"),
                _claimed("pv-bound", "node1", "bound"),
                _static("pv-node2", "node2"),
            ],
            [REASON_BIND_CONFLICT],
            None,
            id="one-bound-one-without-volume",
        ),
        pytest.param(
            _pod("bound"),
            [
                _bound("bound", "pv-bound", IMMEDIATE),
                _claimed("pv-bound", "node1", "bound", IMMEDIATE),
            ],
            [],
            [],
            id="immediate-bound-claim",
        ),
        pytest.param(
            _pod("bound"),
            [
                _bound("bound", "pv-bound", IMMEDIATE),
                _claimed("pv-bound", "node2", "bound", IMMEDIATE),
            ],
            [REASON_NODE_CONFLICT],
            None,
            id="immediate-bound-claim-other-node",
        ),
        pytest.param(
            _pod("bound", "unbound"),
            [
                _bound("bound", "pv-bound"),
                _claimed("pv-bound", "node2", "bound"),
                _unbound("unbound"),
            ],
            [REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
            None,
            id="bound-and-unbound-both-unsatisfied",
        ),
        pytest.param(
            _pod("bound", "unbound"),
            [_bound("bound", "pv-missing"), _unbound("unbound")],
            [REASON_BIND_CONFLICT, REASON_PV_NOT_EXIST],
            None,
            id="volume-missing-and-unbound-unsatisfied",
        ),
        pytest.param(
            _pod("unbound"),
            [_unbound("unbound", storage_class=PROVISIONED)],
            [],
            ["+unbound"],
            id="provisioned",
        ),
        pytest.param(
            _pod("unbound", "provisioned"),
            [
                _unbound("unbound"),
                _static("pv-5g", "node1", "5G"),
                _unbound("provisioned", storage_class=PROVISIONED),
            ],
            [],
            ["unbound->pv-5g", "+provisioned"],
            id="one-matched-one-provisioned",
        ),
        pytest.param(
            _pod("bound", "provisioned"),
            [
                _bound("bound", "pv-bound"),
                _claimed("pv-bound", "node1", "bound"),
                _unbound("provisioned", storage_class=PROVISIONED),
            ],
            [],
            ["+provisioned"],
            id="one-bound-one-provisioned",
        ),
        pytest.param(
            _pod("provisioned"),
            [
                _unbound("provisioned", storage_class=PROVISIONED).annotate(
                    "volume.kubernetes.io/selected-node", "node1"
                )
            ],
            [],
            ["+provisioned"],
            id="selected-node-is-this-node",
        ),
        pytest.param(
            _pod("bound", "provisioned"),
            [
                _bound("bound", "pv-bound"),
                _claimed("pv-bound", "node2", "bound"),
                _unbound("provisioned", storage_class=PROVISIONED).annotate(
                    "volume.kubernetes.io/selected-node", "node2"
                ),
            ],
            [REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
            None,
            id="selected-node-is-another-node",
        ),
        pytest.param(
            _pod("static", "provisioned"),
            [
                _unbound("static"),
                _static("pv-a", "node1"),
                _unbound("provisioned", storage_class=PROVISIONED).annotate(
                    "volume.kubernetes.io/selected-node", ""
                ),
            ],
            [REASON_BIND_CONFLICT],
            None,
            id="empty-selected-node-stops-before-matching",
        ),
        pytest.param(
            _pod("unbound"),
            [_unbound("unbound")],
            [REASON_BIND_CONFLICT],
            None,
            id="no-provisioner",
        ),
        pytest.param(
            _pod("unbound"),
            [_unbound("unbound", storage_class=TOPOLOGY_MISMATCH)],
            [REASON_BIND_CONFLICT],
            None,
            id="allowed-topologies-exclude-the-node",
        ),
        pytest.param(
            _pod("unbound"),
            [
                _unbound("unbound", "1Gi", PROVISIONED),
                make_csi_driver(PROVISIONER, storage_capacity=False),
            ],
            [],
            ["+unbound"],
            id="driver-without-capacity-tracking",
        ),
        pytest.param(
            _pod("unbound"),
            [
                _unbound("unbound", "1Gi", PROVISIONED),
                make_csi_driver(PROVISIONER, storage_capacity=True),
            ],
            [REASON_NOT_ENOUGH_SPACE],
            None,
            id="driver-tracks-capacity-none-published",
        ),
        pytest.param(
            _pod("unbound", "provisioned"),
            [
                _unbound("unbound", "1G"),
                _unbound("provisioned", "500Mi", PROVISIONED),
                make_csi_driver(PROVISIONER, storage_capacity=True),
            ],
            [REASON_NOT_ENOUGH_SPACE],
            None,
            id="provisioning-stops-at-the-smaller-claim",
        ),
        pytest.param(
            _pod("unbound", "provisioned"),
            [
                _unbound("unbound", "1M"),
                _unbound("provisioned", "500Mi", PROVISIONED),
                make_csi_driver(PROVISIONER, storage_capacity=True),
            ],
            [REASON_BIND_CONFLICT],
            None,
            id="provisioning-stops-at-the-smaller-claim-reversed",
        ),
    ],
)
def test_filter(
    pod: PodBuilder,
    objects: list[StorageObject],
    reasons: list[str],
    bindings: list[str] | None,
) -> None:
    state, status = _filter(pod, *objects)
    if reasons:
        assert (status.code, list(status.reasons)) == (UNRESOLVABLE, reasons)
        assert "node1" not in state.read(STATE_KEY).pod_volumes_by_node
        return
    assert status == SUCCESS
    static, provisions = chosen(state, "node1")
    assert static + [f"+{name}" for name in provisions] == bindings


def test_filter_on_several_nodes() -> None:
    """Only the node with a fitting volume fits; each fitting node keeps its own decisions."""
    handle = handle_with(
        storage_with(
            _unbound("pvc-a", "50Gi"),
            _static("pv-a-0", "node-a", "200Gi"),
            _static("pv-a-1", "node-a", "200Gi"),
            _static("pv-b-0", "node-b", "100Gi"),
            _static("pv-b-1", "node-b", "100Gi"),
        ),
        [node("node-a"), node("node-b"), node("node-c")],
    )
    plugin = plugin_on(handle)
    state = CycleState()
    pod = _pod("pvc-a").pod()
    plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    statuses = filter_all(plugin, state, pod, handle)
    assert statuses == {
        "node-a": SUCCESS,
        "node-b": SUCCESS,
        "node-c": Status(UNRESOLVABLE, REASON_BIND_CONFLICT),
    }
    assert chosen(state, "node-a") == (["pvc-a->pv-a-0"], [])
    assert chosen(state, "node-b") == (["pvc-a->pv-b-0"], [])


def test_generic_ephemeral_claim_is_checked_like_any_claim() -> None:
    pod = make_pod("pod-a").uid("pod-uid").ephemeral("scratch", WAIT)
    _, status = _filter(
        pod,
        make_claim("pod-a-scratch")
        .storage_class(WAIT)
        .owned_by("Pod", "pod-a", "pod-uid")
        .bound_to("pv-bound"),
        _claimed("pv-bound", "node2", "pod-a-scratch"),
    )
    assert status == Status(UNRESOLVABLE, REASON_NODE_CONFLICT)


def test_class_gone_before_provisioning_is_an_error() -> None:
    handle = handle_with(
        storage_with(_unbound("pvc-a", storage_class=PROVISIONED)), [node("node1")]
    )
    plugin = plugin_on(handle)
    state = CycleState()
    pod = _pod("pvc-a").pod()
    plugin.pre_filter(state, pod, [])
    del handle.storage.classes[PROVISIONED]
    status = filter_all(plugin, state, pod, handle)["node1"]
    assert (status.code, status.message()) == (
        Code.ERROR,
        f'failed to find storage class "{PROVISIONED}"',
    )


def test_filter_without_pre_filter_state_is_an_error() -> None:
    handle = handle_with(storage_with(), [node("node1")])
    status = filter_all(plugin_on(handle), CycleState(), _pod("pvc-a").pod(), handle)["node1"]
    assert (status.code, status.message()) == (Code.ERROR, "not found")


def test_filter_on_cloned_node_info_and_state_shares_decisions() -> None:
    """Preemption's dry runs filter clones; the decisions land in the one shared state."""
    handle = handle_with(storage_with(_unbound("pvc-a"), _static("pv-a", "node1")), [node("node1")])
    plugin = plugin_on(handle)
    state = CycleState()
    pod = _pod("pvc-a").pod()
    plugin.pre_filter(state, pod, [])
    clone = state.clone()
    info = handle.snapshot.node_info_list[0].clone()
    assert plugin.filter(clone, pod, info) == SUCCESS
    assert chosen(state, "node1") == (["pvc-a->pv-a"], [])


# CSIStorageCapacity ------------------------------------------------------------------------


def _capacity(
    capacity: str | None,
    maximum: str | None = None,
    *,
    storage_class: str = PROVISIONED,
    topology: dict[str, str] | None = None,
) -> CSIStorageCapacity:
    return make_capacity("net", storage_class, capacity, topology, maximum)


NODE1 = {NODE_KEY: "node1"}


@pytest.mark.parametrize("tracked", [True, False], ids=["tracked", "untracked"])
@pytest.mark.parametrize(
    ("capacities", "fits"),
    [
        pytest.param([_capacity("1Gi", topology={})], True, id="network-attached"),
        pytest.param([_capacity("1Gi", topology=NODE1)], True, id="local-storage"),
        pytest.param(
            [_capacity("1Gi", topology={NODE_KEY: "node2"}), _capacity("1Gi", topology=NODE1)],
            True,
            id="one-of-several",
        ),
        pytest.param([], False, id="no-storage"),
        pytest.param([_capacity("1Gi", topology={NODE_KEY: "node2"})], False, id="wrong-node"),
        pytest.param(
            [_capacity("1Gi", storage_class=WAIT, topology=NODE1)], False, id="wrong-class"
        ),
        pytest.param([_capacity("1Mi", topology=NODE1)], False, id="insufficient-storage"),
        pytest.param(
            [_capacity("1Gi", "1Mi", topology=NODE1)], False, id="insufficient-volume-size"
        ),
        pytest.param([_capacity("1Mi", "1Gi", topology=NODE1)], True, id="volume-size-preferred"),
        pytest.param([_capacity("0Mi", topology=NODE1)], False, id="zero-storage"),
        pytest.param([_capacity(None, "0Mi", topology=NODE1)], False, id="zero-volume-size"),
        pytest.param([_capacity(None, topology=NODE1)], False, id="nil-storage"),
        pytest.param([_capacity("1Gi")], False, id="no-node-topology"),
    ],
)
def test_capacity(capacities: list[CSIStorageCapacity], fits: bool, tracked: bool) -> None:
    state, status = _filter(
        _pod("pvc-a"),
        _unbound("pvc-a", "1Gi", PROVISIONED),
        make_csi_driver(PROVISIONER, storage_capacity=tracked),
        *capacities,
    )
    if fits or not tracked:
        assert status == SUCCESS
        [provision] = state.read(STATE_KEY).pod_volumes_by_node["node1"].dynamic_provisions
        assert provision.claim.name == "pvc-a"
        assert (provision.capacity is not None) == tracked
    else:
        assert status == Status(UNRESOLVABLE, REASON_NOT_ENOUGH_SPACE)


# Score -------------------------------------------------------------------------------------


def test_listed_as_a_score_plugin_that_never_scores() -> None:
    """Upstream's plugin implements Score but scores only behind an alpha gate (off)."""
    handle = handle_with(storage_with(_unbound("pvc-a"), _static("pv-a", "node1")), [node("node1")])
    plugin = plugin_on(handle)
    state = CycleState()
    pod = _pod("pvc-a").pod()
    plugin.pre_filter(state, pod, [])
    filter_all(plugin, state, pod, handle)
    assert isinstance(plugin, ScorePlugin)
    assert plugin.pre_score(state, pod, handle.snapshot.node_info_list) == SKIP
    assert plugin.score(state, pod, handle.snapshot.node_info_list[0]) == (0, SUCCESS)
