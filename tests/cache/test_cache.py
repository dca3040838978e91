import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.cache import Cache, CacheError
from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.model.resources import Resource
from tests.builders import make_node, make_pod
from tests.clock import FakeClock


def _state(cache: Cache) -> dict[str, tuple[dict[str, int], dict[str, int], list[str], int]]:
    return {
        info.name or "<deleted>": (
            info.requested.as_dict(),
            info.non_zero_requested.as_dict(),
            sorted(p.uid for p in info.pods),
            len(info.used_ports),
        )
        for info in cache.node_infos()
    }


def test_assume_then_confirm_keeps_one_copy() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    pod = make_pod("p").req(cpu="1").pod()
    cache.assume_pod(pod.assigned_to("n1"))
    assert cache.is_assumed(pod)
    cache.add_pod(make_pod("p").uid(pod.uid).req(cpu="1").node("n1").pod())
    assert not cache.is_assumed(pod)
    info = cache.get_node_info("n1")
    assert info is not None
    assert [p.uid for p in info.pods] == [pod.uid]
    assert info.requested.milli_cpu == 1000


def test_confirmed_on_another_node_moves_the_pod() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    cache.add_node(make_node("n2").node())
    pod = make_pod("p").req(cpu="1").pod()
    cache.assume_pod(pod.assigned_to("n1"))
    cache.add_pod(make_pod("p").uid(pod.uid).req(cpu="1").node("n2").pod())
    assert cache.get_node_info("n1").requested.milli_cpu == 0  # type: ignore[union-attr]
    assert cache.get_node_info("n2").requested.milli_cpu == 1000  # type: ignore[union-attr]


def test_assumed_pod_expires_after_ttl_once_binding_finished() -> None:
    clock = FakeClock()
    cache = Cache(clock, assumed_pod_ttl=30)
    cache.add_node(make_node("n1").node())
    pod = make_pod("p").req(cpu="1").pod().assigned_to("n1")
    cache.assume_pod(pod)
    clock.t = 100
    assert cache.cleanup_expired_assumed_pods() == []
    cache.finish_binding(pod)
    clock.t = 129
    assert cache.cleanup_expired_assumed_pods() == []
    clock.t = 130
    assert [p.uid for p in cache.cleanup_expired_assumed_pods()] == [pod.uid]
    assert cache.get_node_info("n1").requested.milli_cpu == 0  # type: ignore[union-attr]


def test_the_assumed_count_follows_every_way_an_assumption_ends() -> None:
    """Confirmed by the watch, forgotten, deleted, expired: each leaves the count and the list."""
    clock = FakeClock()
    cache = Cache(clock, assumed_pod_ttl=30)
    cache.add_node(make_node("n1").node())
    cache.add_pod(make_pod("bound").node("n1").pod())
    pods = [make_pod(f"p{i}").pod().assigned_to("n1") for i in range(4)]
    for pod in pods:
        cache.assume_pod(pod)
    assert cache.assumed_count() == 4
    assert [p.name for p in cache.assumed_pods()] == ["p0", "p1", "p2", "p3"]
    cache.add_pod(pods[0])
    assert cache.forget_pod(pods[1])
    cache.remove_pod(pods[2])
    assert [p.name for p in cache.assumed_pods()] == ["p3"]
    cache.finish_binding(pods[3])
    clock.t = 30
    assert cache.cleanup_expired_assumed_pods() == [pods[3]]
    assert cache.assumed_count() == 0
    assert cache.assumed_pods() == []
    assert cache.pod_count() == 2


def test_forgetting_a_pod_the_watch_already_confirmed_keeps_it() -> None:
    """A binding whose reply was lost after the watch confirmed it: nothing left to forget."""
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    pod = make_pod("p").req(cpu="1").pod().assigned_to("n1")
    cache.assume_pod(pod)
    cache.add_pod(pod)
    assert cache.is_confirmed_on(pod, "n1")
    assert cache.forget_pod(pod) is False
    assert cache.get_node_info("n1").requested.milli_cpu == 1000  # type: ignore[union-attr]
    assert cache.get_pod(pod.uid) is not None


def test_forgetting_an_assumed_pod_undoes_it() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    pod = make_pod("p").req(cpu="1").pod().assigned_to("n1")
    cache.assume_pod(pod)
    assert not cache.is_confirmed_on(pod, "n1")
    assert cache.forget_pod(pod) is True
    assert cache.get_node_info("n1").requested.milli_cpu == 0  # type: ignore[union-attr]


