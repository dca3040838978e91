"""Go template rendering and the objects the runner makes from upstream's templates."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from bench.upstream import manifests, suite
from bench.upstream.gotemplate import TemplateError, render
from e2e.localcluster.cluster import KWOK_NODE_ANNOTATION

from tests.bench.test_upstream_suite import needs_suite


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: pod-{{.Index}}", "name: pod-7"),
        ("memory: {{ div 30000 .Count }}Mi", "memory: 7500Mi"),
        ("zone: z{{ mod .Index 3 }}", "zone: z1"),
        ("group: {{ .Index | div 2 }}", "group: 0"),
        ("n: {{ div (mod .Index 5) 2 }}", "n: 1"),
        ("a:\n  {{- .Index }}", "a:7"),
        ("{{/* a comment */}}x", "x"),
        ("neg: {{ div -7 2 }} {{ mod -7 2 }}", "neg: -3 -1"),
    ],
)
def test_the_actions_upstreams_templates_use(text: str, expected: str) -> None:
    assert render(text, {"Index": 7, "Count": 4}) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ if .Index }}x{{ end }}", "'if' action is not supported"),
        ("{{ printf .Index }}", "function 'printf' is not defined"),
        ("{{ .Missing }}", "no value for .Missing"),
        ("{{ div .Index 0 }}", "divide by zero"),
    ],
)
def test_what_it_cannot_render_faithfully_is_refused(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        render(text, {"Index": 7, "Count": 4})


@needs_suite
def test_every_template_the_six_configs_name_renders_to_an_object() -> None:
    paths: set[Path] = set()
    for test_case in suite.load_all(suite.default_configs()):
        if test_case.default_pod_template:
            paths.add(test_case.default_pod_template)
        for op in test_case.ops:
            for name, value in {**op.fields, **(op.get("createPodsOp") or {})}.items():
                if name.endswith("Path"):
                    paths.add(Path(value))
                elif name.endswith("Paths"):
                    paths.update(Path(item) for item in value)
    assert len(paths) > 80
    for path in paths:
        raw = manifests.from_template(path, index=2, count=5)
        assert raw["apiVersion"] and raw["kind"], path


def test_created_nodes_are_named_labelled_and_managed_by_kwok() -> None:
    node = manifests.prepared_node(manifests.default_node(3), random.Random(1), set())
    name = node["metadata"]["name"]
    assert name.startswith("node-3-") and len(name) == len("node-3-") + 5
    assert "generateName" not in node["metadata"]
    assert node["metadata"]["labels"][manifests.HOSTNAME_LABEL] == name
    assert node["metadata"]["annotations"][KWOK_NODE_ANNOTATION] == "fake"
    named = manifests.prepared_node(
        {"kind": "Node", "metadata": {"name": "scheduler-perf-node"}}, random.Random(1), set()
    )
    assert named["metadata"]["name"] == "scheduler-perf-node"


def test_generated_node_names_never_repeat_one_already_given() -> None:
    template = {"kind": "Node", "metadata": {"generateName": "n-"}}
    first = manifests.prepared_node(template, random.Random(7), set())["metadata"]["name"]
    taken = {first}
    again = manifests.prepared_node(template, random.Random(7), taken)["metadata"]["name"]
    assert again != first
    assert taken == {first, again}
    names: set[str] = set()
    for _ in range(200):  # the same draws every time: each name must be drawn past the others
        manifests.prepared_node(template, random.Random(0), names)
    assert len(names) == 200


def test_extra_allocatable_keeps_what_the_capacity_would_have_given() -> None:
    node = {"status": {"capacity": {"cpu": "4", "pods": "110"}}}
    manifests.with_allocatable(node, {"attachable-volumes-csi-ebs.csi.aws.com": 39})
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "pods": "110",
        "attachable-volumes-csi-ebs.csi.aws.com": "39",
    }


def test_the_csi_node_of_the_allocatable_strategy_is_owned_by_its_node() -> None:
    node = {"metadata": {"name": "n1", "uid": "u1"}}
    strategy = {
        "csiNodeAllocatable": {"ebs.csi.aws.com": {"count": 39}},
        "migratedPlugins": ["kubernetes.io/aws-ebs"],
    }
    csi = manifests.csi_node(node, strategy)
    assert csi["spec"]["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": "n1", "allocatable": {"count": 39}}
    ]
    assert csi["metadata"]["annotations"] == {
        manifests.MIGRATED_PLUGINS_ANNOTATION: "kubernetes.io/aws-ebs"
    }
    assert csi["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_a_bare_priority_comes_with_a_priority_class_of_that_value() -> None:
    template = {"kind": "Pod", "metadata": {}, "spec": {"priority": 10, "containers": []}}
    pod, needed = manifests.for_scheduler(template, "kopf-scheduler")
    assert needed is not None and needed["value"] == 10
    assert pod["spec"]["priorityClassName"] == needed["metadata"]["name"]
    assert pod["spec"]["priority"] == 10
    assert pod["spec"]["schedulerName"] == "kopf-scheduler"
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert template["spec"] == {"priority": 10, "containers": []}


def test_a_pod_without_priority_states_the_zero_admission_would_give_it() -> None:
    pod, needed = manifests.for_scheduler({"kind": "Pod", "spec": {}}, "default-scheduler")
    assert needed is None
    assert pod["spec"]["priority"] == 0
    assert "priorityClassName" not in pod["spec"]


def test_volume_pairs_are_named_as_upstream_names_them_and_bound_with_the_uid() -> None:
    claim_template = {"kind": "PersistentVolumeClaim", "spec": {"accessModes": ["ReadOnlyMany"]}}
    volume_template = {
        "kind": "PersistentVolume",
        "spec": {"csi": {"driver": "ebs.csi.aws.com"}, "capacity": {"storage": "1Gi"}},
    }
    claim, volume = manifests.volume_pair(claim_template, volume_template, "ns", 4)
    assert claim["metadata"]["name"] == "pvc-4"
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"] == "ns-vol-4"
    assert volume["spec"]["csi"]["volumeHandle"] == "ns-vol-4"
    stored = {"metadata": {"name": "pvc-4", "namespace": "ns", "uid": "u-4"}}
    bound = manifests.bind_volume(volume, stored)
    assert bound["spec"]["claimRef"]["uid"] == "u-4"
    assert bound["status"] == {"phase": "Bound"}
    assert manifests.claim_status(claim, volume)["capacity"] == {"storage": "1Gi"}


def test_a_pod_update_keeps_what_admission_added_and_takes_the_rest_from_the_template() -> None:
    live = {
        "spec": {
            "serviceAccountName": "default",
            "schedulingGates": [{"name": "g"}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
                {"key": "mine", "operator": "Exists"},
            ],
        }
    }
    template = {"kind": "Pod", "spec": {"tolerations": [{"key": "new", "operator": "Exists"}]}}
    pod = manifests.pod_update(template, live)
    assert pod["spec"]["serviceAccountName"] == "default"
    assert "schedulingGates" not in pod["spec"]
    assert [t["key"] for t in pod["spec"]["tolerations"]] == ["new", "node.kubernetes.io/not-ready"]
