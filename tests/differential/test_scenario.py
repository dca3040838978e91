"""Scenario files: checks with one-line reasons, rendering for a run, removal of objects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from differential.generator import claim, local_volume, node, node_selector_term, pod
from differential.generator import priority_class as catalogue_class
from differential.generator import storage_class as catalogue_storage
from differential.scenario import (
    OWNER_LABEL,
    Scenario,
    ScenarioError,
    Wave,
    dump,
    from_document,
    load,
    render,
    start_time,
    to_document,
    without,
)


def small() -> Scenario:
    running = pod("r01-web", "web", 500, grace=1)
    running["spec"]["nodeName"] = "node-0"
    running["spec"]["priorityClassName"] = "diff-p10"
    pending = pod("p01-db", "db", 1000, grace=1)
    pending["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "c1"}}]
    volume = local_volume(
        "pv-1",
        1,
        node_selector_term("kubernetes.io/hostname", ["node-0"]),
        access_mode="ReadWriteOncePod",
        class_name="diff-wffc",
        labels={},
    )
    volume["spec"]["claimRef"] = {"name": "c1"}
    return Scenario(
        name="small",
        priority_classes=[catalogue_class("diff-p10")],
        storage_classes=[catalogue_storage("diff-wffc")],
        nodes=[node("node-0", "zone-a", 4, 8, 110, {})],
        volumes=[volume],
        claims=[claim("c1", 1, access_mode="ReadWriteOncePod", class_name="diff-wffc")],
        running=[running],
        waves=[Wave(0.0, pods=[pending], backlog=True)],
    )


def test_a_scenario_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(dump(small()))
    assert to_document(load(path)) == to_document(small())


def _broken(change: str) -> dict[str, Any]:
    document = to_document(small())
    if change == "namespace":
        document["running"][0]["metadata"]["namespace"] = "default"
    elif change == "scheduler":
        document["waves"][0]["pods"][0]["spec"]["schedulerName"] = "other"
    elif change == "priority":
        document["running"][0]["spec"]["priority"] = 10
    elif change == "node":
        document["running"][0]["spec"]["nodeName"] = "node-9"
    elif change == "class":
        document["waves"][0]["pods"][0]["spec"]["priorityClassName"] = "gold"
    elif change == "bound-pending":
        document["waves"][0]["pods"][0]["spec"]["nodeName"] = "node-0"
    elif change == "duplicate":
        document["waves"][0]["pods"].append(copy.deepcopy(document["running"][0]))
        del document["waves"][0]["pods"][-1]["spec"]["nodeName"]
    elif change == "kind":
        document["nodes"].append(document["running"][0])
    elif change == "quantity":
        document["running"][0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    elif change == "claim-ref":
        document["persistentVolumes"][0]["spec"]["claimRef"]["name"] = "c9"
    elif change == "storage-class":
        document["claims"][0]["spec"]["storageClassName"] = "gold"
    elif change == "unknown-key":
        document["extra"] = 1
    elif change == "wave":
        document["waves"][0]["afterSeconds"] = -1
    elif change == "late-backlog":
        document["waves"].append({"afterSeconds": 1, "backlog": True, "pods": []})
    elif change == "gap":
        document["waves"][0]["gapSeconds"] = "soon"
    elif change == "csi-node":
        document["csiNodes"] = [csi_node("node-9")]
    elif change == "attachment-node":
        document["volumeAttachments"] = [attachment("va", "node-9", "pv-1")]
    elif change == "attachment-volume":
        document["volumeAttachments"] = [attachment("va", "node-0", "pv-9")]
    return document


def csi_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": "ebs.csi.example.com", "nodeID": name}]},
    }


def attachment(name: str, node_name: str, volume: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {
            "attacher": "ebs.csi.example.com",
            "nodeName": node_name,
            "source": {"persistentVolumeName": volume},
        },
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param("namespace", "Pod r01-web: metadata.namespace: leave it out", id="namespace"),
        pytest.param("scheduler", "Pod p01-db: spec.schedulerName: leave it out", id="scheduler"),
        pytest.param("priority", "Pod r01-web: give the priority as priorityClassName", id="prio"),
        pytest.param("node", "Pod r01-web: spec.nodeName: 'node-9' is not a node", id="node"),
        pytest.param("class", "Pod p01-db: no PriorityClass 'gold' in the scenario", id="class"),
        pytest.param("bound-pending", "Pod p01-db: pods of a wave are pending", id="bound"),
        pytest.param("duplicate", "Pod r01-web: defined more than once", id="duplicate"),
        pytest.param("kind", "nodes[1]: must be a Node (v1)", id="kind"),
        pytest.param("quantity", "Pod r01-web: spec.containers[0].resources", id="quantity"),
        pytest.param("claim-ref", "spec.claimRef names 'c9', which is not a claim", id="ref"),
        pytest.param("storage-class", "no StorageClass 'gold' in the scenario", id="storage"),
        pytest.param("unknown-key", "unknown keys ['extra']", id="unknown-key"),
        pytest.param("wave", "waves[0]: afterSeconds: must be a number >= 0", id="wave"),
        pytest.param("late-backlog", "waves[1]: only the first wave can be a backlog", id="late"),
        pytest.param("gap", "waves[0]: gapSeconds: must be a number >= 0", id="gap"),
        pytest.param("csi-node", "CSINode node-9: a CSINode is named after its node", id="csi"),
        pytest.param(
            "attachment-node", "VolumeAttachment va: spec.nodeName: 'node-9' is not a node", id="va"
        ),
        pytest.param(
            "attachment-volume", "persistentVolumeName: 'pv-9' is not a PV of the", id="va-pv"
        ),
    ],
)
def test_a_broken_scenario_is_reported_in_one_line(change: str, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        from_document(_broken(change), "case.yaml")
    text = str(error.value)
    assert text.startswith("case.yaml: ")
    assert message in text
    assert "\n" not in text


def test_a_file_that_is_not_yaml_is_reported_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: not valid YAML: ") as error:
        load(path)
    assert "\n" not in str(error.value)


def test_render_fills_in_the_run_and_leaves_the_scenario_alone() -> None:
    scenario = small()
    before = to_document(scenario)
    rendered = render(scenario, "diff-x", "default-scheduler")
    assert to_document(scenario) == before
    assert rendered.running[0]["metadata"]["namespace"] == "diff-x"
    assert rendered.running[0]["spec"]["schedulerName"] == "default-scheduler"
    assert rendered.waves[0].pods[0]["spec"]["schedulerName"] == "default-scheduler"
    assert rendered.waves[0].backlog
    assert rendered.claims[0]["metadata"]["namespace"] == "diff-x"
    assert rendered.volumes[0]["spec"]["claimRef"] == {
        "name": "c1",
        "namespace": "diff-x",
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
    }
    for obj in [*rendered.nodes, *rendered.volumes, *rendered.cluster_objects]:
        assert obj["metadata"]["labels"][OWNER_LABEL] == "true"


def test_csi_nodes_and_attachments_round_trip_and_are_owned_in_a_run(tmp_path: Path) -> None:
    scenario = small()
    scenario.csi_nodes = [csi_node("node-0")]
    scenario.attachments = [attachment("va", "node-0", "pv-1")]
    path = tmp_path / "attached.yaml"
    path.write_text(dump(scenario))
    loaded = load(path)
    assert loaded.csi_nodes == scenario.csi_nodes
    assert loaded.attachments == scenario.attachments
    rendered = render(loaded, "diff-x", "default-scheduler")
    assert [obj["metadata"]["labels"][OWNER_LABEL] for obj in rendered.csi_nodes] == ["true"]
    assert [obj["metadata"]["labels"][OWNER_LABEL] for obj in rendered.attachments] == ["true"]


def test_start_times_follow_the_order_of_running_pods_a_second_apart() -> None:
    assert [start_time(i) for i in range(3)] == [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:01Z",
        "2025-01-01T00:00:02Z",
    ]


def test_without_drops_objects_and_keeps_waves() -> None:
    reduced = without(small(), [("Pod", "p01-db"), ("PersistentVolumeClaim", "c1")])
    assert reduced.claims == []
    assert len(reduced.waves) == 1
    assert reduced.waves[0].pods == []
    assert [p["metadata"]["name"] for p in reduced.running] == ["r01-web"]
    assert len(small().claims) == 1
