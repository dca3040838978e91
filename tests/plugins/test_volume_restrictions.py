"""VolumeRestrictions: in-tree disk conflicts, ReadWriteOncePod claims counted cluster-wide, the
AddPod/RemovePod arithmetic preemption relies on, and the queueing hints; cases follow upstream's
volume_restrictions_test.go."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, HintFn, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NominatingInfo, PostFilterResult
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import PersistentVolumeClaim
from kopf_scheduler.plugins import volume_restrictions
from kopf_scheduler.plugins.volume_restrictions import (
    REASON_DISK_CONFLICT,
    REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from kopf_scheduler.preemption.record import PREEMPTION_RECORD
from tests.builders import make_node, make_pod, node_info
from tests.preemption.support import close_envs, make_env
from tests.storage_builders import make_claim

DISK_CONFLICT = Status(Code.UNSCHEDULABLE, REASON_DISK_CONFLICT)
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, REASON_READ_WRITE_ONCE_POD_CONFLICT)
SKIPPED = "skip"
"""Expected PreFilter outcome: the plugin skips itself (Filter then never runs)."""

Source = dict[str, Any]


def _plugin(
    claims: tuple[PersistentVolumeClaim, ...] = (), node_infos: tuple[NodeInfo, ...] = ()
) -> VolumeRestrictions:
    handle = Handle(snapshot=Snapshot.from_node_infos(list(node_infos)))
    for claim in claims:
        handle.storage.claims.upsert(claim)
    return volume_restrictions.new(None, handle)


def _disk_pod(name: str, kind: str, source: Source | None) -> Pod:
    builder = make_pod(name)
    if source is not None:
        builder.volume("disk", **{kind: source})
    return builder.pod()


def _run(
    plugin: VolumeRestrictions, pod: Pod, info: NodeInfo
) -> tuple[str | Status, Status | None]:
    """PreFilter, then Filter when PreFilter let the pod through (as the framework does)."""
    state = CycleState()
    _, pre_filter = plugin.pre_filter(state, pod, [info])
    if pre_filter.is_skip():
        return SKIPPED, None
    if not pre_filter.is_success():
        return pre_filter, None
    return pre_filter, plugin.filter(state, pod, info)


GCE_FOO: Source = {"pdName": "foo"}
GCE_BAR: Source = {"pdName": "bar"}
AWS_FOO: Source = {"volumeID": "foo"}
AWS_BAR: Source = {"volumeID": "bar"}
RBD_AB: Source = {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}
RBD_CD: Source = {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}
ISCSI_2016: Source = {
    "targetPortal": "127.0.0.1:3260",
    "iqn": "iqn.2016-12.server:storage.target01",
    "fsType": "ext4",
    "lun": 0,
}
ISCSI_2017: Source = {**ISCSI_2016, "iqn": "iqn.2017-12.server:storage.target01"}


def _read_only(source: Source) -> Source:
    return {**source, "readOnly": True}


@pytest.mark.parametrize(
    ("kind", "wanted", "existing", "expected"),
    [
        # Upstream's four tables, one per in-tree disk kind.
        *(
            case
            for kind, same, other in (
                ("gcePersistentDisk", GCE_FOO, GCE_BAR),
                ("awsElasticBlockStore", AWS_FOO, AWS_BAR),
                ("rbd", RBD_AB, RBD_CD),
                ("iscsi", ISCSI_2016, ISCSI_2017),
            )
            for case in (
                pytest.param(kind, None, None, None, id=f"{kind}-nothing"),
                pytest.param(kind, None, same, None, id=f"{kind}-one-state"),
                pytest.param(kind, same, same, DISK_CONFLICT, id=f"{kind}-same-state"),
                pytest.param(kind, other, same, None, id=f"{kind}-different-state"),
            )
        ),
        # Read-only rules.
        pytest.param(
            "gcePersistentDisk",
            _read_only(GCE_FOO),
            _read_only(GCE_FOO),
            None,
            id="gce-both-read-only",
        ),
        pytest.param(
            "gcePersistentDisk", _read_only(GCE_FOO), GCE_FOO, DISK_CONFLICT, id="gce-one-writer"
        ),
        pytest.param(
            "awsElasticBlockStore",
            _read_only(AWS_FOO),
            _read_only(AWS_FOO),
            DISK_CONFLICT,
            id="aws-read-only-still-conflicts",
        ),
        pytest.param("rbd", _read_only(RBD_AB), _read_only(RBD_AB), None, id="rbd-both-read-only"),
        pytest.param("rbd", RBD_AB, _read_only(RBD_AB), DISK_CONFLICT, id="rbd-one-writer"),
        pytest.param(
            "iscsi", _read_only(ISCSI_2016), _read_only(ISCSI_2016), None, id="iscsi-read-only"
        ),
        pytest.param(
            "iscsi", ISCSI_2016, _read_only(ISCSI_2016), DISK_CONFLICT, id="iscsi-one-writer"
        ),
        # What makes two RBD volumes the same image.
        pytest.param(
            "rbd",
            {**RBD_AB, "monitors": ["b", "c"]},
            RBD_AB,
            DISK_CONFLICT,
            id="rbd-one-monitor-in-common",
        ),
        pytest.param("rbd", {**RBD_AB, "pool": "other"}, RBD_AB, None, id="rbd-other-pool"),
        pytest.param("rbd", {**RBD_AB, "image": "other"}, RBD_AB, None, id="rbd-other-image"),
        pytest.param(
            "rbd",
            {"monitors": ["a"], "image": "bar"},
            {"monitors": ["a"], "pool": "rbd", "image": "bar"},
            DISK_CONFLICT,
            id="rbd-missing-pool-is-the-default-pool",
        ),
    ],
)
def test_disk_conflicts(
    kind: str, wanted: Source | None, existing: Source | None, expected: Status | None
) -> None:
    pod = _disk_pod("p", kind, wanted)
    info = node_info(make_node("n1"))
    if existing is not None:
        info = node_info(make_node("n1"), _disk_pod("existing", kind, existing))
    pre_filter, filtered = _run(_plugin(), pod, info)
    if wanted is None:
        assert pre_filter == SKIPPED
        return
    assert pre_filter == Status(Code.SUCCESS)
    assert filtered == (expected or Status(Code.SUCCESS))


def test_volume_without_restriction_skips() -> None:
    pod = make_pod("p").volume("scratch", emptyDir={}).pod()
    assert _run(_plugin(), pod, node_info(make_node("n1"))) == (SKIPPED, None)


def test_disk_conflict_is_only_with_pods_on_the_node() -> None:
    pod = _disk_pod("p", "gcePersistentDisk", GCE_FOO)
    elsewhere = node_info(make_node("n2"), _disk_pod("other", "gcePersistentDisk", GCE_FOO))
    plugin = _plugin(node_infos=(elsewhere,))
    assert _run(plugin, pod, node_info(make_node("n1")))[1] == Status(Code.SUCCESS)
    assert _run(plugin, pod, elsewhere)[1] == DISK_CONFLICT


RWOP_1 = make_claim("claim-with-rwop-1").access_modes("ReadWriteOncePod").claim()
RWOP_2 = make_claim("claim-with-rwop-2").access_modes("ReadWriteOncePod").claim()
RWX = make_claim("claim-with-rwx").access_modes("ReadWriteMany").claim()


def _claim_pod(name: str, *claims: str, namespace: str = "default") -> Pod:
    builder = make_pod(name, namespace)
    for claim in claims:
        builder.claim(claim)
    return builder.pod()


WITH_ONE = _claim_pod("pod-with-one-pvc", "claim-with-rwop-1")
WITH_TWO = _claim_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
ONE_CONFLICT = _claim_pod("pod-with-one-conflict", "claim-with-rwop-1")
TWO_CONFLICTS = _claim_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2")
WITH_RWX = _claim_pod("pod-with-rwx", "claim-with-rwx")


@pytest.mark.parametrize(
    ("pod", "existing", "claims", "expected_pre_filter", "expected_filter"),
    [
        pytest.param(make_pod("p").pod(), [], [], SKIPPED, None, id="nothing"),
        pytest.param(
            WITH_ONE,
            [],
            [],
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                'persistentvolumeclaim "claim-with-rwop-1" not found',
            ),
            None,
            id="failed-to-get-pvc",
        ),
        pytest.param(
            WITH_ONE, [WITH_RWX], [RWOP_1, RWX], SKIPPED, None, id="no-access-mode-conflict"
        ),
        pytest.param(
            ONE_CONFLICT,
            [WITH_ONE, WITH_RWX],
            [RWOP_1, RWX],
            Status(Code.SUCCESS),
            RWOP_CONFLICT,
            id="access-mode-conflict-unschedulable",
        ),
        pytest.param(
            TWO_CONFLICTS,
            [WITH_TWO, WITH_RWX],
            [RWOP_1, RWOP_2, RWX],
            Status(Code.SUCCESS),
            RWOP_CONFLICT,
            id="two-conflicts-unschedulable",
        ),
        pytest.param(
            _claim_pod("p", "claim-with-rwx"),
            [WITH_RWX],
            [RWX],
            SKIPPED,
            None,
            id="shared-read-write-many-claim",
        ),
        pytest.param(
            _claim_pod("p", "claim-with-rwop-1", namespace="other"),
            [WITH_ONE],
            [
                RWOP_1,
                make_claim("claim-with-rwop-1", "other").access_modes("ReadWriteOncePod").claim(),
            ],
            SKIPPED,
            None,
            id="same-claim-name-in-another-namespace",
        ),
        pytest.param(
            make_pod("p").ephemeral("scratch").pod(),
            [],
            [],
            SKIPPED,
            None,
            id="ephemeral-claims-are-not-looked-up",
        ),
    ],
)
def test_read_write_once_pod_conflicts(
    pod: Pod,
    existing: list[Pod],
    claims: list[PersistentVolumeClaim],
    expected_pre_filter: str | Status,
    expected_filter: Status | None,
) -> None:
    info = node_info(make_node("node-1"), *existing)
    plugin = _plugin(tuple(claims), (info,))
    assert _run(plugin, pod, info) == (expected_pre_filter, expected_filter)


def test_read_write_once_pod_conflict_rejects_every_node() -> None:
    holder_node = node_info(make_node("node-1"), WITH_ONE)
    empty_node = node_info(make_node("node-2"))
    plugin = _plugin((RWOP_1,), (holder_node, empty_node))
    state = CycleState()
    plugin.pre_filter(state, ONE_CONFLICT, [holder_node, empty_node])
    assert plugin.filter(state, ONE_CONFLICT, empty_node) == RWOP_CONFLICT
    assert plugin.filter(state, ONE_CONFLICT, holder_node) == RWOP_CONFLICT


def test_disk_conflict_is_reported_before_read_write_once_pod() -> None:
    pod = make_pod("p").claim("claim-with-rwop-1").volume("disk", gcePersistentDisk=GCE_FOO).pod()
    holder = make_pod("holder").claim("claim-with-rwop-1").pod()
    disk_user = _disk_pod("disk-user", "gcePersistentDisk", GCE_FOO)
    info = node_info(make_node("node-1"), holder, disk_user)
    assert _run(_plugin((RWOP_1,), (info,)), pod, info)[1] == DISK_CONFLICT


def test_remove_and_add_pod_change_the_read_write_once_pod_outcome() -> None:
    """Preemption's dry run removes the holder: the conflict goes away on its node, and comes
    back when the holder (or a nominated pod using the claim) is added."""
    holder = WITH_ONE
    bystander = WITH_RWX
    info = node_info(make_node("node-1"), holder, bystander)
    plugin = _plugin((RWOP_1, RWX), (info,))
    state = CycleState()
    plugin.pre_filter(state, ONE_CONFLICT, [info])
    assert plugin.filter(state, ONE_CONFLICT, info) == RWOP_CONFLICT

    dry_run = state.clone()
    assert plugin.remove_pod(dry_run, ONE_CONFLICT, bystander, info).is_success()
    assert plugin.filter(dry_run, ONE_CONFLICT, info) == RWOP_CONFLICT
    assert plugin.remove_pod(dry_run, ONE_CONFLICT, holder, info).is_success()
    assert plugin.filter(dry_run, ONE_CONFLICT, info).is_success()
    assert plugin.filter(state, ONE_CONFLICT, info) == RWOP_CONFLICT, "the clone is independent"

    assert plugin.add_pod(dry_run, ONE_CONFLICT, holder, info).is_success()
    assert plugin.filter(dry_run, ONE_CONFLICT, info) == RWOP_CONFLICT


@pytest.fixture
def preemption_envs() -> Iterator[None]:
    """Closes the background preemption work a test leaves unawaited."""
    yield
    close_envs()


@pytest.mark.usefixtures("preemption_envs")
async def test_preemption_evicts_the_holder_on_its_node() -> None:
    """A higher-priority pod wanting a ReadWriteOncePod claim held elsewhere preempts exactly the
    holder and is nominated to the holder's node, though another node is empty."""
    holder = make_pod("holder").priority(0).claim("claim-with-rwop-1").pod()
    bystander = make_pod("bystander").priority(0).pod()
    preemptor = make_pod("preemptor").priority(1000).claim("claim-with-rwop-1").pod()
    infos = [
        node_info(make_node("node-1"), holder, bystander),
        node_info(make_node("node-2")),
        node_info(make_node("node-3"), make_pod("low").priority(0).pod()),
    ]
    plugin = _plugin((RWOP_1,), tuple(infos))
    env = make_env(infos, pods=[preemptor], pre_filters=[plugin], filters=[plugin])

    statuses = env.filter_statuses(env.new_state(preemptor), preemptor)
    assert {name: statuses.get(name) for name in ("node-1", "node-2", "node-3")} == dict.fromkeys(
        ("node-1", "node-2", "node-3"), RWOP_CONFLICT
    )
    result, status, state = env.post_filter(preemptor, statuses)
    assert status.is_success()
    assert result == PostFilterResult(NominatingInfo.override("node-1"))
    assert state.read(PREEMPTION_RECORD).victims == ("default/holder",)
    await env.run_spawned()
    assert env.deleter.deleted == ["default/holder"]


