"""VolumeBinding's cluster events and queueing hints; cases follow upstream's
TestIsSchedulableAfter* tables in volume_binding_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    object_event,
)
from kopf_scheduler.model.storage import CSIDriver, CSINode, StorageClass
from kopf_scheduler.plugins.volume_binding import hints
from tests.builders import PodBuilder, make_pod
from tests.plugins.volume_binding_support import csi_node, handle_with, plugin_on, storage_with
from tests.storage_builders import make_capacity, make_claim, make_class, make_csi_driver

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def _registered() -> dict[EventResource, tuple[ActionType, Any]]:
    plugin = plugin_on(handle_with(storage_with()))
    return {
        item.event.resource: (item.event.action, item.hint) for item in plugin.events_to_register()
    }


def test_registered_events() -> None:
    add_or_update = ActionType.ADD | ActionType.UPDATE
    assert _registered() == {
        EventResource.STORAGE_CLASS: (
            add_or_update,
            hints.is_schedulable_after_storage_class_change,
        ),
        EventResource.PERSISTENT_VOLUME_CLAIM: (
            add_or_update,
            hints.is_schedulable_after_claim_change,
        ),
        EventResource.PERSISTENT_VOLUME: (add_or_update, None),
        EventResource.NODE: (ActionType.ADD | ActionType.UPDATE_NODE_LABEL, None),
        EventResource.CSI_NODE: (add_or_update, hints.is_schedulable_after_csi_node_change),
        EventResource.CSI_DRIVER: (ActionType.UPDATE, hints.is_schedulable_after_csi_driver_change),
        EventResource.CSI_STORAGE_CAPACITY: (
            add_or_update,
            hints.is_schedulable_after_capacity_change,
        ),
    }


@pytest.mark.parametrize(
    ("resource", "action", "matched"),
    [
        pytest.param(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True, id="claim-add"),
        pytest.param(
            EventResource.PERSISTENT_VOLUME_CLAIM,
            ActionType.UPDATE_GENERIC,
            True,
            id="claim-update",
        ),
        pytest.param(
            EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.DELETE, False, id="claim-delete"
        ),
        pytest.param(
            EventResource.PERSISTENT_VOLUME, ActionType.UPDATE_GENERIC, True, id="pv-update"
        ),
        pytest.param(EventResource.PERSISTENT_VOLUME, ActionType.DELETE, False, id="pv-delete"),
        pytest.param(EventResource.CSI_DRIVER, ActionType.ADD, False, id="driver-add"),
        pytest.param(EventResource.CSI_DRIVER, ActionType.UPDATE_GENERIC, True, id="driver-update"),
        pytest.param(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE, False, id="attachment"),
    ],
)
def test_storage_events_the_handlers_raise(
    resource: EventResource, action: ActionType, matched: bool
) -> None:
    plugin = plugin_on(handle_with(storage_with()))
    incoming = object_event(resource, action)
    assert any(item.event.matches(incoming) for item in plugin.events_to_register()) is matched


def test_node_taint_change_is_not_registered() -> None:
    plugin = plugin_on(handle_with(storage_with()))
    incoming = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert not any(item.event.matches(incoming) for item in plugin.events_to_register())


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, csi_node("node1", ""), QUEUE, id="created"),
        pytest.param(
            csi_node("node1", ""),
            csi_node("node1", "kubernetes.io/gce-pd"),
            QUEUE,
            id="migrated-plugin-added",
        ),
        pytest.param(
            csi_node("node1", "kubernetes.io/gce-pd"),
            csi_node("node1", "kubernetes.io/gce-pd,kubernetes.io/aws-ebs"),
            QUEUE,
            id="migrated-plugins-changed",
        ),
        pytest.param(
            csi_node("node1", "kubernetes.io/gce-pd"),
            csi_node("node1", "kubernetes.io/gce-pd"),
            SKIP,
            id="annotation-unchanged",
        ),
        pytest.param(csi_node("node1", ""), "not a CSINode", QUEUE, id="wrong-type"),
    ],
)
def test_csi_node_hint(old: CSINode | None, new: Any, expected: QueueingHint) -> None:
    pod = make_pod("pod-a").claim("pvc-a").pod()
    assert hints.is_schedulable_after_csi_node_change(pod, old, new) is expected


def _pod_with_claims() -> PodBuilder:
    return make_pod("pod-a").claim("pvc-a").ephemeral("scratch")


@pytest.mark.parametrize(
    ("pod", "claim", "expected"),
    [
        pytest.param(
            _pod_with_claims(), make_claim("pvc-a", "other-ns"), SKIP, id="other-namespace"
        ),
        pytest.param(_pod_with_claims(), make_claim("pvc-b"), SKIP, id="not-the-pods-claim"),
        pytest.param(
            make_pod("pod-a").ephemeral("scratch"),
            make_claim("pvc-a"),
            SKIP,
            id="pod-without-that-claim",
        ),
        pytest.param(_pod_with_claims(), make_claim("pvc-a"), QUEUE, id="the-pods-claim"),
        pytest.param(
            _pod_with_claims(), make_claim("pod-a-scratch"), QUEUE, id="the-pods-ephemeral-claim"
        ),
    ],
)
def test_claim_hint(pod: PodBuilder, claim: Any, expected: QueueingHint) -> None:
    new = claim.claim()
    assert hints.is_schedulable_after_claim_change(pod.pod(), None, new) is expected
    assert hints.is_schedulable_after_claim_change(pod.pod(), new, new) is expected


def _class(*topologies: tuple[str, tuple[str, ...]], provisioner: str = "p") -> StorageClass:
    builder = make_class("sc").provisioner(provisioner).wait_for_first_consumer()
    for key, values in topologies:
        builder.allowed_topology(key, *values)
    return builder.storage_class()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, _class(), QUEUE, id="created"),
        pytest.param(
            _class(("zone", ("a",))), _class(("zone", ("a", "b"))), QUEUE, id="topology-changed"
        ),
        pytest.param(_class(), _class(("zone", ("a",))), QUEUE, id="topology-added"),
        pytest.param(
            _class(("zone", ("a",))),
            _class(("zone", ("a",)), provisioner="q"),
            SKIP,
            id="other-change",
        ),
        pytest.param(_class(), _class(), SKIP, id="unchanged"),
    ],
)
def test_storage_class_hint(
    old: StorageClass | None, new: StorageClass, expected: QueueingHint
) -> None:
    pod = make_pod("pod-a").claim("pvc-a").pod()
    assert hints.is_schedulable_after_storage_class_change(pod, old, new) is expected


def _capacity(capacity: str | None, maximum: str | None = None) -> Any:
    return make_capacity("cap", "sc", capacity, {"zone": "a"}, maximum)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, _capacity("1Gi"), QUEUE, id="created"),
        pytest.param(_capacity(None), _capacity("1Gi"), QUEUE, id="capacity-set"),
        pytest.param(_capacity(None), _capacity(None, "1Gi"), QUEUE, id="volume-size-set"),
        pytest.param(_capacity("1Gi"), _capacity("2Gi"), QUEUE, id="capacity-grew"),
        pytest.param(
            _capacity("1Gi", "1Gi"), _capacity("1Gi"), SKIP, id="volume-size-unset-same-limit"
        ),
        pytest.param(
            _capacity("2Gi", "1Gi"), _capacity("2Gi"), QUEUE, id="volume-size-unset-limit-grew"
        ),
        pytest.param(
            _capacity("1Gi", "1Gi"), _capacity("1Gi", "2Gi"), QUEUE, id="volume-size-grew"
        ),
        pytest.param(_capacity("1Gi"), _capacity("1Gi"), SKIP, id="unchanged"),
        pytest.param(_capacity("2Gi"), _capacity("1Gi"), SKIP, id="capacity-shrank"),
        pytest.param(
            _capacity("1Gi", "2Gi"), _capacity("1Gi", "1Gi"), SKIP, id="volume-size-shrank"
        ),
        pytest.param(_capacity("1Gi"), _capacity(None), SKIP, id="limit-removed"),
    ],
)
def test_capacity_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    pod = make_pod("pod-a").claim("pvc-a").pod()
    assert hints.is_schedulable_after_capacity_change(pod, old, new) is expected


def _csi_pod(driver: str) -> PodBuilder:
    return make_pod("pod-a").volume("inline", csi={"driver": driver})


@pytest.mark.parametrize(
    ("pod", "old", "new", "expected"),
    [
        pytest.param(
            make_pod("pod-a").claim("pvc-a"),
            make_csi_driver("drv", True),
            make_csi_driver("drv", False),
            SKIP,
            id="pod-without-inline-csi-volume",
        ),
        pytest.param(
            _csi_pod("other"),
            make_csi_driver("drv", True),
            make_csi_driver("drv", False),
            SKIP,
            id="other-driver",
        ),
        pytest.param(
            _csi_pod("drv"),
            make_csi_driver("drv", False),
            make_csi_driver("drv", False),
            SKIP,
            id="capacity-was-not-tracked",
        ),
        pytest.param(
            _csi_pod("drv"),
            make_csi_driver("drv", True),
            make_csi_driver("drv", False),
            QUEUE,
            id="capacity-tracking-disabled",
        ),
        pytest.param(
            _csi_pod("drv"),
            make_csi_driver("drv", True),
            make_csi_driver("drv", True),
            SKIP,
            id="capacity-still-tracked",
        ),
        pytest.param(
            _csi_pod("drv"),
            make_csi_driver("drv", False),
            make_csi_driver("drv", True),
            SKIP,
            id="capacity-tracking-enabled",
        ),
    ],
)
def test_csi_driver_hint(
    pod: PodBuilder, old: CSIDriver, new: CSIDriver, expected: QueueingHint
) -> None:
    assert hints.is_schedulable_after_csi_driver_change(pod.pod(), old, new) is expected


@pytest.mark.parametrize(
    "hint",
    [
        hints.is_schedulable_after_storage_class_change,
        hints.is_schedulable_after_claim_change,
        hints.is_schedulable_after_csi_driver_change,
        hints.is_schedulable_after_capacity_change,
    ],
)
def test_unexpected_objects_queue(hint: Any) -> None:
    pod = make_pod("pod-a").claim("pvc-a").pod()
    assert hint(pod, "old", "new") is QUEUE
