"""Volumes in the simulator: scenario files with storage objects, and the cluster completing what
volume scheduling starts, judged by what a user sees (where pods land, what the claims and PVs
look like afterwards, and the reasons in the explanation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.model.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
)
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from tests.sim.support import node, placements, pod, pods_by_name, report, write_yaml
from tests.sim.volume_support import (
    ZONE,
    annotations_of,
    claim,
    simulate_volumes,
    storage_class,
    stored,
    volume,
    with_claims,
    with_ephemeral,
)

CLAIM = "PersistentVolumeClaim"
VOLUME = "PersistentVolume"
QUANTITY_RULE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"
AFFINITY_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
NO_ZONE = "node(s) had no available volume zone"
RWOP_IN_USE = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod"
)


def _rejections(rep: dict[str, Any], pod_name: str) -> dict[str, list[str]]:
    """Node -> reasons of the pod's first attempt, for the nodes that rejected it."""
    attempt = next(a for a in rep["attempts"] if a["pod"] == f"default/{pod_name}")
    return {n["node"]: n["reasons"] for n in attempt["nodes"] if not n["feasible"]}


# Scenario files --------------------------------------------------------------------------------


def _csi_node() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": "n1"},
        "spec": {"drivers": [{"name": "disk.csi.example.com", "nodeID": "n1"}]},
    }


def _csi_driver() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": "disk.csi.example.com"},
        "spec": {"storageCapacity": True},
    }


def _capacity() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "cap", "namespace": "kube-system"},
        "storageClassName": "fast",
        "capacity": "100Gi",
        "nodeTopology": {"matchLabels": {ZONE: "a"}},
    }


def _attachment() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va-1"},
        "spec": {
            "attacher": "disk.csi.example.com",
            "nodeName": "n1",
            "source": {"persistentVolumeName": "disk-1"},
        },
    }


def test_every_storage_kind_loads_in_document_order(tmp_path: Path) -> None:
    docs = [
        storage_class("local"),
        _csi_driver(),
        _csi_node(),
        _capacity(),
        volume("disk-1"),
        claim("data"),
        _attachment(),
        node("n1"),
    ]
    scenario = load_scenario([write_yaml(tmp_path / "s.yaml", docs)])
    assert [(o["kind"], o["metadata"]["name"]) for o in scenario.storage] == [
        ("StorageClass", "local"),
        ("CSIDriver", "disk.csi.example.com"),
        ("CSINode", "n1"),
        ("CSIStorageCapacity", "cap"),
        (VOLUME, "disk-1"),
        (CLAIM, "data"),
        ("VolumeAttachment", "va-1"),
    ]
    assert [n["metadata"]["name"] for n in scenario.nodes] == ["n1"]


