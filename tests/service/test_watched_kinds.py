"""The one table of watched kinds: every kind has a handler, a path, and exactly one watcher."""

from __future__ import annotations

from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import (
    WATCHED_KINDS,
    Watcher,
    watched_by,
    watched_kind,
)
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node


def test_paths_are_the_cluster_wide_collections() -> None:
    assert watched_kind("Pod").path == "/api/v1/pods"
    assert watched_kind("ReplicaSet").path == "/apis/apps/v1/replicasets"
    assert watched_kind("PodDisruptionBudget").api_version == "policy/v1"
    assert len({k.kind for k in WATCHED_KINDS}) == len(WATCHED_KINDS)


def test_nodes_and_storage_are_listed_before_pods() -> None:
    order = [k.kind for k in WATCHED_KINDS]
    assert order[-1] == "Pod"
    assert order.index("Node") < order.index("PersistentVolumeClaim") < order.index("Pod")


def test_every_kind_routes_to_the_handler_that_keeps_its_store() -> None:
    handlers = EventHandlers(Simulation(default_config()).start(), Store())
    for watched in WATCHED_KINDS:
        assert callable(handlers.route(watched.kind)), watched.kind

    handlers.route("Node")("ADDED", make_node("n1").obj())

    assert handlers.get_node("n1") is not None


async def test_the_operator_reflects_the_reflector_kinds_and_resyncs_the_rest() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)

        reflected = {kind: r.path for kind, r in operator.reflectors.items()}
        assert reflected == {"Node": "/api/v1/nodes", "Pod": "/api/v1/pods"}
        # The default profile has DynamicResources: its kinds are listed and watched too.
        assert operator.sync._kinds == watched_by(Watcher.KOPF, {"DynamicResources"})
        assert {"DeviceClass", "ResourceSlice", "ResourceClaim"} <= {
            k.kind for k in operator.sync._kinds
        }
        assert not set(reflected) & {k.kind for k in watched_by(Watcher.KOPF)}
    finally:
        await api.close()