@pytest.mark.usefixtures("preemption_envs")
def test_equal_priority_pod_cannot_preempt_the_holder() -> None:
    holder = make_pod("holder").priority(0).claim("claim-with-rwop-1").pod()
    waiting = make_pod("waiting").priority(0).claim("claim-with-rwop-1").pod()
    infos = [node_info(make_node("node-1"), holder), node_info(make_node("node-2"))]
    plugin = _plugin((RWOP_1,), tuple(infos))
    env = make_env(infos, pods=[waiting], pre_filters=[plugin], filters=[plugin])
    result, status, _ = env.post_filter(waiting)
    assert result == PostFilterResult(NominatingInfo.override(""))
    assert status == Status(
        Code.UNSCHEDULABLE,
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    )
    assert env.spawned == []


def test_each_claim_volume_of_the_other_pod_counts() -> None:
    holder = WITH_TWO
    info = node_info(make_node("node-1"), holder)
    plugin = _plugin((RWOP_1, RWOP_2), (info,))
    state = CycleState()
    plugin.pre_filter(state, TWO_CONFLICTS, [info])
    plugin.remove_pod(state, TWO_CONFLICTS, _claim_pod("x", "claim-with-rwop-1"), info)
    assert plugin.filter(state, TWO_CONFLICTS, info) == RWOP_CONFLICT
    plugin.remove_pod(state, TWO_CONFLICTS, _claim_pod("y", "claim-with-rwop-2"), info)
    assert plugin.filter(state, TWO_CONFLICTS, info).is_success()