def _broken(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``raw`` with the field at dotted ``path`` set to ``value``."""
    *parents, leaf = path.split(".")
    target = raw
    for part in parents:
        target = target.setdefault(part, {})
    target[leaf] = value
    return raw


@pytest.mark.parametrize(
    ("doc", "obj", "reason"),
    [
        pytest.param(
            _broken(volume("disk-1"), "spec.accessModes", "ReadWriteOnce"),
            "PersistentVolume disk-1",
            "spec.accessModes: must be a list of strings",
            id="volume-access-modes",
        ),
        pytest.param(
            _broken(volume("disk-1"), "spec.capacity.storage", "big"),
            "PersistentVolume disk-1",
            f"spec.capacity.storage: {QUANTITY_RULE}, got 'big'",
            id="volume-capacity",
        ),
        pytest.param(
            _broken(volume("disk-1"), "spec.claimRef", "data"),
            "PersistentVolume disk-1",
            "spec.claimRef: must be an object",
            id="volume-claim-ref",
        ),
        pytest.param(
            _broken(claim("data"), "spec.resources.requests.storage", "lots"),
            "PersistentVolumeClaim default/data",
            f"spec.resources.requests.storage: {QUANTITY_RULE}, got 'lots'",
            id="claim-size",
        ),
        pytest.param(
            _broken(claim("data"), "metadata.annotations", {"a": 1}),
            "PersistentVolumeClaim default/data",
            "metadata.annotations: must be a map of strings, got {'a': 1}",
            id="claim-annotation",
        ),
        pytest.param(
            _broken(storage_class("local"), "allowedTopologies", "zone-a"),
            "StorageClass local",
            "allowedTopologies: must be a list",
            id="class-topologies",
        ),
        pytest.param(
            _broken(_csi_node(), "spec.drivers", [{"name": "d", "allocatable": {"count": "9"}}]),
            "CSINode n1",
            "spec.drivers[0].allocatable.count: must be an integer",
            id="csinode-count",
        ),
        pytest.param(
            _broken(_csi_driver(), "metadata.name", ""),
            "CSIDriver #2",
            "metadata.name: must be a non-empty string",
            id="csidriver-name",
        ),
        pytest.param(
            _broken(_capacity(), "capacity", "plenty"),
            "CSIStorageCapacity kube-system/cap",
            f"capacity: {QUANTITY_RULE}, got 'plenty'",
            id="capacity-quantity",
        ),
        pytest.param(
            _broken(_attachment(), "spec.nodeName", 7),
            "VolumeAttachment va-1",
            "spec.nodeName: must be a string, got 7",
            id="attachment-node",
        ),
        pytest.param(
            {**storage_class("local"), "apiVersion": "storage.k8s.io/v1beta1"},
            "StorageClass local",
            None,
            id="storage-api-version",
        ),
    ],
)
def test_malformed_storage_objects_are_named_with_the_field(
    tmp_path: Path, doc: dict[str, Any], obj: str, reason: str | None
) -> None:
    path = write_yaml(tmp_path / "s.yaml", [node("n1"), doc])
    with pytest.raises(ScenarioError) as info:
        load_scenario([path])
    assert (info.value.source, info.value.object) == (str(path), obj)
    if reason is None:
        assert info.value.reason.startswith(
            "unsupported apiVersion/kind storage.k8s.io/v1beta1/StorageClass; supported: "
        )
        assert "StorageClass (storage.k8s.io/v1)" in info.value.reason
    else:
        assert info.value.reason == reason
    assert "\n" not in str(info.value)


def test_a_claim_defined_twice_is_refused(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "s.yaml", [claim("data"), claim("data", size="1Gi")])
    with pytest.raises(ScenarioError) as info:
        load_scenario([path])
    assert str(info.value) == f"{path}: PersistentVolumeClaim default/data: defined more than once"


# Static binding with WaitForFirstConsumer --------------------------------------------------------


def _local_cluster() -> list[dict[str, Any]]:
    return [
        storage_class("local", wait_for_first_consumer=True),
        node("n1"),
        node("n2"),
        node("n3"),
        volume("n1-small", node="n1", size="10Gi"),
        volume("n1-large", node="n1", size="20Gi"),
        volume("n2-huge", node="n2", size="100Gi"),
    ]


def test_static_binding_completes_at_prebind(tmp_path: Path) -> None:
    docs = [*_local_cluster(), claim("db", size="50Gi"), with_claims(pod("db"), "db")]
    result = simulate_volumes(tmp_path, docs)
    rep = report(result, explain=True)

    assert placements(rep)["db"] == ("Bound", "n2")
    bound_claim = stored(result, CLAIM, "default/db")
    assert bound_claim["spec"]["volumeName"] == "n2-huge"
    assert bound_claim["status"]["phase"] == "Bound"
    assert annotations_of(bound_claim)[BIND_COMPLETED_ANNOTATION] == "yes"
    assert annotations_of(bound_claim)[BOUND_BY_CONTROLLER_ANNOTATION] == "yes"
    pv = stored(result, VOLUME, "n2-huge")
    reference = pv["spec"]["claimRef"]
    assert (reference["namespace"], reference["name"]) == ("default", "db")
    assert reference["uid"] == bound_claim["metadata"]["uid"]
    assert pv["status"]["phase"] == "Bound"
    assert stored(result, VOLUME, "n1-small")["status"]["phase"] == "Available"
    assert _rejections(rep, "db") == {"n1": [NO_VOLUME_TO_BIND], "n3": [NO_VOLUME_TO_BIND]}
    # The pod is bound only after the PV controller completed the binding (a PreBind poll).
    scheduled = next(e for e in rep["events"] if e["reason"] == "Scheduled")
    assert scheduled["time"] >= 1


def test_the_smallest_fitting_volume_is_taken_and_burst_pods_never_share_one(
    tmp_path: Path,
) -> None:
    docs = [
        *_local_cluster(),
        claim("a", size="5Gi"),
        claim("b", size="5Gi"),
        with_claims(pod("a", node_selector={"kubernetes.io/hostname": "n1"}), "a"),
        with_claims(pod("b", node_selector={"kubernetes.io/hostname": "n1"}), "b"),
    ]
    result = simulate_volumes(tmp_path, docs)
    assert placements(report(result)) == {"a": ("Bound", "n1"), "b": ("Bound", "n1")}
    assert stored(result, CLAIM, "default/a")["spec"]["volumeName"] == "n1-small"
    assert stored(result, CLAIM, "default/b")["spec"]["volumeName"] == "n1-large"


def test_a_bound_volume_pins_every_pod_that_uses_its_claim(tmp_path: Path) -> None:
    docs = [
        storage_class("local"),
        node("n1"),
        node("n2"),
        volume("n2-disk", node="n2", claim="shared"),
        claim("shared", volume_name="n2-disk"),
        with_claims(pod("first"), "shared"),
        with_claims(pod("second"), "shared"),
        with_claims(pod("elsewhere", node_selector={"kubernetes.io/hostname": "n1"}), "shared"),
    ]
    result = simulate_volumes(tmp_path, docs)
    rep = report(result, explain=True)
    pods = pods_by_name(rep)
    assert (pods["first"]["node"], pods["second"]["node"]) == ("n2", "n2")
    assert pods["elsewhere"]["status"] == "Pending"
    assert pods["elsewhere"]["message"].startswith(
        f"0/2 nodes are available: 1 {AFFINITY_CONFLICT}, "
        "1 node(s) didn't match Pod's node affinity/selector. "
    )
    assert pods["elsewhere"]["message"].endswith(
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert _rejections(rep, "first") == {"n1": [AFFINITY_CONFLICT]}


# Provisioning on the selected node ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("zones", "affinity"),
    [
        pytest.param((), ("kubernetes.io/hostname", "n2"), id="hostname"),
        pytest.param(("b",), (ZONE, "b"), id="allowed-topology"),
    ],
)
def test_wait_for_first_consumer_provisions_on_the_selected_node(
    tmp_path: Path, zones: tuple[str, ...], affinity: tuple[str, str]
) -> None:
    docs = [
        storage_class(
            "fast", provisioner="disk.csi.example.com", wait_for_first_consumer=True, zones=zones
        ),
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={ZONE: "b"}),
        claim("data", storage_class_name="fast", size="8Gi"),
        with_claims(pod("app", node_selector={"kubernetes.io/hostname": "n2"}), "data"),
    ]
    result = simulate_volumes(tmp_path, docs)
    assert placements(report(result))["app"] == ("Bound", "n2")
    provisioned_claim = stored(result, CLAIM, "default/data")
    uid = provisioned_claim["metadata"]["uid"]
    assert annotations_of(provisioned_claim)[SELECTED_NODE_ANNOTATION] == "n2"
    assert provisioned_claim["spec"]["volumeName"] == f"pvc-{uid}"
    assert provisioned_claim["status"]["phase"] == "Bound"
    pv = stored(result, VOLUME, f"pvc-{uid}")
    assert pv["spec"]["capacity"] == {"storage": "8Gi"}
    assert pv["spec"]["storageClassName"] == "fast"
    assert pv["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pv["spec"]["claimRef"]["uid"] == uid
    [term] = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    key, value = affinity
    assert term == {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    assert pv["status"]["phase"] == "Bound"


def test_a_class_without_provisioner_never_gets_a_selected_node(tmp_path: Path) -> None:
    docs = [
        storage_class("local", wait_for_first_consumer=True),
        node("n1"),
        claim("data"),
        with_claims(pod("app"), "data"),
    ]
    result = simulate_volumes(tmp_path, docs)
    rep = report(result)
    assert pods_by_name(rep)["app"]["status"] == "Pending"
    assert pods_by_name(rep)["app"]["message"].startswith(
        f"0/1 nodes are available: 1 {NO_VOLUME_TO_BIND}. "
    )
    pending_claim = stored(result, CLAIM, "default/data")
    assert SELECTED_NODE_ANNOTATION not in annotations_of(pending_claim)
    assert result.cluster.storage[VOLUME] == {}


# Immediate binding -------------------------------------------------------------------------------


def test_immediate_claims_are_bound_before_any_pod_needs_them(tmp_path: Path) -> None:
    docs = [
        storage_class("zonal"),
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={ZONE: "b"}),
        volume(
            "roomy-both-modes",
            storage_class_name="zonal",
            size="10Gi",
            zone="a",
            modes=("ReadWriteOnce", "ReadWriteMany"),
        ),
        volume("big", storage_class_name="zonal", size="200Gi", zone="b"),
        volume("small", storage_class_name="zonal", size="1Gi", zone="a"),
        volume("other-class", storage_class_name="local", size="5Gi", zone="a"),
        claim("archive", storage_class_name="zonal", size="5Gi"),
        with_claims(pod("reporter"), "archive"),
    ]
    result = simulate_volumes(tmp_path, docs)
    rep = report(result, explain=True)
    # Access modes first: a PV offering exactly ReadWriteOnce beats a smaller one offering more.
    assert stored(result, CLAIM, "default/archive")["spec"]["volumeName"] == "big"
    assert stored(result, VOLUME, "big")["metadata"]["annotations"] == {
        BOUND_BY_CONTROLLER_ANNOTATION: "yes"
    }
    assert placements(rep)["reporter"] == ("Bound", "n2")
    assert _rejections(rep, "reporter") == {"n1": [NO_ZONE]}
    assert rep["events"][0]["time"] == 0  # nothing left to bind at PreBind


def test_immediate_claims_are_provisioned_by_a_real_provisioner(tmp_path: Path) -> None:
    docs = [
        storage_class("standard", provisioner="disk.csi.example.com", zones=("b", "c")),
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={ZONE: "b"}),
        claim("data", storage_class_name="standard"),
        with_claims(pod("app"), "data"),
    ]
    result = simulate_volumes(tmp_path, docs)
    uid = stored(result, CLAIM, "default/data")["metadata"]["uid"]
    pv = stored(result, VOLUME, f"pvc-{uid}")
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]}
    ]
    assert SELECTED_NODE_ANNOTATION not in annotations_of(stored(result, CLAIM, "default/data"))
    assert placements(report(result))["app"] == ("Bound", "n2")


def test_an_unbound_immediate_claim_rejects_the_pod_before_filtering(tmp_path: Path) -> None:
    docs = [
        storage_class("zonal"),
        node("n1"),
        claim("nothing-fits", storage_class_name="zonal", size="1Ti"),
        volume("tiny", storage_class_name="zonal", size="1Gi"),
        with_claims(pod("app"), "nothing-fits"),
    ]
    result = simulate_volumes(tmp_path, docs)
    rep = report(result)
    assert pods_by_name(rep)["app"]["message"] == (
        "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    )
    assert stored(result, CLAIM, "default/nothing-fits")["status"] == {"phase": "Pending"}
    assert stored(result, VOLUME, "tiny")["status"] == {"phase": "Available"}


def test_a_claim_without_class_gets_the_default_class(tmp_path: Path) -> None:
    docs = [
        storage_class(
            "standard",
            provisioner="disk.csi.example.com",
            wait_for_first_consumer=True,
            default=True,
        ),
        storage_class("other", provisioner="disk.csi.example.com"),
        node("n1"),
        claim("data", storage_class_name=None),
        claim("explicitly-none", storage_class_name=""),
        with_claims(pod("app"), "data"),
    ]
    result = simulate_volumes(tmp_path, docs)
    assert stored(result, CLAIM, "default/data")["spec"]["storageClassName"] == "standard"
    assert "storageClassName" in stored(result, CLAIM, "default/explicitly-none")["spec"]
    assert stored(result, CLAIM, "default/explicitly-none")["spec"]["storageClassName"] == ""
    assert placements(report(result))["app"] == ("Bound", "n1")


# Generic ephemeral volumes -----------------------------------------------------------------------


def test_an_ephemeral_volume_gets_its_claim_when_the_pod_is_created(tmp_path: Path) -> None:
    docs = [
        storage_class("fast", provisioner="disk.csi.example.com", wait_for_first_consumer=True),
        node("n1"),
        with_ephemeral(pod("job"), "scratch", "fast", size="3Gi"),
    ]
    result = simulate_volumes(tmp_path, docs)
    assert placements(report(result))["job"] == ("Bound", "n1")
    created = stored(result, CLAIM, "default/job-scratch")
    [owner] = created["metadata"]["ownerReferences"]
    pod_uid = result.cluster.pods["default/job"]["metadata"]["uid"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        "job",
        pod_uid,
        True,
    )
    assert created["metadata"]["labels"] == {"purpose": "scratch"}
    assert created["spec"]["resources"] == {"requests": {"storage": "3Gi"}}
    assert created["status"]["phase"] == "Bound"
    assert annotations_of(created)[SELECTED_NODE_ANNOTATION] == "n1"


def test_the_ephemeral_claim_goes_with_its_pod(tmp_path: Path) -> None:
    docs = [
        storage_class("standard", provisioner="disk.csi.example.com"),
        node("n1", cpu="2"),
        with_ephemeral(pod("victim", cpu="2", node_name="n1", priority=1), "scratch", "standard"),
        pod("preemptor", cpu="2", priority=100),
    ]
    watched: list[tuple[str, str, str]] = []
    result = simulate_volumes(tmp_path, docs, watched=watched)
    cluster = result.cluster
    assert placements(report(result)) == {
        "victim": ("Preempted", "n1"),
        "preemptor": ("Bound", "n1"),
    }
    assert "default/victim-scratch" not in cluster.storage[CLAIM]
    # Provisioned with the Delete policy: the volume went with its claim.
    assert cluster.storage[VOLUME] == {}
    names = [(kind, event_type, name) for kind, event_type, name in watched]
    provisioned = next(n for k, t, n in names if (k, t) == (VOLUME, "ADDED"))
    assert names.index((CLAIM, "ADDED", "victim-scratch")) < names.index(
        (VOLUME, "ADDED", provisioned)
    )
    assert [e for e in names if e[1] == "DELETED"] == [
        ("Pod", "DELETED", "victim"),
        (CLAIM, "DELETED", "victim-scratch"),
        (VOLUME, "DELETED", provisioned),
    ]


# What the user reads -----------------------------------------------------------------------------


def test_the_rwop_claim_in_use_keeps_an_equal_priority_pod_pending(tmp_path: Path) -> None:
    docs = [
        storage_class("zonal"),
        node("n1"),
        node("n2"),
        volume("ledger-disk", storage_class_name="zonal", size="1Gi", modes=("ReadWriteOncePod",)),
        claim("ledger", storage_class_name="zonal", size="1Gi", modes=("ReadWriteOncePod",)),
        with_claims(pod("writer", node_name="n1"), "ledger"),
        with_claims(pod("reader"), "ledger"),
    ]
    rep = report(simulate_volumes(tmp_path, docs), explain=True)
    reader = pods_by_name(rep)["reader"]
    assert reader["status"] == "Pending"
    assert reader["message"].startswith(f"0/2 nodes are available: 2 {RWOP_IN_USE}. ")
    assert _rejections(rep, "reader") == {"n1": [RWOP_IN_USE], "n2": [RWOP_IN_USE]}


def test_a_higher_priority_pod_evicts_the_rwop_holder_and_takes_its_node(tmp_path: Path) -> None:
    docs = [
        storage_class("zonal"),
        node("n1"),
        node("n2"),
        node("n3"),
        volume("ledger-disk", storage_class_name="zonal", size="1Gi", modes=("ReadWriteOncePod",)),
        claim("ledger", storage_class_name="zonal", size="1Gi", modes=("ReadWriteOncePod",)),
        with_claims(pod("holder", node_name="n2", priority=1, grace=5), "ledger"),
        with_claims(pod("boss", priority=100), "ledger"),
    ]
    rep = report(simulate_volumes(tmp_path, docs))
    assert placements(rep) == {"holder": ("Preempted", "n2"), "boss": ("Bound", "n2")}
    assert [(p["node"], p["victims"]) for p in rep["preemptions"]] == [("n2", ["default/holder"])]


def test_the_bundled_example_runs_with_volume_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).parents[2] / "operator/kopf_scheduler/scenarios/volumes.yaml"
    assert main(["simulate", str(example), "--explain", "-o", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert placements(rep) == {
        "db-0": ("Bound", "node-b"),
        "cache": ("Bound", "node-a"),
        "reporter": ("Bound", "node-c"),
        "ledger-writer": ("Bound", "node-a"),
        "ledger-reader": ("Pending", None),
        "scratch": ("Bound", placements(rep)["scratch"][1]),
    }
    assert placements(rep)["scratch"][1] in {"node-a", "node-b"}
    assert _rejections(rep, "db-0") == {
        "node-a": [NO_VOLUME_TO_BIND],
        "node-c": [NO_VOLUME_TO_BIND],
    }
    assert _rejections(rep, "reporter") == {"node-a": [NO_ZONE], "node-b": [NO_ZONE]}
    assert _rejections(rep, "ledger-reader") == {
        "node-a": [RWOP_IN_USE],
        "node-b": [RWOP_IN_USE],
        "node-c": [RWOP_IN_USE],
    }