def test_double_assume_is_an_error() -> None:
    cache = Cache(FakeClock())
    pod = make_pod("p").pod().assigned_to("n1")
    cache.assume_pod(pod)
    with pytest.raises(CacheError):
        cache.assume_pod(pod)


def test_deleted_node_keeps_pods_until_they_go_but_leaves_snapshot() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    cache.add_node(make_node("n2").node())
    pod = make_pod("p").node("n1").pod()
    cache.add_pod(pod)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.node_info_list] == ["n1", "n2"]
    cache.remove_node("n1")
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.node_info_list] == ["n2"]
    assert snapshot.get("n1") is None
    cache.remove_pod(pod)
    assert cache.get_node_info("n1") is None


def test_snapshot_interleaves_zones() -> None:
    cache = Cache(FakeClock())
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("c2", "c"),
    ]:
        cache.add_node(make_node(name).zone(zone).node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.node_info_list] == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_named_nodes_come_in_the_snapshot_order_whatever_the_order_asked() -> None:
    cache = Cache(FakeClock())
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]:
        cache.add_node(make_node(name).zone(zone).node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.node_info_list] == ["a1", "b1", "a2", "b2"]
    named = snapshot.in_list_order(["b2", "gone", "a1", "a2"])
    assert [n.name for n in named] == ["a1", "a2", "b2"]
    assert named[0] is snapshot.get("a1")


def test_named_nodes_follow_nodes_added_removed_and_changed_in_place() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    cache.add_node(make_node("n2").node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.in_list_order({"n1", "n2"})] == ["n1", "n2"]
    cache.add_pod(make_pod("p").node("n2").pod())
    cache.update_snapshot(snapshot)
    (changed,) = snapshot.in_list_order({"n2"})
    assert changed is snapshot.get("n2")
    assert len(changed.pods) == 1
    cache.remove_node("n1")
    cache.add_node(make_node("n3").node())
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.in_list_order({"n1", "n2", "n3"})] == ["n2", "n3"]


def test_named_nodes_follow_a_list_rewritten_without_a_new_layout() -> None:
    first, second = NodeInfo(make_node("n1").node()), NodeInfo(make_node("n2").node())
    snapshot = Snapshot.from_node_infos([first, second])
    assert snapshot.in_list_order({"n1"}) == [first]
    snapshot.node_info_list[:] = [second, first]
    assert snapshot.in_list_order({"n1"}) == [first]
    assert snapshot.in_list_order({"n1", "n2"}) == [second, first]
    third = NodeInfo(make_node("n3").node())
    snapshot.node_info_map["n3"] = third
    snapshot.node_info_list[0] = third
    assert snapshot.in_list_order({"n3"}) == [third]


def test_an_entry_replaced_in_place_keeps_the_layout_and_is_recorded() -> None:
    first, second = NodeInfo(make_node("n1").node()), NodeInfo(make_node("n2").node())
    snapshot = Snapshot.from_node_infos([first, second])
    layout = snapshot.layout_version
    newer = NodeInfo(make_node("n2").node())
    snapshot.replace_in_place(newer)
    snapshot.replace_in_place(NodeInfo(make_node("n3").node()))
    assert [id(info) for info in snapshot.node_info_list] == [id(first), id(newer)]
    assert snapshot.changed_nodes == {"n2"}
    assert snapshot.layout_version == layout
    snapshot.lay_out([newer, first])
    assert snapshot.layout_version == layout + 1
    assert snapshot.changed_nodes == set()
    assert [id(info) for info in snapshot.in_list_order({"n1", "n2"})] == [id(newer), id(first)]
    snapshot.node_info_list = [first, newer]
    newest = NodeInfo(make_node("n1").node())
    snapshot.replace_in_place(newest)
    assert [id(info) for info in snapshot.node_info_list] == [id(newest), id(newer)]