def test_extensions_and_filter_need_the_pre_filter_state() -> None:
    plugin = _plugin()
    pod = _disk_pod("p", "gcePersistentDisk", GCE_FOO)
    info = node_info(make_node("node-1"))
    expected = 'cannot read "PreFilterVolumeRestrictions" from cycleState'
    for status in (
        plugin.filter(CycleState(), pod, info),
        plugin.add_pod(CycleState(), pod, WITH_ONE, info),
        plugin.remove_pod(CycleState(), pod, WITH_ONE, info),
    ):
        assert status.code == Code.ERROR
        assert status.message() == expected


def _hint(resource: EventResource) -> HintFn:
    for registration in _plugin().events_to_register():
        if registration.event.resource is resource:
            assert registration.hint is not None
            return registration.hint
    raise AssertionError(f"no {resource} event")


GCE_POD = _disk_pod("p", "gcePersistentDisk", GCE_FOO)
AWS_POD = _disk_pod("p", "awsElasticBlockStore", AWS_FOO)
RBD_POD = _disk_pod("p", "rbd", RBD_AB)
ISCSI_POD = _disk_pod("p", "iscsi", ISCSI_2016)


@pytest.mark.parametrize(
    ("pod", "deleted", "expected"),
    [
        pytest.param(GCE_POD, GCE_POD, QueueingHint.QUEUE, id="gce-disk-conflict"),
        pytest.param(
            GCE_POD,
            _disk_pod("d", "gcePersistentDisk", GCE_BAR),
            QueueingHint.QUEUE_SKIP,
            id="gce-disk-no-conflict",
        ),
        pytest.param(AWS_POD, AWS_POD, QueueingHint.QUEUE, id="aws-disk-conflict"),
        pytest.param(
            AWS_POD,
            _disk_pod("d", "awsElasticBlockStore", AWS_BAR),
            QueueingHint.QUEUE_SKIP,
            id="aws-disk-no-conflict",
        ),
        pytest.param(RBD_POD, RBD_POD, QueueingHint.QUEUE, id="rbd-disk-conflict"),
        pytest.param(
            RBD_POD, _disk_pod("d", "rbd", RBD_CD), QueueingHint.QUEUE_SKIP, id="rbd-no-conflict"
        ),
        pytest.param(ISCSI_POD, ISCSI_POD, QueueingHint.QUEUE, id="iscsi-disk-conflict"),
        pytest.param(
            ISCSI_POD,
            _disk_pod("d", "iscsi", ISCSI_2017),
            QueueingHint.QUEUE_SKIP,
            id="iscsi-no-conflict",
        ),
        pytest.param(
            _claim_pod("pod1", "claim-rwop"),
            _claim_pod("pod2", "claim-rwop"),
            QueueingHint.QUEUE,
            id="has-same-claim",
        ),
        pytest.param(
            _claim_pod("pod1", "claim-1-rwop"),
            _claim_pod("pod2", "claim-2-rwop"),
            QueueingHint.QUEUE_SKIP,
            id="no-same-claim",
        ),
        pytest.param(
            _claim_pod("pod1", "claim-rwop"),
            _claim_pod("pod2", "claim-rwop", namespace="other"),
            QueueingHint.QUEUE_SKIP,
            id="same-claim-name-other-namespace",
        ),
        pytest.param(GCE_POD, "not-a-pod", QueueingHint.QUEUE, id="wrong-old-object"),
    ],
)
def test_is_schedulable_after_pod_deleted(pod: Pod, deleted: Any, expected: QueueingHint) -> None:
    assert _hint(EventResource.POD)(pod, deleted, None) is expected


