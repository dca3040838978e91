"""VolumeZone: zone and region labels of the pod's bound PersistentVolumes against the node's,
the PreFilter rejections for claims it cannot follow, and the queueing hints; cases follow
upstream's volume_zone_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, HintFn, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from kopf_scheduler.plugins import volume_zone
from kopf_scheduler.plugins.volume_zone import REASON_CONFLICT, VolumeZone
from tests.builders import make_node, make_pod, node_info
from tests.storage_builders import make_claim, make_class, make_volume

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"

SUCCESS = Status(Code.SUCCESS)
SKIPPED = Status(Code.SKIP)
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


def _volume(name: str, **labels: str) -> PersistentVolume:
    builder = make_volume(name)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.volume()


def _claim_of(name: str, volume: str) -> PersistentVolumeClaim:
    """A claim naming ``volume`` in ``spec.volumeName`` (the plugin needs nothing more)."""
    return make_claim(name).volume_name(volume).claim()


def _plugin(
    volumes: list[PersistentVolume],
    claims: list[PersistentVolumeClaim],
    classes: tuple[StorageClass, ...] = (),
) -> VolumeZone:
    handle = Handle()
    for volume in volumes:
        handle.storage.volumes.upsert(volume)
    for claim in claims:
        handle.storage.claims.upsert(claim)
    for storage_class in classes:
        handle.storage.classes[storage_class.name] = storage_class
    return volume_zone.new(None, handle)


def _pod_with_claim(claim: str) -> Pod:
    return make_pod("pod-1").claim(claim).pod()


def _run(plugin: VolumeZone, pod: Pod, labels: dict[str, str]) -> tuple[Status, Status]:
    """PreFilter, then Filter on the same state whatever PreFilter said, as upstream's tests do
    (so Filter's own lookup is exercised when PreFilter stored nothing)."""
    state = CycleState()
    builder = make_node("host1")
    for key, value in labels.items():
        builder.label(key, value)
    _, pre_filter = plugin.pre_filter(state, pod, [])
    return pre_filter, plugin.filter(state, pod, node_info(builder))


SINGLE_ZONE = _plugin(
    volumes=[
        _volume("vol-1", **{BETA_ZONE: "us-west1-a"}),
        _volume("vol-2", **{BETA_REGION: "us-west1", "uselessLabel": "none"}),
        _volume("vol-3", **{BETA_REGION: "us-west1"}),
        _volume("vol-stable-1", **{ZONE: "us-west1-a"}),
        _volume("vol-stable-2", **{REGION: "us-west1", "uselessLabel": "none"}),
        _volume("vol-stable-3", **{ZONE: "us-west1-a", REGION: "us-west1-a"}),
    ],
    claims=[
        _claim_of("pvc-1", "vol-1"),
        _claim_of("pvc-2", "vol-2"),
        _claim_of("pvc-3", "vol-3"),
        _claim_of("pvc-4", "vol-not-exist"),
        _claim_of("pvc-stable-1", "vol-stable-1"),
        _claim_of("pvc-stable-2", "vol-stable-2"),
        _claim_of("pvc-stable-3", "vol-stable-3"),
    ],
)


@pytest.mark.parametrize(
    ("pod", "labels", "expected"),
    [
        pytest.param(
            make_pod("pod-1").pod(),
            {BETA_ZONE: "us-west1-a"},
            (SKIPPED, SUCCESS),
            id="pod-without-volume",
        ),
        pytest.param(_pod_with_claim("pvc-1"), {}, (SUCCESS, SUCCESS), id="node-without-labels"),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="beta-zone-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-2"),
            {BETA_REGION: "us-west1", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="beta-region-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-2"),
            {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="beta-region-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="beta-zone-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-1"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="zone-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-2"),
            {REGION: "us-west1", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="region-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-2"),
            {REGION: "no_us-west1", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="region-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-1"),
            {ZONE: "no_us-west1-a", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="zone-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-3"),
            {ZONE: "us-west1-a"},
            (SUCCESS, CONFLICT),
            id="pv-with-zone-and-region-node-with-only-zone",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-1"),
            {BETA_ZONE: "us-west1-a"},
            (SUCCESS, CONFLICT),
            id="pv-with-ga-zone-node-with-beta-zone",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {ZONE: "us-west1-a"},
            (SUCCESS, SUCCESS),
            id="pv-with-beta-label-node-with-ga-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {ZONE: "us-west1-b"},
            (SUCCESS, CONFLICT),
            id="pv-with-beta-label-node-with-ga-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {BETA_ZONE: "us-west1-b", ZONE: "us-west1-a"},
            (SUCCESS, CONFLICT),
            id="node-beta-label-wins-over-its-ga-label",
        ),
        pytest.param(
            _pod_with_claim("pvc-4"),
            {ZONE: "us-west1-a"},
            (_unresolvable('persistentvolume "vol-not-exist" not found'),) * 2,
            id="bound-volume-missing",
        ),
        pytest.param(
            _pod_with_claim("pvc-missing"),
            {ZONE: "us-west1-a"},
            (_unresolvable('persistentvolumeclaim "pvc-missing" not found'),) * 2,
            id="claim-missing",
        ),
    ],
)
def test_single_zone(pod: Pod, labels: dict[str, str], expected: tuple[Status, Status]) -> None:
    assert _run(SINGLE_ZONE, pod, labels) == expected


