"""S7, scheduler_perf's SchedulingCSIPVs: its shape, its scaling and the objects it creates.

Nothing here is timed. The manifests are read back through the scheduler's own storage views,
so a claim the scheduler would not take for bound, or a CSINode without the limit, fails here.
The end-to-end helpers run against a recording stand-in for the API client.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from bench.config import SCHEDULER_NAME, scheduler_config
from bench.e2e import create_bound_claims, delete_volumes, ensure_volume_limits
from bench.inprocess import NAMESPACE, load_bound_claims, run_inprocess
from bench.kube import CSI_NODES_PATH, MERGE_PATCH, VOLUMES_PATH, Client
from bench.scenarios import SCENARIOS, Group, Scenario, scenario

from bench import shapes
from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim
from kopf_scheduler.sim.runner import Simulation
from tests.bench.recording import RecordingClient

Raw = dict[str, Any]


# The scenario and its scaling -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "nodes", "init", "measured", "label"),
    [
        pytest.param("S7", 5000, 5000, 1000, "S7", id="full"),
        pytest.param("S7@0.1", 500, 500, 100, "S7@0.1", id="tenth"),
        pytest.param("S7@0.2", 1000, 1000, 200, "S7@0.2", id="fifth"),
        pytest.param("S7@0.0001", 1, 1, 1, "S7@0.0001", id="at-least-one-of-each"),
    ],
)
def test_s7_is_scheduler_perfs_5000_node_workload_scaled_like_the_others(
    spec: str, nodes: int, init: int, measured: int, label: str
) -> None:
    s7 = scenario(spec)
    assert s7.mirrors == "SchedulingCSIPVs/5000Nodes"
    assert (s7.nodes, s7.init_count, s7.measured_count) == (nodes, init, measured)
    assert {g.kind for g in (*s7.init, *s7.measured)} == {"csi"}
    assert s7.label == label
    assert s7.volumes
    assert len(s7.csi_nodes()) == nodes
    assert s7.shape() == f"{nodes} nodes, init {init} csi, measured {measured} csi"


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "S7"])
def test_the_other_scenarios_get_no_volume_objects(name: str) -> None:
    other = SCENARIOS[name].scaled(0.01)
    assert not other.volumes
    assert other.csi_nodes() == []
    assert all(
        shapes.ATTACHABLE_VOLUMES not in n["status"]["allocatable"] for n in other.node_objects()
    )
    assert all(shapes.pod_claims(p) == [] for p in other.init_pods("ns", "s"))


def test_s7_nodes_are_the_kwok_nodes_with_a_volume_limit_and_a_csi_node() -> None:
    s7 = scenario("S7@0.001")
    for index, (node, csi_node) in enumerate(zip(s7.node_objects(), s7.csi_nodes(), strict=True)):
        plain = shapes.node(index)
        allocatable = node["status"]["allocatable"]
        assert allocatable.pop(shapes.ATTACHABLE_VOLUMES) == "39"
        assert node == plain
        view = CSINode(csi_node)
        assert view.name == plain["metadata"]["name"]
        assert set(view.drivers) == {"ebs.csi.aws.com"}
        driver = view.drivers["ebs.csi.aws.com"]
        assert (driver.allocatable_count, driver.node_id) == (39, view.name)
        assert view.migrated_plugins == frozenset()
        assert "ownerReferences" not in csi_node["metadata"]


def test_a_csi_node_given_the_node_uid_is_owned_by_the_node() -> None:
    raw = shapes.csi_node("kwok-node-3", "uid-3")
    assert raw["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "kwok-node-3", "uid": "uid-3"}
    ]


# The pods, their claims and their PVs -----------------------------------------------------------


def _stored(claim: Raw, uid: str) -> Raw:
    """The claim as an API server returns it: with a UID, status reset."""
    return {**claim, "metadata": {**claim["metadata"], "uid": uid}, "status": {"phase": "Pending"}}


@pytest.mark.parametrize(
    ("role", "node_name"),
    [
        pytest.param(shapes.ROLE_INIT, "kwok-node-0", id="init-bound"),
        pytest.param(shapes.ROLE_MEASURED, None, id="measured-pending"),
    ],
)
def test_a_csi_pod_mounts_its_own_claim_bound_to_its_own_pv(
    role: str, node_name: str | None
) -> None:
    raw = shapes.pod("csi", "m-csi-7", "ns1", SCHEDULER_NAME, role, node_name)
    pod = Pod(raw)
    assert pod.claim_keys == ("ns1/m-csi-7",)
    assert (
        raw["spec"]["containers"]
        == shapes.pod("default", "x", "ns1", "s", role)["spec"]["containers"]
    )

    (claim_raw,) = shapes.pod_claims(raw)
    claim = PersistentVolumeClaim(claim_raw)
    assert claim.key == "ns1/m-csi-7"
    assert claim.is_bound
    assert claim.annotations["pv.kubernetes.io/bind-completed"] == "true"
    assert claim.volume_name == "ns1-m-csi-7"
    assert (claim.access_modes, claim.request) == (("ReadOnlyMany",), 2**30)
    assert claim_raw["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadOnlyMany"],
        "capacity": {"storage": "1Gi"},
    }

    volume_raw = shapes.bound_volume(_stored(claim_raw, "uid-7"))
    volume = PersistentVolume(volume_raw)
    assert volume.name == claim.volume_name
    assert volume.claim_ref is not None
    assert (volume.claim_ref.key, volume.claim_ref.uid) == ("ns1/m-csi-7", "uid-7")
    assert volume.csi is not None
    assert (volume.csi.driver, volume.csi.volume_handle) == ("ebs.csi.aws.com", "ns1-m-csi-7")
    assert (volume.access_modes, volume.capacity, volume.phase) == (
        ("ReadOnlyMany",),
        2**30,
        "Bound",
    )
    assert volume_raw["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume.labels == {shapes.VOLUME_NAMESPACE_LABEL: "ns1"}


def test_init_and_measured_pods_of_one_namespace_never_share_a_claim() -> None:
    s7 = scenario("S7@0.01")
    pods = [*s7.init_pods("ns", "s"), *s7.measured_pods("ns", "s")]
    names = [c["metadata"]["name"] for p in pods for c in shapes.pod_claims(p)]
    assert len(names) == len(set(names)) == s7.init_count + s7.measured_count


# In process ---------------------------------------------------------------------------------


def test_the_pv_controller_of_the_in_memory_cluster_finds_nothing_to_change() -> None:
    sim = Simulation(parse_config(scheduler_config()))
    sim.start()
    changes: list[tuple[str, str]] = []
    sim.cluster.subscribe(lambda kind, event_type, raw: changes.append((kind, event_type)))
    pods = scenario("S7@0.001").init_pods(NAMESPACE, SCHEDULER_NAME)

    load_bound_claims(sim, pods)

    assert changes == [("PersistentVolumeClaim", "ADDED")] * 5 + [("PersistentVolume", "ADDED")] * 5
    claims = sim.cluster.objects("PersistentVolumeClaim").values()
    volumes = sim.cluster.objects("PersistentVolume").values()
    assert {c["status"]["phase"] for c in claims} == {"Bound"}
    assert {v["status"]["phase"] for v in volumes} == {"Bound"}
    uids = {c["metadata"]["uid"] for c in claims}
    assert {v["spec"]["claimRef"]["uid"] for v in volumes} == uids


def test_inprocess_s7_binds_every_measured_pod() -> None:
    tiny = Scenario("S7", "SchedulingCSIPVs/5Nodes", 5, (Group("csi", 5),), (Group("csi", 10),))
    result = run_inprocess(tiny, configure_logs=False)
    assert result["all_measured_bound"], result["bound_measured"]
    assert result["checks"]["ok"]


# End to end, against a recording client -------------------------------------------------------


def _client(fake: RecordingClient) -> Client:
    return cast(Client, fake)


def test_e2e_pairs_are_created_as_scheduler_perf_does_with_the_claim_uid() -> None:
    fake = RecordingClient()
    pod = shapes.pod("csi", "init-csi-0", "ns", "s", shapes.ROLE_INIT, "kwok-node-0")

    result = asyncio.run(create_bound_claims(_client(fake), [pod]))

    assert result["count"] == 1
    claims = "/api/v1/namespaces/ns/persistentvolumeclaims"
    assert [(m, p, t) for m, p, _, t in fake.calls] == [
        ("POST", claims, "application/json"),
        ("PATCH", f"{claims}/init-csi-0/status", MERGE_PATCH),
        ("POST", VOLUMES_PATH, "application/json"),
        ("PATCH", f"{VOLUMES_PATH}/ns-init-csi-0/status", MERGE_PATCH),
    ]
    assert fake.calls[1][2] == {"status": shapes.claim_status()}
    assert fake.calls[2][2]["spec"]["claimRef"]["uid"] == "uid-0"
    assert fake.calls[3][2] == {"status": {"phase": "Bound"}}


def _node(index: int, uid: str, limit: str | None) -> Raw:
    raw = shapes.node(index)
    raw["metadata"]["uid"] = uid
    if limit is not None:
        raw["status"]["allocatable"][shapes.ATTACHABLE_VOLUMES] = limit
    return raw


def test_e2e_volume_limits_fill_in_only_what_the_nodes_lack() -> None:
    nodes = [
        _node(0, "n0", "39"),  # complete
        _node(1, "n1", None),  # no allocatable limit, no CSINode
        _node(2, "n2", "39"),  # CSINode of an earlier node of the same name
        _node(3, "n3", "39"),  # beyond the scenario's count
    ]
    csi_nodes = [
        shapes.csi_node("kwok-node-0", "n0"),
        shapes.csi_node("kwok-node-2", "old"),
    ]
    fake = RecordingClient({"/api/v1/nodes": nodes, CSI_NODES_PATH: csi_nodes})

    result = asyncio.run(ensure_volume_limits(_client(fake), 3))

    assert {
        k: result[k] for k in ("allocatable_set", "csi_nodes_replaced", "csi_nodes_created")
    } == {
        "allocatable_set": 1,
        "csi_nodes_replaced": 1,
        "csi_nodes_created": 2,
    }
    assert [(m, p) for m, p, _, _ in fake.calls] == [
        ("PATCH", "/api/v1/nodes/kwok-node-1/status"),
        ("DELETE", f"{CSI_NODES_PATH}/kwok-node-2"),
        ("POST", CSI_NODES_PATH),
        ("POST", CSI_NODES_PATH),
    ]
    assert fake.calls[0][2] == {"status": {"allocatable": {shapes.ATTACHABLE_VOLUMES: "39"}}}
    created = {c[2]["metadata"]["name"]: c[2] for c in fake.calls[2:]}
    assert created == {
        "kwok-node-1": shapes.csi_node("kwok-node-1", "n1"),
        "kwok-node-2": shapes.csi_node("kwok-node-2", "n2"),
    }


def test_e2e_volumes_left_after_the_timeout_lose_their_finalizers() -> None:
    left = [shapes.bound_volume(_stored(shapes.claim("c", "ns", "init"), "u"))]
    fake = RecordingClient({VOLUMES_PATH: left})

    result = asyncio.run(delete_volumes(_client(fake), "ns", timeout=0.0))

    assert {k: result[k] for k in ("deleted", "finalizers_removed")} == {
        "deleted": 1,
        "finalizers_removed": 1,
    }
    assert [(m, p, b) for m, p, b, _ in fake.calls] == [
        ("DELETE", VOLUMES_PATH, None),
        ("PATCH", f"{VOLUMES_PATH}/ns-c", {"metadata": {"finalizers": None}}),
    ]


def test_e2e_no_volumes_no_requests() -> None:
    fake = RecordingClient()
    result = asyncio.run(delete_volumes(_client(fake), None))
    assert (result["deleted"], fake.calls) == (0, [])