WITH_RWX_1 = _claim_pod("pod-with-one-pvc", "claim-with-rwx-1")
WITH_RWX_1_AND_2 = _claim_pod("pod-with-two-pvcs", "claim-with-rwx-1", "claim-with-rwx-2")
RWX_1 = make_claim("claim-with-rwx-1").access_modes("ReadWriteMany").claim()
RWX_2 = make_claim("claim-with-rwx-2").access_modes("ReadWriteMany").claim()


@pytest.mark.parametrize(
    ("pod", "added", "expected"),
    [
        pytest.param(WITH_RWX_1_AND_2, RWX_1, QueueingHint.QUEUE, id="claim-of-the-pod"),
        pytest.param(WITH_RWX_1, RWX_2, QueueingHint.QUEUE_SKIP, id="claim-not-of-the-pod"),
        pytest.param(
            _claim_pod("pod-with-one-pvc", "claim-with-rwx-1", namespace="kube-system"),
            RWX_1,
            QueueingHint.QUEUE_SKIP,
            id="namespace-not-equal-pod",
        ),
        pytest.param(
            make_pod("p").ephemeral("claim-with-rwx-1").pod(),
            make_claim("p-claim-with-rwx-1").claim(),
            QueueingHint.QUEUE_SKIP,
            id="ephemeral-claim-not-counted",
        ),
        pytest.param(WITH_RWX_1, "not-a-claim", QueueingHint.QUEUE, id="wrong-new-object"),
    ],
)
def test_is_schedulable_after_claim_added(pod: Pod, added: Any, expected: QueueingHint) -> None:
    assert _hint(EventResource.PERSISTENT_VOLUME_CLAIM)(pod, None, added) is expected


def test_events_to_register() -> None:
    events = {r.event.resource: (r.event.action, r.hint) for r in _plugin().events_to_register()}
    assert set(events) == {
        EventResource.POD,
        EventResource.NODE,
        EventResource.PERSISTENT_VOLUME_CLAIM,
    }
    assert events[EventResource.POD][0] == ActionType.DELETE
    assert events[EventResource.NODE] == (ActionType.ADD, None)
    assert events[EventResource.PERSISTENT_VOLUME_CLAIM][0] == ActionType.ADD


def test_new_rejects_args() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        volume_restrictions.new({"foo": 1}, Handle())