def test_image_states_count_nodes() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").image(["nginx:1"], 100).node())
    cache.add_node(make_node("n2").image(["nginx:1"], 100).node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1").image_states["nginx:1"].num_nodes == 2  # type: ignore[union-attr]
    cache.remove_node("n2")
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1").image_states["nginx:1"].num_nodes == 1  # type: ignore[union-attr]


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1").node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.add_pod(make_pod("p").req(cpu="1").node("n1").pod())
    assert snapshot.get("n1").requested.milli_cpu == 0  # type: ignore[union-attr]
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1").requested.milli_cpu == 1000  # type: ignore[union-attr]


# Properties ---------------------------------------------------------------------------------

_cpu = st.sampled_from(["0", "100m", "250m", "1", "1500m"])
_mem = st.sampled_from(["0", "128Mi", "1Gi"])
_port = st.sampled_from([0, 0, 80, 443])
_pod_specs = st.lists(
    st.tuples(st.integers(0, 2), _cpu, _mem, _port, st.booleans()), min_size=0, max_size=12
)


def _build(specs):
    pods = []
    for index, (node, cpu, mem, port, with_affinity) in enumerate(specs):
        builder = make_pod(f"p{index}").req(cpu=cpu, memory=mem).node(f"n{node}")
        if port:
            builder.host_port(port)
        if with_affinity:
            builder.affinity(
                {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
                        ]
                    }
                }
            )
        pods.append(builder.pod())
    return pods


@settings(max_examples=150, deadline=None)
@given(_pod_specs, st.data())
def test_node_requested_is_sum_of_pod_requests(specs, data) -> None:
    cache = Cache(FakeClock())
    for n in range(3):
        cache.add_node(make_node(f"n{n}").node())
    pods = _build(specs)
    for pod in pods:
        cache.add_pod(pod)
    removed = data.draw(
        st.lists(st.sampled_from(pods), unique_by=lambda p: p.uid) if pods else st.just([])
    )
    for pod in removed:
        cache.remove_pod(pod)
    remaining = [p for p in pods if p not in removed]
    for n in range(3):
        info = cache.get_node_info(f"n{n}")
        assert info is not None
        expected = Resource()
        nz_cpu = nz_mem = 0
        for pod in remaining:
            if pod.node_name == f"n{n}":
                expected.add(pod.requests)
                nz_cpu += pod.non_zero_requests.milli_cpu
                nz_mem += pod.non_zero_requests.memory
        assert info.requested == expected
        assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (
            nz_cpu,
            nz_mem,
        )
        assert len(info.pods_with_required_anti_affinity) == sum(
            1 for p in remaining if p.node_name == f"n{n}" and p.has_required_anti_affinity
        )


@settings(max_examples=150, deadline=None)
@given(_pod_specs, _pod_specs)
def test_assume_then_forget_leaves_cache_unchanged(existing, assumed_specs) -> None:
    cache = Cache(FakeClock())
    for n in range(3):
        cache.add_node(make_node(f"n{n}").node())
    for pod in _build(existing):
        cache.add_pod(pod)
    before = _state(cache)
    assumed = [p.assigned_to(p.node_name) for p in _build(assumed_specs)]
    # Distinct UIDs from the existing pods: builders number UIDs globally.
    for pod in assumed:
        cache.assume_pod(pod)
    for pod in reversed(assumed):
        cache.forget_pod(pod)
    assert _state(cache) == before


@settings(max_examples=100, deadline=None)
@given(_pod_specs, st.lists(st.integers(0, 2), max_size=3))
def test_incremental_snapshot_equals_fresh_snapshot(specs, removed_nodes) -> None:
    cache = Cache(FakeClock())
    for n in range(3):
        cache.add_node(make_node(f"n{n}").zone("abc"[n]).node())
    incremental = Snapshot()
    cache.update_snapshot(incremental)
    pods = _build(specs)
    for index, pod in enumerate(pods):
        cache.add_pod(pod)
        if index % 3 == 0:
            cache.update_snapshot(incremental)
    for n in removed_nodes:
        cache.remove_node(f"n{n}")
    cache.update_snapshot(incremental)
    fresh = Snapshot()
    cache.update_snapshot(fresh)

    def view(snapshot: Snapshot):
        return [
            (n.name, n.requested.as_dict(), sorted(p.uid for p in n.pods))
            for n in snapshot.node_info_list
        ], [n.name for n in snapshot.have_pods_with_required_anti_affinity]

    assert view(incremental) == view(fresh)
    assert all(isinstance(n, NodeInfo) for n in fresh.node_info_list)
