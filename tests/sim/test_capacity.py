"""``capacity``'s counts on clusters small enough to count by hand: copies of one or several
templates, whole gangs, preemption on and off, a limit, and which nodes ``--drain`` lets go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.config.loader import check_config_file, default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.capacity import (
    STOP_LIMIT,
    STOP_UNSCHEDULABLE,
    CapacityError,
    CapacityResult,
    count_copies,
)
from kopf_scheduler.sim.capacity_report import capacity_review, drain_review
from kopf_scheduler.sim.drain import DrainResult, find_removable_nodes
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from kopf_scheduler.sim.templates import load_template
from tests.sim.support import node, pod, priority_class, write_yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = ROOT / "manifests/base/config.yaml"
Raw = dict[str, Any]


def _count(
    tmp_path: Path,
    cluster: list[Raw],
    templates: list[list[Raw]],
    *,
    config_path: Path | None = None,
    **options: Any,
) -> CapacityResult:
    scenario = load_scenario([write_yaml(tmp_path / "cluster.yaml", cluster)])
    loaded = [
        load_template(write_yaml(tmp_path / f"template-{i}.yaml", docs))
        for i, docs in enumerate(templates)
    ]
    config = check_config_file(config_path).config if config_path else default_config()
    return sim_loop.run(count_copies(config, scenario, loaded, **options))


def _template(name: str, cpu: str, **options: Any) -> Raw:
    return pod(name, cpu=cpu, scheduler=None, **options)


def test_copies_fill_the_free_cpu_of_every_node(tmp_path: Path) -> None:
    cluster = [
        node("a", cpu="4"),
        node("b", cpu="3"),
        node("c", cpu="2"),
        pod("busy-a", cpu="1500m", node_name="a"),
        pod("busy-c", cpu="2", node_name="c"),
    ]
    result = _count(tmp_path, cluster, [[_template("web", "1")]])
    # Free: a 2.5 CPU (2 copies), b 3 (3 copies), c 0.
    assert result.total == 5
    assert dict(result.counts[0].nodes) == {"a": 2, "b": 3}
    assert result.stop_type == STOP_UNSCHEDULABLE
    assert result.stop_message == "0/3 nodes are available: 3 Insufficient cpu."
    assert dict(result.counts[0].fail_summary) == {"Insufficient cpu": 3}


def test_several_templates_take_turns_until_the_first_fails(tmp_path: Path) -> None:
    cluster = [node("a", cpu="5")]
    result = _count(tmp_path, cluster, [[_template("big", "2")], [_template("small", "1")]])
    # big, small, big use 5 CPU; the next small finds none.
    assert [(count.template.name, count.copies) for count in result.counts] == [
        ("big", 2),
        ("small", 1),
    ]
    review = capacity_review(result)
    assert review["status"]["replicas"] == 3
    assert [pod["failSummary"] for pod in review["status"]["pods"]] == [
        None,
        [{"reason": "Insufficient cpu", "count": 1}],
    ]


def test_a_gang_counts_only_in_whole_groups(tmp_path: Path) -> None:
    cluster = [node("a", cpu="4"), node("b", cpu="4"), node("c", cpu="4")]
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"minMember": 4, "scheduleTimeoutSeconds": 10},
    }
    worker = _template("worker", "2", labels={"scheduling.x-k8s.io/pod-group": "train"})
    result = _count(tmp_path, cluster, [[group, worker]], config_path=SHIPPED_CONFIG)
    # Six 2-CPU slots: one gang of four; the second gang's four members find only two slots.
    count = result.counts[0]
    assert count.copies == 1
    assert count.nodes.total() == 4
    assert result.stop_type == STOP_UNSCHEDULABLE
    assert capacity_review(result)["status"]["pods"][0]["podGroups"] == 1


def test_a_gang_template_needs_coscheduling(tmp_path: Path) -> None:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"minMember": 2},
    }
    worker = _template("worker", "1", labels={"scheduling.x-k8s.io/pod-group": "train"})
    with pytest.raises(CapacityError, match="needs a profile that enables Coscheduling"):
        _count(tmp_path, [node("a")], [[group, worker]])


def test_preemption_counts_room_taken_from_lower_priority_pods(tmp_path: Path) -> None:
    cluster = [
        priority_class("high", 1000),
        node("a", cpu="2"),
        pod("low", cpu="2", node_name="a", priority=0),
    ]
    template = [_template("urgent", "1", priority_class="high")]
    assert _count(tmp_path, cluster, [template]).total == 0
    result = _count(tmp_path, cluster, [template], preemption=True)
    assert result.total == 2
    assert result.preempted == ["default/low"]


def test_the_limit_stops_the_count(tmp_path: Path) -> None:
    result = _count(tmp_path, [node("a", cpu="8")], [[_template("web", "1")]], max_limit=3)
    assert result.total == 3
    assert result.stop_type == STOP_LIMIT


def test_a_deployment_is_copied_from_its_pod_template(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {
                    "nodeSelector": {"disk": "ssd"},
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
        },
    }
    cluster = [node("a", cpu="4", labels={"disk": "ssd"}), node("b", cpu="4")]
    result = _count(tmp_path, cluster, [[deployment]])
    assert dict(result.counts[0].nodes) == {"a": 4}
    assert result.stop_message == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector."
    )


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        (
            [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}],
            "ConfigMap cm: not a pod template (apiVersion/kind v1/ConfigMap)",
        ),
        (
            [pod("one", scheduler=None), pod("two", scheduler=None)],
            "file: holds 2 pod templates and 0 PodGroups",
        ),
        (
            [pod("w", scheduler=None, labels={"scheduling.x-k8s.io/pod-group": "g"})],
            "Pod w: belongs to PodGroup g",
        ),
        (
            [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "metadata": {"name": "db"},
                    "spec": {
                        "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
                    },
                }
            ],
            "StatefulSet db: spec.volumeClaimTemplates",
        ),
        (
            [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}],
            "Job j: spec.template.spec is missing",
        ),
    ],
)
def test_a_file_that_is_no_pod_template_is_named(
    tmp_path: Path, docs: list[Raw], message: str
) -> None:
    path = write_yaml(tmp_path / "t.yaml", docs)
    with pytest.raises(ScenarioError) as caught:
        load_template(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def _drain(tmp_path: Path, cluster: list[Raw]) -> DrainResult:
    scenario = load_scenario([write_yaml(tmp_path / "cluster.yaml", cluster)])
    return sim_loop.run(find_removable_nodes(default_config(), scenario))


def _daemon(name: str, node_name: str) -> Raw:
    raw = pod(name, cpu="100m", node_name=node_name)
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-1"}
    ]
    return raw


def test_drain_keeps_the_nodes_whose_pods_find_room_elsewhere(tmp_path: Path) -> None:
    cluster = [
        node("a", cpu="8"),
        node("b", cpu="4"),
        node("c", cpu="2"),
        pod("on-a", cpu="3", node_name="a"),
        pod("on-b", cpu="2", node_name="b"),
        pod("on-c", cpu="1", node_name="c"),
        _daemon("agent-a", "a"),
        _daemon("agent-b", "b"),
        _daemon("agent-c", "c"),
    ]
    result = _drain(tmp_path, cluster)
    # Largest first. a: its 3 CPU pod fits neither b (1.9 free) nor c (0.9 free).
    # b: its pod goes to a (4.9 free). c (with b gone): its pod and b's fit a (2.9, then 1.9).
    assert [(entry.node, entry.removable) for entry in result.nodes] == [
        ("a", False),
        ("b", True),
        ("c", True),
    ]
    review = drain_review(result)
    assert review["removableNodes"] == ["b", "c"]
    entries = {entry["nodeName"]: entry for entry in review["nodes"]}
    assert entries["a"]["blockingPod"] == "default/on-a"
    assert entries["a"]["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert entries["b"]["movedPods"] == [{"pod": "default/on-b", "nodeName": "a"}]
    assert entries["b"]["podsLeavingWithNode"] == ["default/agent-b"]
    assert entries["c"]["movedPods"] == [{"pod": "default/on-c", "nodeName": "a"}]


def test_a_pod_saved_from_a_cluster_is_copied_without_its_identity(tmp_path: Path) -> None:
    saved = pod("web-7d9f", cpu="1", node_name="a")
    saved["metadata"].update(uid="0b5c-uid", resourceVersion="4711", generateName="web-")
    saved["status"] = {"phase": "Running"}
    result = _count(tmp_path, [node("a", cpu="3"), node("b", cpu="2")], [[saved]])
    # Each copy is a pod of its own: 3 on a and 2 on b.
    assert result.total == 5


def test_a_copy_evicted_by_a_later_copy_of_higher_priority_is_not_counted(
    tmp_path: Path,
) -> None:
    cluster = [priority_class("high", 1000), node("a", cpu="2")]
    low = [_template("low", "1")]
    high = [_template("high", "2", priority_class="high")]
    result = _count(tmp_path, cluster, [low, high], preemption=True)
    # low-0 takes 1 CPU; high-1 needs both and evicts it; low-2 finds no room and may not evict.
    assert [(count.template.name, count.copies) for count in result.counts] == [
        ("low", 0),
        ("high", 1),
    ]
    assert result.preempted == ["default/low-0"]
    assert capacity_review(result)["status"]["replicas"] == 1
