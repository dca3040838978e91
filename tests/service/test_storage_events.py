"""Storage watch events: what lands in the storage cache and which cluster event moves pods.

Every kind's add, update and delete must reach the cache the volume plugins read and raise the
kind's event with the right old and new views, as upstream's informer handlers do; claims and
volumes go through the assume cache, so a stale event never undoes volume binding's assumption.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    object_event,
)
from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED, EventHandlers
from kopf_scheduler.informer.storage_events import StorageEvents
from kopf_scheduler.informer.store import Store
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from kopf_scheduler.scheduler.loop import Scheduler
from tests.builders import make_pod
from tests.queue.fakes import EventsPlugin, make_queue, registration
from tests.storage_builders import (
    make_attachment,
    make_capacity,
    make_claim,
    make_class,
    make_csi_driver,
    make_csi_node,
    make_volume,
)

Raw = dict[str, Any]


@dataclass
class RecordingQueue:
    moves: list[tuple[ClusterEvent, Any, Any]] = field(default_factory=list)

    def move_all_to_active_or_backoff_queue(
        self, event: ClusterEvent, old: Any = None, new: Any = None, pre_check: Any = None
    ) -> None:
        self.moves.append((event, old, new))


@dataclass
class SchedulerWithQueue:
    """What the storage handlers use of the scheduler: the cluster events, offered to ``queue``
    as :meth:`Scheduler.on_cluster_event` offers them to its own."""

    queue: Any

    def on_cluster_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        self.queue.move_all_to_active_or_backoff_queue(event, old, new)


def handlers_with(queue: Any) -> tuple[EventHandlers, Store]:
    store = Store()
    return EventHandlers(cast(Scheduler, SchedulerWithQueue(queue)), store), store


@dataclass(frozen=True)
class Kind:
    name: str
    resource: EventResource
    raw: Callable[[], Raw]
    key: str
    lookup: Callable[[StorageCache, str], Any]


KINDS = [
    pytest.param(
        Kind(
            "PersistentVolumeClaim",
            EventResource.PERSISTENT_VOLUME_CLAIM,
            lambda: make_claim("data", "team").storage_class("fast").obj(),
            "team/data",
            lambda storage, key: storage.claims.get(key),
        ),
        id="claim",
    ),
    pytest.param(
        Kind(
            "PersistentVolume",
            EventResource.PERSISTENT_VOLUME,
            lambda: make_volume("pv-1").storage_class("fast").obj(),
            "pv-1",
            lambda storage, key: storage.volumes.get(key),
        ),
        id="volume",
    ),
    pytest.param(
        Kind(
            "StorageClass",
            EventResource.STORAGE_CLASS,
            lambda: make_class("fast").wait_for_first_consumer().obj(),
            "fast",
            lambda storage, key: storage.classes.get(key),
        ),
        id="class",
    ),
    pytest.param(
        Kind(
            "CSINode",
            EventResource.CSI_NODE,
            lambda: dict(make_csi_node("n1", {"ebs.csi.aws.com": 2}).raw),
            "n1",
            lambda storage, key: storage.csi_nodes.get(key),
        ),
        id="csi-node",
    ),
    pytest.param(
        Kind(
            "CSIDriver",
            EventResource.CSI_DRIVER,
            lambda: dict(make_csi_driver("ebs.csi.aws.com", storage_capacity=True).raw),
            "ebs.csi.aws.com",
            lambda storage, key: storage.csi_drivers.get(key),
        ),
        id="csi-driver",
    ),
    pytest.param(
        Kind(
            "CSIStorageCapacity",
            EventResource.CSI_STORAGE_CAPACITY,
            lambda: dict(make_capacity("cap-1", "fast", "10Gi", {"zone": "a"}).raw),
            "kube-system/cap-1",
            lambda storage, key: storage.capacities.get(key),
        ),
        id="capacity",
    ),
    pytest.param(
        Kind(
            "VolumeAttachment",
            EventResource.VOLUME_ATTACHMENT,
            lambda: dict(make_attachment("va-1", "ebs.csi.aws.com", "n1", "pv-1").raw),
            "va-1",
            lambda storage, key: storage.attachments.get(key),
        ),
        id="attachment",
    ),
]


def at_version(raw: Raw, version: str, **labels: str) -> Raw:
    """A copy of ``raw`` at ``resourceVersion`` ``version``, optionally with more labels."""
    changed = copy.deepcopy(raw)
    changed["metadata"]["resourceVersion"] = version
    if labels:
        changed["metadata"].setdefault("labels", {}).update(labels)
    return changed


@pytest.mark.parametrize("kind", KINDS)
def test_add_update_delete_reach_the_cache_and_raise_the_kinds_events(kind: Kind) -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    first = at_version(kind.raw(), "10")
    second = at_version(first, "11", changed="yes")

    handlers.route(kind.name)(ADDED, first)
    added = kind.lookup(store.storage, kind.key)
    handlers.route(kind.name)(MODIFIED, second)
    updated = kind.lookup(store.storage, kind.key)
    handlers.route(kind.name)(DELETED, second)

    assert added is not None and added.resource_version == "10"
    assert updated is not None and updated.resource_version == "11"
    assert updated.labels == {"changed": "yes"}
    assert kind.lookup(store.storage, kind.key) is None
    assert [event for event, _, _ in queue.moves] == [
        object_event(kind.resource, ActionType.ADD),
        object_event(kind.resource, ActionType.UPDATE_GENERIC),
        object_event(kind.resource, ActionType.DELETE),
    ]
    (_, add_old, add_new), (_, update_old, update_new), (_, delete_old, delete_new) = queue.moves
    assert (add_old, add_new) == (None, added)
    assert (update_old, update_new) == (added, updated)
    assert delete_new is None
    assert type(delete_old) is type(updated)
    assert (delete_old.key, delete_old.resource_version) == (kind.key, "11")


@dataclass
class RecordingListener:
    heard: list[tuple[str, str]] = field(default_factory=list)

    def storage_changed(self, kind: str, key: str) -> None:
        self.heard.append((kind, key))


@pytest.mark.parametrize("kind", KINDS)
def test_the_storage_listeners_hear_every_change_of_every_kind(kind: Kind) -> None:
    handlers, store = handlers_with(RecordingQueue())
    listener = RecordingListener()
    store.storage.subscribe(listener)
    first = at_version(kind.raw(), "10")

    handlers.route(kind.name)(ADDED, first)
    handlers.route(kind.name)(ADDED, first)
    handlers.route(kind.name)(MODIFIED, at_version(first, "11"))
    handlers.route(kind.name)(DELETED, first)
    handlers.route(kind.name)(DELETED, first)

    assert listener.heard == [(kind.name, kind.key)] * 3


@pytest.mark.parametrize(
    ("kind", "raw", "label"),
    [
        pytest.param(
            "PersistentVolumeClaim",
            make_claim("data").obj(),
            "PersistentVolumeClaimAdd",
            id="claim",
        ),
        pytest.param("StorageClass", make_class("fast").obj(), "StorageClassAdd", id="class"),
    ],
)
def test_event_labels_name_kind_and_action_as_upstream(kind: str, raw: Raw, label: str) -> None:
    queue = RecordingQueue()
    handlers, _ = handlers_with(queue)

    handlers.route(kind)(ADDED, raw)

    assert [event.name for event, _, _ in queue.moves] == [label]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "version", [pytest.param("10", id="same-version"), pytest.param("9", id="older-version")]
)
def test_a_relisted_or_stale_object_changes_nothing(kind: Kind, version: str) -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    handlers.route(kind.name)(ADDED, at_version(kind.raw(), "10"))
    known = kind.lookup(store.storage, kind.key)

    handlers.route(kind.name)(ADDED, at_version(kind.raw(), version, changed="yes"))

    assert kind.lookup(store.storage, kind.key) is known
    assert len(queue.moves) == 1  # only the first add


@pytest.mark.parametrize("kind", KINDS)
def test_deleting_an_object_never_known_raises_nothing(kind: Kind) -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)

    handlers.route(kind.name)(DELETED, kind.raw())

    assert kind.lookup(store.storage, kind.key) is None
    assert queue.moves == []


def test_a_delete_whose_final_state_is_malformed_reports_the_last_good_view() -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    raw = make_claim("data").obj()
    handlers.route("PersistentVolumeClaim")(ADDED, raw)
    known = store.storage.claims.get("default/data")
    broken = copy.deepcopy(raw)
    broken["spec"]["accessModes"] = "ReadWriteOnce"

    handlers.route("PersistentVolumeClaim")(DELETED, broken)

    assert store.storage.claims.get("default/data") is None
    event, old, new = queue.moves[-1]
    assert event == object_event(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.DELETE)
    assert (old, new) == (known, None)


# --- the assume cache ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AssumedKind:
    name: str
    raw: Callable[[str], Raw]
    view: Callable[[Raw], Any]
    cache: Callable[[StorageCache], Any]
    key: str


ASSUMED_KINDS = [
    pytest.param(
        AssumedKind(
            "PersistentVolumeClaim",
            lambda version: make_claim("data").version(version).obj(),
            PersistentVolumeClaim,
            lambda storage: storage.claims,
            "default/data",
        ),
        id="claim",
    ),
    pytest.param(
        AssumedKind(
            "PersistentVolume",
            lambda version: make_volume("pv-1").version(version).obj(),
            PersistentVolume,
            lambda storage: storage.volumes,
            "pv-1",
        ),
        id="volume",
    ),
]


def assumed_copy(kind: AssumedKind, version: str) -> Any:
    """What volume binding assumes: a changed copy of the object at ``version``."""
    return kind.view(at_version(kind.raw(version), version, assumed="yes"))


@pytest.mark.parametrize("kind", ASSUMED_KINDS)
@pytest.mark.parametrize(
    ("assumed_at", "delivered", "assumption_stands"),
    [
        pytest.param("5", "5", True, id="relist-of-the-version-assumed-on"),
        pytest.param("7", "6", True, id="api-older-than-the-assumption"),
        pytest.param("7", "7", True, id="api-equal-to-the-assumption"),
        pytest.param("5", "6", False, id="api-caught-up"),
    ],
)
def test_a_watch_event_replaces_an_assumption_only_when_newer(
    kind: AssumedKind, assumed_at: str, delivered: str, assumption_stands: bool
) -> None:
    handlers, store = handlers_with(RecordingQueue())
    cache = kind.cache(store.storage)
    handlers.route(kind.name)(ADDED, kind.raw("5"))
    assumption = assumed_copy(kind, assumed_at)
    cache.assume(assumption)

    handlers.route(kind.name)(MODIFIED, kind.raw(delivered))

    if assumption_stands:
        assert cache.get(kind.key) is assumption
    else:
        assert cache.get(kind.key) is not assumption
        assert cache.get(kind.key).resource_version == delivered
        assert not cache.is_assumed(kind.key)


@pytest.mark.parametrize("kind", ASSUMED_KINDS)
def test_a_newer_version_under_an_assumption_is_still_an_update_event(kind: AssumedKind) -> None:
    # The informer side of upstream sees every API change, whatever volume binding assumed.
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    handlers.route(kind.name)(ADDED, kind.raw("5"))
    api_object = kind.cache(store.storage).get(kind.key)
    kind.cache(store.storage).assume(assumed_copy(kind, "7"))

    handlers.route(kind.name)(MODIFIED, kind.raw("6"))

    event, old, new = queue.moves[-1]
    assert event.action == ActionType.UPDATE_GENERIC
    assert old is api_object
    assert new.resource_version == "6"


# --- malformed objects --------------------------------------------------------------------------


def test_a_malformed_object_is_logged_once_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    handlers.route("PersistentVolume")(ADDED, make_volume("pv-1").version("5").obj())
    broken = make_volume("pv-1").version("6").obj()
    broken["spec"]["accessModes"] = "ReadWriteOnce"

    with caplog.at_level(logging.WARNING):
        handlers.route("PersistentVolume")(MODIFIED, broken)

    assert store.storage.volumes.get("pv-1") is None
    assert len(queue.moves) == 1  # the add; the malformed update moves nothing
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    entry = cast(dict[str, Any], record.msg)
    assert entry["event"] == "malformed_storage_object_ignored"
    assert (entry["kind"], entry["key"]) == ("PersistentVolume", "pv-1")
    assert entry["field"] == "spec.accessModes"


def test_a_fixed_object_after_a_malformed_one_is_an_add() -> None:
    queue = RecordingQueue()
    handlers, store = handlers_with(queue)
    broken = make_class("fast").obj()
    broken["allowedTopologies"] = "zone-a"

    handlers.route("StorageClass")(ADDED, broken)
    handlers.route("StorageClass")(MODIFIED, at_version(make_class("fast").obj(), "999"))

    assert store.storage.classes["fast"].resource_version == "999"
    assert [event.action for event, _, _ in queue.moves] == [ActionType.ADD]


def test_an_unknown_kind_is_a_programming_error() -> None:
    scheduler = cast(Scheduler, SchedulerWithQueue(RecordingQueue()))

    with pytest.raises(ValueError, match="Secret"):
        StorageEvents(scheduler, StorageCache(), "Secret")


# --- through a real queue -----------------------------------------------------------------------


def claim_of_pod(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Requeue only when the claim is one the pod uses (as VolumeBinding's hint does)."""
    claim = cast(PersistentVolumeClaim, new)
    return QueueingHint.QUEUE if claim.key in pod.claim_keys else QueueingHint.QUEUE_SKIP


def test_creating_the_missing_claim_moves_only_the_pod_that_uses_it() -> None:
    plugin = EventsPlugin(
        "VolumeBinding",
        [
            registration(
                object_event(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                claim_of_pod,
            )
        ],
    )
    harness = make_queue([plugin])
    waiting = make_pod("waiting").claim("data").pod()
    other = make_pod("other").claim("logs").pod()
    for pod in (waiting, other):
        harness.queue.add(pod)
        harness.fail(harness.pop(pod), "VolumeBinding")
    handlers, _ = handlers_with(harness.queue)

    handlers.route("StorageClass")(ADDED, make_class("fast").obj())
    assert harness.where(waiting) == harness.where(other) == "unschedulable"

    handlers.route("PersistentVolumeClaim")(ADDED, make_claim("data").obj())
    assert harness.where(waiting) in ("active", "backoff")
    assert harness.where(other) == "unschedulable"
