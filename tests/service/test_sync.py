"""Initial listing and periodic resync: what the synchronizer feeds in, and in which order."""

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import EventHandler, EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS
from kopf_scheduler.service.sync import ALWAYS_WATCHED, Synchronizer
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod
from tests.storage_builders import (
    make_attachment,
    make_capacity,
    make_claim,
    make_class,
    make_csi_driver,
    make_csi_node,
    make_volume,
)


class FakeLister:
    def __init__(self) -> None:
        self.items: dict[str, list[dict]] = {}

    async def list_items(self, path: str) -> list[dict]:
        return [dict(i) for i in self.items.get(path, [])]


async def test_initial_list_then_resync_feeds_deletions() -> None:
    sim = Simulation(default_config())
    scheduler = sim.start()
    store = Store()
    handlers = EventHandlers(scheduler, store)
    lister = FakeLister()
    node = make_node("n1").obj()
    running = make_pod("running").req(cpu="1").node("n1").obj()
    pending = make_pod("pending").scheduler("kopf-scheduler").obj()
    for raw, version in ((node, "1"), (running, "2"), (pending, "3")):
        raw["metadata"]["resourceVersion"] = version
    lister.items = {"/api/v1/nodes": [node], "/api/v1/pods": [running, pending]}
    sync = Synchronizer(lister, handlers)
    assert not sync.synced
    await sync.list_all()
    assert sync.synced
    assert scheduler.cache.node_count() == 1
    assert scheduler.cache.get_node_info("n1").requested.milli_cpu == 1000
    assert [p.key for p in scheduler.queue.pending_pods()] == ["default/pending"]

    lister.items["/api/v1/pods"] = [pending]  # the running pod's deletion was missed by the watch
    await sync.list_all()
    assert "default/running" not in store.pods
    assert scheduler.cache.get_node_info("n1").requested.milli_cpu == 0


async def test_a_node_delivered_again_with_the_same_version_changes_nothing() -> None:
    sim = Simulation(default_config())
    scheduler = sim.start()
    handlers = EventHandlers(scheduler, Store())
    node = make_node("n1").capacity(cpu="2").obj()
    node["metadata"]["resourceVersion"] = "7"
    handlers.route("Node")("ADDED", node)
    first = scheduler.cache.get_node_info("n1").node
    handlers.route("Node")(
        "ADDED", make_node("n1").capacity(cpu="2").obj() | {"metadata": node["metadata"]}
    )
    assert scheduler.cache.get_node_info("n1").node is first  # a relist: same object, skipped

    changed = make_node("n1").capacity(cpu="4").obj()
    changed["metadata"]["resourceVersion"] = "8"
    handlers.route("Node")("MODIFIED", changed)
    assert scheduler.cache.get_node_info("n1").node is not first
    assert scheduler.cache.get_node_info("n1").node.resource_version == "8"


async def test_storage_is_delivered_before_pods_so_a_pods_claims_are_known() -> None:
    sim = Simulation(default_config())
    scheduler = sim.start()
    store = Store()
    handlers = EventHandlers(scheduler, store)
    lister = FakeLister()
    claims_seen: list[list[str]] = []

    def route(kind: str) -> EventHandler:
        handle = handlers.route(kind)
        if kind != "Pod":
            return handle

        def remember_claims(event_type: str, raw: Mapping[str, Any]) -> None:
            claims_seen.append([claim.key for claim in store.storage.claims.values()])
            handle(event_type, raw)

        return remember_claims

    storage_paths = {
        "/apis/storage.k8s.io/v1/storageclasses": make_class("fast").obj(),
        "/apis/storage.k8s.io/v1/csidrivers": dict(make_csi_driver("ebs.csi.aws.com").raw),
        "/apis/storage.k8s.io/v1/csinodes": dict(make_csi_node("n1").raw),
        "/apis/storage.k8s.io/v1/csistoragecapacities": dict(
            make_capacity("cap-1", "fast", "10Gi").raw
        ),
        "/api/v1/persistentvolumes": make_volume("pv-1").obj(),
        "/api/v1/persistentvolumeclaims": make_claim("data").obj(),
        "/apis/storage.k8s.io/v1/volumeattachments": dict(
            make_attachment("va-1", "ebs.csi.aws.com", "n1", "pv-1").raw
        ),
    }
    lister.items = {path: [raw] for path, raw in storage_paths.items()}
    lister.items["/api/v1/pods"] = [make_pod("web").claim("data").scheduler("kopf-scheduler").obj()]
    await Synchronizer(lister, handlers, route=route).list_all()

    assert set(storage_paths) <= {watched.path for watched in WATCHED_KINDS}
    assert claims_seen == [["default/data"]]
    storage = store.storage
    assert list(storage.classes) == ["fast"]
    assert list(storage.csi_drivers) == ["ebs.csi.aws.com"]
    assert list(storage.csi_nodes) == ["n1"]
    assert list(storage.capacities) == ["kube-system/cap-1"]
    assert [pv.key for pv in storage.volumes.values()] == ["pv-1"]
    assert list(storage.attachments) == ["va-1"]


