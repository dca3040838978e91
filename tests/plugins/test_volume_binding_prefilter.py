"""VolumeBinding PreFilter: which pods it skips, rejects (with upstream's exact texts) or lets
through, and how it sorts the claims for Filter; cases follow upstream's volume_binding_test.go
and binder_test.go (GetPodVolumeClaims)."""

from __future__ import annotations

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.status import Code
from kopf_scheduler.plugins.volume_binding import REASON_UNBOUND_IMMEDIATE
from kopf_scheduler.plugins.volume_binding.plugin import STATE_KEY
from tests.builders import PodBuilder, make_pod
from tests.plugins.volume_binding_support import (
    IMMEDIATE,
    NODE_KEY,
    WAIT,
    StorageObject,
    handle_with,
    node,
    plugin_on,
    storage_with,
)
from tests.storage_builders import make_claim, make_volume

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _run(pod: PodBuilder, *objects: StorageObject) -> tuple[CycleState, Code, str]:
    handle = handle_with(storage_with(*objects), [node("node1")])
    state = CycleState()
    result, status = plugin_on(handle).pre_filter(state, pod.pod(), handle.snapshot.node_info_list)
    assert result is None
    return state, status.code, status.message()


@pytest.mark.parametrize(
    ("pod", "objects", "code", "message"),
    [
        pytest.param(
            make_pod("pod-a"),
            [],
            Code.SKIP,
            "",
            id="pod-without-claims",
        ),
        pytest.param(
            make_pod("pod-a").volume("scratch", emptyDir={}),
            [],
            Code.SKIP,
            "",
            id="pod-with-only-other-volumes",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [],
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" not found',
            id="claim-missing",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a").claim("pvc-b"),
            [make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a")],
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-b" not found',
            id="second-claim-missing",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(IMMEDIATE)],
            UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="immediate-claim-unbound",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a")],
            UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="claim-without-class-is-immediate",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class("no-such-class")],
            UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="claim-of-unknown-class-is-immediate",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(WAIT).volume_name("pv-a")],
            UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="prebound-delay-claim-is-immediate",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a").phase("Lost")],
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
            id="claim-lost",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(WAIT).terminating()],
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" is being deleted',
            id="claim-terminating",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a").claim("pvc-b"),
            [make_claim("pvc-a").storage_class(WAIT).terminating()],
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" is being deleted',
            id="first-problem-in-volume-order-wins",
        ),
        pytest.param(
            make_pod("pod-a").ephemeral("scratch", WAIT),
            [],
            UNRESOLVABLE,
            "waiting for ephemeral volume controller to create the persistentvolumeclaim "
            '"pod-a-scratch"',
            id="ephemeral-claim-not-created",
        ),
        pytest.param(
            make_pod("pod-a").uid("pod-a-uid").ephemeral("scratch", WAIT),
            [make_claim("pod-a-scratch").storage_class(WAIT).owned_by("Pod", "pod-a", "other")],
            UNRESOLVABLE,
            "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)",
            id="ephemeral-claim-of-another-pod",
        ),
        pytest.param(
            make_pod("pod-a").uid("pod-a-uid").ephemeral("scratch", WAIT),
            [make_claim("pod-a-scratch").storage_class(WAIT)],
            UNRESOLVABLE,
            "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)",
            id="ephemeral-claim-without-owner",
        ),
        pytest.param(
            make_pod("pod-a").uid("pod-a-uid").ephemeral("scratch", WAIT),
            [
                make_claim("pod-a-scratch")
                .storage_class(WAIT)
                .owned_by("Pod", "pod-a", "pod-a-uid")
                .bound_to("pv-a"),
            ],
            Code.SUCCESS,
            "",
            id="ephemeral-claim-owned-and-bound",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a")],
            Code.SUCCESS,
            "",
            id="all-bound",
        ),
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            [make_claim("pvc-a").storage_class(WAIT)],
            Code.SUCCESS,
            "",
            id="delay-binding-claim",
        ),
    ],
)
def test_pre_filter_status(
    pod: PodBuilder, objects: list[StorageObject], code: Code, message: str
) -> None:
    _, got_code, got_message = _run(pod, *objects)
    assert (got_code, got_message) == (code, message)


def test_claims_are_sorted_by_binding_state_with_the_volumes_of_delay_classes() -> None:
    pv_a = make_volume("pv-a").storage_class(WAIT).node_affinity(NODE_KEY, "node1")
    other_class = make_volume("pv-other").storage_class("other")
    state, code, _ = _run(
        make_pod("pod-a").claim("pvc-a").claim("pvc-b").claim("pvc-a", volume="again"),
        make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a"),
        make_claim("pvc-b").storage_class(WAIT),
        pv_a,
        other_class,
    )
    assert code == Code.SUCCESS
    claims = state.read(STATE_KEY).claims
    assert [c.name for c in claims.bound] == ["pvc-a", "pvc-a"]
    assert [c.name for c in claims.delay_binding] == ["pvc-b"]
    assert claims.immediate_unbound == ()
    assert {k: [v.name for v in vs] for k, vs in claims.volumes_by_class.items()} == {
        WAIT: ["pv-a"]
    }


def test_a_delay_class_without_volumes_is_listed_empty() -> None:
    state, _, _ = _run(make_pod("pod-a").claim("pvc-a"), make_claim("pvc-a").storage_class(WAIT))
    assert dict(state.read(STATE_KEY).claims.volumes_by_class) == {WAIT: ()}


def test_pod_without_claims_leaves_state_for_reserve() -> None:
    state, code, _ = _run(make_pod("pod-a"))
    assert code == Code.SKIP
    data = state.read(STATE_KEY)
    assert (data.claims.bound, data.claims.delay_binding) == ((), ())


def test_claims_are_sorted_as_assumed() -> None:
    """A claim an earlier pod picked a node for is handed to Filter with that node."""
    storage = storage_with(make_claim("pvc-a").storage_class(WAIT))
    api_claim = storage.claims.get("default/pvc-a")
    assert api_claim is not None
    assumed = (
        make_claim("pvc-a")
        .storage_class(WAIT)
        .annotate("volume.kubernetes.io/selected-node", "node1")
    )
    storage.claims.assume(assumed.version(api_claim.resource_version).claim())
    handle = handle_with(storage, [node("node1")])
    state = CycleState()
    _, status = plugin_on(handle).pre_filter(state, make_pod("pod-a").claim("pvc-a").pod(), [])
    assert status.code == Code.SUCCESS
    [claim] = state.read(STATE_KEY).claims.delay_binding
    assert claim.selected_node == "node1"
