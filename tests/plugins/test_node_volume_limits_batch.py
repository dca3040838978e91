"""NodeVolumeLimits' batch form keeps its per-node counts in step with the cluster.

The batch Filter answers from counts it keeps per node between attempts (the node index), so it
is right only if every change the counts were worked out from reaches it. The property builds a
small cluster (four nodes, CSINodes with random limits for two CSI drivers, claims bound to CSI
PVs whose handles may coincide, claims counted through their class, VolumeAttachments, pods on
the nodes holding claims), then makes random changes one at a time, each as the watches would
tell it: claims bound anew, unbound or deleted, PVs replaced or deleted, classes changed or
deleted, CSINodes changed or deleted, attachments added and deleted, pods placed and removed.
After each change, a pod using one or two claims that always exist is filtered both ways, and
the batch form must reject exactly the nodes the per-node Filter rejects, with the same status.

The unit tests pin down what the batch form leaves to the per-node Filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import (
    CSI_NODE_KIND,
    STORAGE_CLASS_KIND,
    VOLUME_ATTACHMENT_KIND,
    StorageCache,
)
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.node_columns.columns import NodeColumns
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.status import Code
from kopf_scheduler.framework.types import NominatingInfo
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.node_volume_limits import REASON_MAX_VOLUME_COUNT, NodeVolumeLimits
from kopf_scheduler.queue.nominator import Nominator
from tests.builders import PodBuilder, make_node, make_pod
from tests.storage_builders import (
    make_attachment,
    make_claim,
    make_class,
    make_csi_node,
    make_volume,
)

NODES = ("n0", "n1", "n2", "n3")
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
DRIVERS = (EBS, GCE)
HANDLES = ("h0", "h1", "h2")
CLASS = "csi"
STABLE_CLAIMS = ("s0", "s1")
"""Claims that are never deleted: the incoming pods use them, so their volumes can be counted."""
CLAIMS = (*STABLE_CLAIMS, "c0", "c1", "c2")
VOLUMES = ("pv0", "pv1", "pv2", "pv3")
PREFIX = "prefix"


@dataclass
class Cluster:
    cache: Cache
    snapshot: Snapshot
    storage: StorageCache
    plugin: NodeVolumeLimits
    columns: NodeColumns
    pods: dict[str, Pod]


def _volume(name: str, driver: str, handle: str) -> Any:
    return make_volume(name).csi(driver, handle).volume()


def _claim(name: str, volume: str | None) -> Any:
    builder = make_claim(name).storage_class(CLASS)
    if volume is not None:
        builder.bound_to(volume)
    return builder.claim()


def _csi_node(name: str, limits: dict[str, int | None]) -> Any:
    return make_csi_node(name, limits)


def _pod(name: str, claims: tuple[str, ...]) -> PodBuilder:
    builder = make_pod(name).req(cpu="10m")
    for claim in claims:
        builder.claim(claim)
    return builder


limits_strategy = st.dictionaries(
    st.sampled_from(DRIVERS), st.one_of(st.none(), st.integers(0, 3)), max_size=2
)
claims_strategy = st.lists(st.sampled_from(CLAIMS), min_size=1, max_size=2, unique=True)

attach_change = st.tuples(
    st.just("attach"),
    st.integers(0, 3),
    st.one_of(
        st.none(),
        st.tuples(st.sampled_from(NODES), st.sampled_from(VOLUMES), st.sampled_from(DRIVERS)),
    ),
)
"""An attachment added, moved or deleted (drawn twice as often as the other changes: it
matters only where the node has a limit for the attacher)."""

change_strategy = st.one_of(
    st.tuples(st.just("bind"), st.sampled_from(CLAIMS), st.sampled_from((*VOLUMES, None))),
    st.tuples(st.just("delete-claim"), st.sampled_from(CLAIMS[len(STABLE_CLAIMS) :])),
    st.tuples(
        st.just("volume"),
        st.sampled_from(VOLUMES),
        st.sampled_from(DRIVERS),
        st.sampled_from(HANDLES),
    ),
    st.tuples(st.just("delete-volume"), st.sampled_from(VOLUMES)),
    st.tuples(st.just("class"), st.sampled_from((*DRIVERS, None))),
    st.tuples(st.just("csi-node"), st.sampled_from(NODES), st.one_of(st.none(), limits_strategy)),
    attach_change,
    attach_change,
    st.tuples(st.just("place"), st.sampled_from(NODES), claims_strategy),
    st.tuples(st.just("remove"), st.integers(0, 20)),
)


def _build(
    volumes: list[tuple[str, str]],
    bindings: list[str | None],
    limits: list[dict[str, int | None] | None],
    placed: list[tuple[str, list[str]]],
) -> Cluster:
    storage = StorageCache()
    storage.classes[CLASS] = make_class(CLASS).provisioner(EBS).storage_class()
    for name, (driver, handle) in zip(VOLUMES, volumes, strict=True):
        storage.volumes.upsert(_volume(name, driver, handle))
    for name, volume in zip(CLAIMS, bindings, strict=True):
        storage.claims.upsert(_claim(name, volume))
    for name, node_limits in zip(NODES, limits, strict=True):
        if node_limits is not None:
            storage.csi_nodes[name] = _csi_node(name, node_limits)
            storage.changed(CSI_NODE_KIND, name)
    cache = Cache(lambda: 0.0)
    for name in NODES:
        cache.add_node(Node(make_node(name).obj()))
    pods: dict[str, Pod] = {}
    for number, (node, claims) in enumerate(placed):
        pod = _pod(f"running{number}", tuple(claims)).node(node).pod()
        cache.add_pod(pod)
        pods[pod.name] = pod
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    handle = Handle(snapshot=snapshot, storage=storage)
    return Cluster(cache, snapshot, storage, NodeVolumeLimits(handle, PREFIX), NodeColumns(), pods)


def _apply(cluster: Cluster, change: tuple[Any, ...], number: int) -> None:
    storage = cluster.storage
    kind = change[0]
    if kind == "bind":
        storage.claims.upsert(_claim(change[1], change[2]))
    elif kind == "delete-claim":
        storage.claims.delete(f"default/{change[1]}")
    elif kind == "volume":
        storage.volumes.upsert(_volume(change[1], change[2], change[3]))
    elif kind == "delete-volume":
        storage.volumes.delete(change[1])
    elif kind == "class":
        if change[1] is None:
            storage.classes.pop(CLASS, None)
        else:
            storage.classes[CLASS] = make_class(CLASS).provisioner(change[1]).storage_class()
        storage.changed(STORAGE_CLASS_KIND, CLASS)
    elif kind == "csi-node":
        if change[2] is None:
            storage.csi_nodes.pop(change[1], None)
        else:
            storage.csi_nodes[change[1]] = _csi_node(change[1], change[2])
        storage.changed(CSI_NODE_KIND, change[1])
    elif kind == "attach":
        key = f"va{change[1]}"
        if change[2] is None:
            storage.attachments.pop(key, None)
        else:
            node, volume, attacher = change[2]
            storage.attachments[key] = make_attachment(key, attacher, node, volume)
        storage.changed(VOLUME_ATTACHMENT_KIND, key)
    elif kind == "place":
        pod = _pod(f"placed{number}", tuple(change[2])).pod()
        cluster.cache.assume_pod(pod.assigned_to(change[1]))
        cluster.pods[pod.name] = pod.assigned_to(change[1])
    elif kind == "remove" and cluster.pods:
        names = sorted(cluster.pods)
        pod = cluster.pods.pop(names[change[1] % len(names)])
        cluster.cache.remove_pod(pod)
    cluster.cache.update_snapshot(cluster.snapshot)


def _compare(cluster: Cluster, pod: Pod) -> None:
    """The batch Filter rejects exactly the nodes ``filter`` rejects, with the one status."""
    columns = cluster.columns
    columns.mirror.sync(cluster.snapshot)
    plugin = cluster.plugin
    state = CycleState()
    rejections = plugin.batch_filter().filter_nodes(state, pod, columns, columns.free_columns())
    statuses = [plugin.filter(state, pod, info) for info in columns.mirror.infos]
    expected = [not status.is_success() for status in statuses]
    got = rejections.fails.tolist() if rejections is not None else [False] * len(statuses)
    assert got == expected
    for status, rejected in zip(statuses, expected, strict=True):
        if rejected:
            assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, (REASON_MAX_VOLUME_COUNT,))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    volumes=st.lists(
        st.tuples(st.sampled_from(DRIVERS), st.sampled_from(HANDLES)),
        min_size=len(VOLUMES),
        max_size=len(VOLUMES),
    ),
    bindings=st.lists(
        st.sampled_from((*VOLUMES, None)), min_size=len(CLAIMS), max_size=len(CLAIMS)
    ),
    limits=st.lists(
        st.one_of(st.none(), limits_strategy), min_size=len(NODES), max_size=len(NODES)
    ),
    placed=st.lists(st.tuples(st.sampled_from(NODES), claims_strategy), max_size=6),
    changes=st.lists(
        st.tuples(
            change_strategy,
            st.lists(st.sampled_from(STABLE_CLAIMS), min_size=1, max_size=2, unique=True),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_the_batch_form_follows_every_change(
    volumes: list[tuple[str, str]],
    bindings: list[str | None],
    limits: list[dict[str, int | None] | None],
    placed: list[tuple[str, list[str]]],
    changes: list[tuple[tuple[Any, ...], list[str]]],
) -> None:
    cluster = _build(volumes, bindings, limits, placed)
    _compare(cluster, _pod("incoming", (STABLE_CLAIMS[0],)).pod())
    for number, (change, incoming_claims) in enumerate(changes):
        _apply(cluster, change, number)
        _compare(cluster, _pod(f"incoming{number}", tuple(incoming_claims)).pod())


# ---------------------------------------------------------------------------------------------
# What the batch form leaves to the per-node Filter.


def _limited_cluster(placed: list[tuple[str, list[str]]]) -> Cluster:
    return _build(
        [(EBS, "h0"), (EBS, "h1"), (EBS, "h2"), (GCE, "h0")],
        ["pv0", "pv1", "pv2", None, None],
        [{EBS: 1}] * len(NODES),
        placed,
    )


def _declines(cluster: Cluster, pod: Pod) -> bool:
    columns = cluster.columns
    columns.mirror.sync(cluster.snapshot)
    try:
        cluster.plugin.batch_filter().filter_nodes(
            CycleState(), pod, columns, columns.free_columns()
        )
    except Fallback:
        return True
    return False


@pytest.mark.parametrize(
    ("pod", "declines"),
    [
        pytest.param(_pod("p", ("s0",)), False, id="bound-csi-claim"),
        pytest.param(_pod("p", ("absent",)), True, id="missing-claim"),
    ],
)
def test_the_incoming_pod_must_be_countable_without_the_node(
    pod: PodBuilder, declines: bool
) -> None:
    assert _declines(_limited_cluster([]), pod.pod()) is declines


IN_TREE_EBS = "kubernetes.io/aws-ebs"


PORTWORX = "pxd.portworx.com"
IN_TREE_PORTWORX = "kubernetes.io/portworx-volume"


def _replace_csi_node(
    cluster: Cluster, node: str, limits: dict[str, int | None], listed: str
) -> None:
    cluster.storage.csi_nodes[node] = make_csi_node(node, limits, migrated=listed)
    cluster.storage.changed(CSI_NODE_KIND, node)


def _place_portworx_holder(cluster: Cluster, node: str) -> None:
    holder = make_pod(f"holder-{node}").volume("px", portworxVolume={"volumeID": f"px-{node}"})
    cluster.cache.add_pod(holder.node(node).pod())
    cluster.cache.update_snapshot(cluster.snapshot)


def test_in_tree_volumes_count_as_each_group_of_nodes_reads_them() -> None:
    """EBS volumes count under their CSI driver on every node with a CSINode, listed as
    migrated or not (n0 and n2 are full); Portworx volumes only where the CSINode lists the
    plugin: n1 and n3 each hold one Portworx volume at a limit of one, and only n1 lists it."""
    cluster = _limited_cluster([("n0", ["s1"]), ("n2", ["s0"])])
    _replace_csi_node(cluster, "n1", {PORTWORX: 1}, IN_TREE_PORTWORX)
    _replace_csi_node(cluster, "n3", {PORTWORX: 1}, "")
    _place_portworx_holder(cluster, "n1")
    _place_portworx_holder(cluster, "n3")
    pod = (
        make_pod("p")
        .volume("ebs", awsElasticBlockStore={"volumeID": "vol-1"})
        .volume("px", portworxVolume={"volumeID": "px-new"})
        .pod()
    )
    assert not _declines(cluster, pod)
    _compare(cluster, pod)
    columns = cluster.columns
    rejections = cluster.plugin.batch_filter().filter_nodes(
        CycleState(), pod, columns, columns.free_columns()
    )
    assert rejections is not None
    assert rejections.fails.tolist() == [True, True, True, False]
    _replace_csi_node(cluster, "n1", {PORTWORX: 1}, "")
    _compare(cluster, pod)


def test_a_node_with_limits_holding_an_uncountable_pod_is_left_to_the_filter() -> None:
    cluster = _limited_cluster([])
    foreign = make_pod("foreign").uid("foreign-uid").ephemeral("scratch", storage_class=CLASS)
    cluster.storage.claims.upsert(make_claim("foreign-scratch").storage_class(CLASS).claim())
    cluster.cache.add_pod(foreign.node("n1").pod())
    cluster.cache.update_snapshot(cluster.snapshot)
    assert cluster.plugin.filter(
        CycleState(), _pod("p", ("s0",)).pod(), cluster.snapshot.node_info_list[1]
    ).code == (Code.ERROR)
    assert _declines(cluster, _pod("p", ("s0",)).pod())


def test_a_nominated_pod_with_volumes_is_left_to_the_filter() -> None:
    cluster = _limited_cluster([])
    nominated = _pod("nominated", ("s1",)).priority(10).pod()
    nominator = Nominator(lookup={nominated.key: nominated}.get)
    nominator.add_nominated_pod(nominated, NominatingInfo.override("n0"))
    cluster.plugin = NodeVolumeLimits(
        Handle(snapshot=cluster.snapshot, storage=cluster.storage, nominator=nominator), PREFIX
    )
    assert _declines(cluster, _pod("p", ("s0",)).pod())
    assert not _declines(cluster, _pod("p", ("s0",)).priority(20).pod())
