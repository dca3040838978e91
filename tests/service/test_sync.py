from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.service.sync import Synchronizer
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod


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
    handlers.on_node("ADDED", node)
    first = scheduler.cache.get_node_info("n1").node
    handlers.on_node(
        "ADDED", make_node("n1").capacity(cpu="2").obj() | {"metadata": node["metadata"]}
    )
    assert scheduler.cache.get_node_info("n1").node is first  # a relist: same object, skipped

    changed = make_node("n1").capacity(cpu="4").obj()
    changed["metadata"]["resourceVersion"] = "8"
    handlers.on_node("MODIFIED", changed)
    assert scheduler.cache.get_node_info("n1").node is not first
    assert scheduler.cache.get_node_info("n1").node.resource_version == "8"
