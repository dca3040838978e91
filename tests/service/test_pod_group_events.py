"""PodGroups in the operator: watched only for a profile with Coscheduling, kept in the store
with their pods indexed, changes requeueing their members, a missing CRD named at startup."""

from __future__ import annotations

from typing import Any

import kopf
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED, EventHandler, EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import Watcher, watched_by
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.kopf_watches.watching import register
from kopf_scheduler.ports import ApiError, NotFoundError
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions
from kopf_scheduler.service.sync import Synchronizer
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod
from tests.plugins.coscheduling.support import coscheduling_config, member, pod_group_obj

SCHED = "kopf-scheduler"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"


def ignore_events(kind: str) -> EventHandler:
    return lambda event_type, raw: None


def test_pod_groups_are_watched_only_with_coscheduling() -> None:
    assert "PodGroup" not in {kind.kind for kind in watched_by(Watcher.KOPF)}
    with_plugin = watched_by(Watcher.KOPF, {"Coscheduling"})
    assert [kind.path for kind in with_plugin if kind.kind == "PodGroup"] == [PODGROUPS]


async def test_the_operator_lists_pod_groups_for_a_coscheduling_profile_only() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        with_plugin = build_operator(coscheduling_config(SCHED), RunOptions(), api)
        without = build_operator(default_config(), RunOptions(), api)
        assert PODGROUPS in {kind.path for kind in with_plugin.sync._kinds}
        assert PODGROUPS not in {kind.path for kind in without.sync._kinds}
        assert with_plugin.kopf_kinds == with_plugin.sync._kinds
    finally:
        await api.close()


async def test_kopf_registers_the_kinds_it_is_given() -> None:
    registry = kopf.OperatorRegistry()
    register(registry, ignore_events, watched_by(Watcher.KOPF, {"Coscheduling"}))
    ids = {handler.id for handler in registry._watching.get_all_handlers()}
    assert "forward-podgroups" in ids
    registry = kopf.OperatorRegistry()
    register(registry, ignore_events)
    assert "forward-podgroups" not in {h.id for h in registry._watching.get_all_handlers()}


async def test_store_indexes_pods_by_group_and_follows_label_changes() -> None:
    sim = Simulation(default_config())
    store = Store()
    handlers = EventHandlers(sim.start(), store)
    handlers.route("Pod")(ADDED, member("a", "g").obj())
    handlers.route("Pod")(ADDED, member("b", "g").node("n1").obj())
    handlers.route("Pod")(ADDED, member("c", "g", namespace="other").obj())
    handlers.route("Pod")(ADDED, make_pod("plain").obj())
    groups = store.pod_groups
    assert sorted(pod.name for pod in groups.members("default/g")) == ["a", "b"]
    assert [pod.name for pod in groups.members("other/g")] == ["c"]

    moved = member("a", "h").obj()
    moved["metadata"]["resourceVersion"] = "2"
    handlers.route("Pod")(MODIFIED, moved)
    done = member("b", "g").node("n1").obj()
    done["status"]["phase"] = "Succeeded"
    handlers.route("Pod")(MODIFIED, done)
    assert list(groups.members("default/g")) == []
    assert [pod.name for pod in groups.members("default/h")] == ["a"]
    handlers.route("Pod")(DELETED, moved)
    assert list(groups.members("default/h")) == []


async def test_a_pod_group_event_keeps_the_store_and_requeues_its_members() -> None:
    sim = Simulation(coscheduling_config(SCHED))
    scheduler = sim.start()
    assert sim.handlers is not None
    sim.apply(make_node("n1").obj())
    sim.apply(member("w0", "g").scheduler(SCHED).obj())
    sim.apply(member("x0", "other").scheduler(SCHED).obj())
    await sim.run_until_quiet()
    # No PodGroup yet: both are turned away, unresolvable until their group appears.
    assert sorted(pod.name for pod in scheduler.queue.unschedulable_pods()) == ["w0", "x0"]

    sim.handlers.route("PodGroup")(ADDED, pod_group_obj("g", 2))

    assert sim.store.pod_groups.get("default/g") is not None
    queue = scheduler.queue
    assert [pod.name for pod in queue.unschedulable_pods()] == ["x0"]
    assert [pod.name for pod in queue.active_pods() + queue.backoff_pods()] == ["w0"]
    sim.handlers.route("PodGroup")(DELETED, pod_group_obj("g", 2))
    assert sim.store.pod_groups.get("default/g") is None


async def test_a_malformed_pod_group_is_dropped_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = Simulation(default_config())
    store = Store()
    handlers = EventHandlers(sim.start(), store)
    handlers.route("PodGroup")(ADDED, pod_group_obj("g", 2))
    handlers.route("PodGroup")(MODIFIED, pod_group_obj("g", "two"))  # type: ignore[arg-type]
    assert store.pod_groups.get("default/g") is None


class _NoCrd:
    async def list_items(self, path: str) -> list[dict[str, Any]]:
        if path == PODGROUPS:
            raise NotFoundError("the server could not find the requested resource")
        return []


async def test_a_missing_crd_is_named_when_the_listing_fails() -> None:
    handlers = EventHandlers(Simulation(default_config()).start(), Store())
    sync = Synchronizer(_NoCrd(), handlers, watched_by(Watcher.KOPF, {"Coscheduling"}))
    with pytest.raises(ApiError) as raised:
        await sync.list_all()
    assert raised.value.status == 404
    assert raised.value.message == (
        f"the API server does not serve {PODGROUPS} (the Coscheduling plugin needs it): "
        "install the CRD manifests/crds/scheduling.x-k8s.io_podgroups.yaml"
    )
    assert not sync.synced
    await Synchronizer(_NoCrd(), handlers).list_all()  # without Coscheduling, not listed at all