MULTI_ZONE = _plugin(
    volumes=[
        _volume("vol-1", **{BETA_ZONE: "us-west1-a"}),
        _volume("vol-2", **{BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
        _volume("vol-3", **{BETA_ZONE: "us-west1-c__us-west1-a"}),
        _volume("vol-stable-1", **{ZONE: "us-west1-a"}),
        _volume("vol-stable-2", **{ZONE: "us-west1-c__us-west1-a"}),
        _volume("vol-spaced", **{ZONE: " us-west1-c __ us-west1-a "}),
        _volume("vol-empty-zone", **{ZONE: "us-west1-c__"}),
    ],
    claims=[
        _claim_of("pvc-1", "vol-1"),
        _claim_of("pvc-2", "vol-2"),
        _claim_of("pvc-3", "vol-3"),
        _claim_of("pvc-4", "vol-not-exist"),
        _claim_of("pvc-stable-1", "vol-stable-1"),
        _claim_of("pvc-stable-2", "vol-stable-2"),
        _claim_of("pvc-spaced", "vol-spaced"),
        _claim_of("pvc-empty-zone", "vol-empty-zone"),
    ],
)


@pytest.mark.parametrize(
    ("pod", "labels", "expected"),
    [
        pytest.param(_pod_with_claim("pvc-3"), {}, (SUCCESS, SUCCESS), id="node-without-labels"),
        pytest.param(
            _pod_with_claim("pvc-3"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="beta-zone-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="beta-zone-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-2"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            (SUCCESS, SUCCESS),
            id="zone-label-matched",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-1"),
            {ZONE: "us-west1-b", "uselessLabel": "none"},
            (SUCCESS, CONFLICT),
            id="zone-label-does-not-match",
        ),
        pytest.param(
            _pod_with_claim("pvc-stable-2"),
            {ZONE: "us-west1-b"},
            (SUCCESS, CONFLICT),
            id="zone-in-none-of-the-listed-zones",
        ),
        pytest.param(
            _pod_with_claim("pvc-spaced"),
            {ZONE: "us-west1-c"},
            (SUCCESS, SUCCESS),
            id="listed-zones-are-trimmed",
        ),
        pytest.param(
            _pod_with_claim("pvc-empty-zone"),
            {ZONE: "us-west1-b"},
            (SKIPPED, SUCCESS),
            id="label-with-an-empty-zone-is-ignored",
        ),
    ],
)
def test_multi_zone(pod: Pod, labels: dict[str, str], expected: tuple[Status, Status]) -> None:
    assert _run(MULTI_ZONE, pod, labels) == expected


WITH_BINDING = _plugin(
    volumes=[_volume("vol-1", **{BETA_ZONE: "us-west1-a"})],
    claims=[
        _claim_of("pvc-1", "vol-1"),
        make_claim("pvc-bound").bound_to("vol-1").claim(),
        make_claim("pvc-no-sc").storage_class("class-0").claim(),
        make_claim("pvc-empty-sc").claim(),
        make_claim("pvc-wait-sc").storage_class("class-wait").claim(),
        make_claim("pvc-beta-wait-sc")
        .annotate("volume.beta.kubernetes.io/storage-class", "class-wait")
        .claim(),
        make_claim("pvc-immediate-sc").storage_class("class-immediate").claim(),
    ],
    classes=(
        make_class("class-immediate").storage_class(),
        make_class("class-wait").wait_for_first_consumer().storage_class(),
    ),
)
TEST_NODE = {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}


@pytest.mark.parametrize(
    ("pod", "labels", "expected"),
    [
        pytest.param(
            _pod_with_claim("pvc-1"), TEST_NODE, (SUCCESS, SUCCESS), id="label-zone-matched"
        ),
        pytest.param(
            _pod_with_claim("pvc-bound"),
            {BETA_ZONE: "us-west1-b"},
            (SUCCESS, CONFLICT),
            id="bind-completed-claim-mismatch",
        ),
        pytest.param(
            _pod_with_claim("pvc-empty-sc"),
            TEST_NODE,
            (_unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),) * 2,
            id="unbound-volume-empty-storage-class",
        ),
        pytest.param(
            _pod_with_claim("pvc-no-sc"),
            TEST_NODE,
            (_unresolvable('storageclass.storage.k8s.io "class-0" not found'),) * 2,
            id="unbound-volume-no-storage-class",
        ),
        pytest.param(
            _pod_with_claim("pvc-immediate-sc"),
            TEST_NODE,
            (_unresolvable("PersistentVolume had no name"),) * 2,
            id="unbound-volume-immediate-binding-mode",
        ),
        pytest.param(
            _pod_with_claim("pvc-wait-sc"),
            TEST_NODE,
            (SKIPPED, SUCCESS),
            id="unbound-volume-wait-binding-mode",
        ),
        pytest.param(
            _pod_with_claim("pvc-beta-wait-sc"),
            TEST_NODE,
            (SKIPPED, SUCCESS),
            id="class-from-the-beta-annotation",
        ),
        pytest.param(
            make_pod("pod-1").claim("pvc-wait-sc").claim("pvc-1").pod(),
            {BETA_ZONE: "us-west1-b"},
            (SUCCESS, CONFLICT),
            id="waiting-claim-ignored-bound-one-checked",
        ),
        pytest.param(
            make_pod("pod-1").ephemeral("scratch").pod(),
            {BETA_ZONE: "us-west1-b"},
            (SKIPPED, SUCCESS),
            id="ephemeral-volumes-not-followed",
        ),
    ],
)
def test_with_binding(pod: Pod, labels: dict[str, str], expected: tuple[Status, Status]) -> None:
    assert _run(WITH_BINDING, pod, labels) == expected


def _hint(resource: EventResource) -> HintFn:
    for registration in _plugin([], []).events_to_register():
        if registration.event.resource is resource:
            assert registration.hint is not None
            return registration.hint
    raise AssertionError(f"no {resource} event")


@pytest.mark.parametrize(
    ("pod", "old", "new", "expected"),
    [
        pytest.param(
            _pod_with_claim("pvc-1"), None, "not-a-pvc", QueueingHint.QUEUE, id="wrong-new-object"
        ),
        pytest.param(
            make_pod("pod-1").pod(),
            None,
            _claim_of("pvc-1", "vol-1"),
            QueueingHint.QUEUE_SKIP,
            id="added-but-pod-refers-no-pvc",
        ),
        pytest.param(
            _pod_with_claim("pvc-2"),
            None,
            _claim_of("pvc-1", "vol-1"),
            QueueingHint.QUEUE_SKIP,
            id="added-pod-uses-a-different-pvc",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            None,
            make_claim("pvc-1", "ns1").volume_name("vol-1").claim(),
            QueueingHint.QUEUE_SKIP,
            id="added-same-name-different-namespace",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            None,
            _claim_of("pvc-1", "vol-1"),
            QueueingHint.QUEUE,
            id="added-the-pods-pvc",
        ),
        pytest.param(
            _pod_with_claim("pvc-1"),
            make_claim("pvc-1").claim(),
            _claim_of("pvc-1", "vol-1"),
            QueueingHint.QUEUE,
            id="updated-the-pods-pvc",
        ),
        pytest.param(
            make_pod("pod-1").pod(),
            make_claim("pvc-1").claim(),
            _claim_of("pvc-1", "vol-1"),
            QueueingHint.QUEUE_SKIP,
            id="updated-but-pod-refers-no-pvc",
        ),
    ],
)
def test_is_schedulable_after_claim_change(
    pod: Pod, old: Any, new: Any, expected: QueueingHint
) -> None:
    assert _hint(EventResource.PERSISTENT_VOLUME_CLAIM)(pod, old, new) is expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param("not-a-storageclass", QueueingHint.QUEUE, id="wrong-new-object"),
        pytest.param(
            make_class("sc-1").storage_class(), QueueingHint.QUEUE_SKIP, id="immediate-class"
        ),
        pytest.param(
            StorageClass({"metadata": {"name": "sc-1"}, "provisioner": "example.com/csi"}),
            QueueingHint.QUEUE_SKIP,
            id="class-without-binding-mode",
        ),
        pytest.param(
            make_class("sc-1").wait_for_first_consumer().storage_class(),
            QueueingHint.QUEUE,
            id="new-class-waits-for-first-consumer",
        ),
    ],
)
def test_is_schedulable_after_storage_class_added(new: Any, expected: QueueingHint) -> None:
    assert _hint(EventResource.STORAGE_CLASS)(_pod_with_claim("pvc-1"), None, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, "not-a-pv", QueueingHint.QUEUE, id="wrong-new-object"),
        pytest.param("not-a-pv", _volume("vol-1"), QueueingHint.QUEUE, id="wrong-old-object"),
        pytest.param(
            None, _volume("vol-1", **{BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE, id="new-pv"
        ),
        pytest.param(
            _volume("vol-1", **{BETA_ZONE: "us-west1-a"}),
            _volume("vol-1", **{BETA_ZONE: "us-west1-b"}),
            QueueingHint.QUEUE,
            id="updated-and-changed-topology",
        ),
        pytest.param(
            _volume("vol-1", **{BETA_ZONE: "us-west1-a"}),
            _volume("vol-1", **{BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QueueingHint.QUEUE,
            id="updated-and-added-topology-label",
        ),
        pytest.param(
            _volume("vol-1", **{BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            _volume("vol-1", **{BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QueueingHint.QUEUE_SKIP,
            id="updated-but-topology-unchanged",
        ),
        pytest.param(
            _volume("vol-1", **{ZONE: "a__b"}),
            _volume("vol-1", **{ZONE: "b__a", "other": "label"}),
            QueueingHint.QUEUE_SKIP,
            id="same-zones-in-another-order",
        ),
    ],
)
def test_is_schedulable_after_volume_change(old: Any, new: Any, expected: QueueingHint) -> None:
    assert _hint(EventResource.PERSISTENT_VOLUME)(_pod_with_claim("pvc-1"), old, new) is expected


def test_events_to_register() -> None:
    events = {
        r.event.resource: (r.event.action, r.hint) for r in _plugin([], []).events_to_register()
    }
    assert set(events) == {
        EventResource.STORAGE_CLASS,
        EventResource.NODE,
        EventResource.PERSISTENT_VOLUME_CLAIM,
        EventResource.PERSISTENT_VOLUME,
    }
    assert events[EventResource.STORAGE_CLASS][0] == ActionType.ADD
    assert events[EventResource.NODE] == (ActionType.ADD | ActionType.UPDATE_NODE_LABEL, None)
    add_or_update = ActionType.ADD | ActionType.UPDATE_GENERIC
    assert events[EventResource.PERSISTENT_VOLUME_CLAIM][0] == add_or_update
    assert events[EventResource.PERSISTENT_VOLUME][0] == add_or_update


def test_new_rejects_args() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        volume_zone.new({"foo": 1}, Handle())