async def test_a_resync_deletes_storage_objects_the_api_no_longer_has() -> None:
    sim = Simulation(default_config())
    handlers = EventHandlers(sim.start(), Store())
    lister = FakeLister()
    lister.items = {
        "/api/v1/persistentvolumeclaims": [make_claim("data").obj(), make_claim("logs").obj()]
    }
    sync = Synchronizer(lister, handlers)
    await sync.list_all()

    lister.items["/api/v1/persistentvolumeclaims"] = [make_claim("logs").obj()]
    await sync.list_all()

    assert [c.key for c in handlers.store.storage.claims.values()] == ["default/logs"]


async def test_a_resync_reports_only_storage_deletions_the_watch_missed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = Simulation(default_config())
    handlers = EventHandlers(sim.start(), Store())
    lister = FakeLister()
    data, logs = make_claim("data").obj(), make_claim("logs").obj()
    lister.items = {"/api/v1/persistentvolumeclaims": [data, logs]}
    sync = Synchronizer(lister, handlers)
    await sync.list_all()
    handlers.route("PersistentVolumeClaim")("DELETED", logs)  # seen by the watch

    lister.items["/api/v1/persistentvolumeclaims"] = []
    with caplog.at_level(logging.INFO, logger="kopf_scheduler.sync"):
        await sync.list_all()

    reported = [
        record.msg["name"]
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg.get("event") == "resync_deleted"
    ]
    assert reported == ["default/data"]
    assert len(handlers.store.storage.claims) == 0


class AllAtOnceLister(FakeLister):
    """Answers no listing until every one of ``expected`` has been asked for."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.asked: list[str] = []
        self._expected = expected
        self._all_asked = asyncio.Event()

    async def list_items(self, path: str) -> list[dict]:
        self.asked.append(path)
        if len(self.asked) == self._expected:
            self._all_asked.set()
        await asyncio.wait_for(self._all_asked.wait(), 5)
        return await super().list_items(path)


async def test_every_collection_is_asked_for_at_once_and_delivered_in_the_tables_order() -> None:
    sim = Simulation(default_config())
    store = Store()
    handlers = EventHandlers(sim.start(), store)
    lister = AllAtOnceLister(len(ALWAYS_WATCHED))
    lister.items = {
        "/apis/scheduling.k8s.io/v1/priorityclasses": [
            {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
        ],
        "/api/v1/pods": [make_pod("web").scheduler("kopf-scheduler").priority_class("high").obj()],
    }
    delivered: list[str] = []

    def route(kind: str) -> EventHandler:
        handle = handlers.route(kind)

        def remember_kind(event_type: str, raw: Mapping[str, Any]) -> None:
            delivered.append(kind)
            handle(event_type, raw)

        return remember_kind

    await Synchronizer(lister, handlers, route=route).list_all()

    assert sorted(lister.asked) == sorted(watched.path for watched in ALWAYS_WATCHED)
    assert delivered == ["PriorityClass", "Pod"]
    assert store.get_pod("default/web") is not None
