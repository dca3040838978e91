"""Workloads in a scenario become the pods their controllers create: named, labelled and owned as
kube-controller-manager makes them, admitted like a scenario's own pods, and a StatefulSet's
OrderedReady pods one after the other."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.service.whatif import cluster_scenario
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.capacity import count_copies
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from kopf_scheduler.sim.templates import load_template
from kopf_scheduler.sim.workloads import ALPHABET
from tests.sim.support import node, pdb, pod, priority_class, simulate, write_yaml
from tests.sim.test_whatif_storage import ListOnlyApi
from tests.sim.volume_support import storage_class, volume

Raw = dict[str, Any]
SUFFIX = f"[{ALPHABET}]{{5}}"


def _template(labels: dict[str, str], cpu: str = "1", **spec: Any) -> Raw:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"labels": labels}, "spec": {"containers": [container], **spec}}


def deployment(name: str, replicas: int | None = None, **template_spec: Any) -> Raw:
    spec: Raw = {
        "selector": {"matchLabels": {"app": name}},
        "template": _template({"app": name}, **template_spec),
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def replica_set(name: str, replicas: int | None = None) -> Raw:
    raw = deployment(name, replicas)
    raw["kind"] = "ReplicaSet"
    return raw


def stateful_set(
    name: str, replicas: int, *, parallel: bool = False, claims: tuple[str, ...] = ()
) -> Raw:
    spec: Raw = {
        "replicas": replicas,
        "serviceName": f"{name}-headless",
        "selector": {"matchLabels": {"app": name}},
        "template": _template({"app": name, "tier": "data"}),
        "volumeClaimTemplates": [
            {
                "metadata": {"name": claim},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "local",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            for claim in claims
        ],
    }
    if parallel:
        spec["podManagementPolicy"] = "Parallel"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def job(name: str, **spec: Any) -> Raw:
    template = _template({}, restartPolicy="Never")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"template": template, **spec},
    }


def _pods(tmp_path: Path, *docs: Raw) -> list[Raw]:
    return load_scenario([write_yaml(tmp_path / "s.yaml", docs)]).pending_pods


def _names(pods: list[Raw]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_a_deployment_becomes_one_replica_sets_pods(tmp_path: Path) -> None:
    pods = _pods(tmp_path, deployment("web", 3))
    template_hash = pods[0]["metadata"]["labels"]["pod-template-hash"]
    assert re.fullmatch(f"[{ALPHABET}]+", template_hash)
    for raw in pods:
        assert re.fullmatch(f"web-{template_hash}-{SUFFIX}", raw["metadata"]["name"])
        assert raw["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
        (owner,) = raw["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == (
            "ReplicaSet",
            f"web-{template_hash}",
            True,
        )
    assert len(set(_names(pods))) == 3
    assert _names(_pods(tmp_path, deployment("web", 3))) == _names(pods)
    changed = _pods(tmp_path, deployment("web", 3, cpu="2"))
    assert changed[0]["metadata"]["labels"]["pod-template-hash"] != template_hash


def test_replica_set_defaults_to_one_replica_and_owns_it(tmp_path: Path) -> None:
    (raw,) = _pods(tmp_path, replica_set("cache"))
    assert re.fullmatch(f"cache-{SUFFIX}", raw["metadata"]["name"])
    assert raw["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert raw["metadata"]["ownerReferences"][0]["name"] == "cache"


def test_paused_deployment_and_zero_replicas_make_no_pods(tmp_path: Path) -> None:
    paused = deployment("web", 2)
    paused["spec"]["paused"] = True
    assert _pods(tmp_path, paused, replica_set("none", 0), pod("plain")) == _pods(
        tmp_path, pod("plain")
    )


def test_parallel_stateful_set_pods_and_claims(tmp_path: Path) -> None:
    scenario = load_scenario(
        [write_yaml(tmp_path / "s.yaml", [stateful_set("db", 2, parallel=True, claims=("data",))])]
    )
    assert _names(scenario.pending_pods) == ["db-0", "db-1"]
    assert scenario.waiting_pods == []
    claims = {c["metadata"]["name"]: c for c in scenario.storage}
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert claims["data-db-1"]["metadata"]["labels"] == {"app": "db"}
    second = scenario.pending_pods[1]
    labels = second["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert re.fullmatch(f"db-[{ALPHABET}]+", labels["controller-revision-hash"])
    assert second["spec"]["hostname"] == "db-1"
    assert second["spec"]["subdomain"] == "db-headless"
    assert second["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}}
    ]
    assert second["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"


def test_ordered_ready_pods_wait_for_the_ones_before_them(tmp_path: Path) -> None:
    # Room for two pods of one CPU: db-2 cannot be scheduled, so db-3 is never created, and
    # neither is its claim.
    docs = [
        node("n1", cpu="2"),
        storage_class("local", wait_for_first_consumer=True),
        *(volume(f"disk-{i}", node="n1", size="1Gi") for i in range(4)),
        stateful_set("db", 4, claims=("data",)),
    ]
    path = write_yaml(tmp_path / "s.yaml", docs)
    scenario = load_scenario([path])
    assert _names(scenario.pending_pods) == ["db-0"]
    result = simulate([path])
    cluster = result.cluster
    assert sorted(cluster.pods) == ["default/db-0", "default/db-1", "default/db-2"]
    assert [cluster.pods[f"default/db-{i}"]["spec"].get("nodeName") for i in range(3)] == [
        "n1",
        "n1",
        None,
    ]
    assert sorted(cluster.objects("PersistentVolumeClaim")) == [
        "default/data-db-0",
        "default/data-db-1",
        "default/data-db-2",
    ]
    assert result.pending_order == ["default/db-0", "default/db-1", "default/db-2"]


def test_an_existing_claim_is_taken_as_it_is(tmp_path: Path) -> None:
    existing = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-db-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}},
    }
    path = write_yaml(tmp_path / "s.yaml", [existing, stateful_set("db", 1, claims=("data",))])
    (claim,) = load_scenario([path]).storage
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"


def test_indexed_job_pods(tmp_path: Path) -> None:
    pods = _pods(tmp_path, job("train", parallelism=3, completions=2, completionMode="Indexed"))
    assert len(pods) == 2
    for index, raw in enumerate(pods):
        metadata = raw["metadata"]
        assert re.fullmatch(f"train-{index}-{SUFFIX}", metadata["name"])
        assert metadata["labels"] == {
            "job-name": "train",
            "batch.kubernetes.io/job-name": "train",
            "controller-uid": "uid-train",
            "batch.kubernetes.io/controller-uid": "uid-train",
            "batch.kubernetes.io/job-completion-index": str(index),
        }
        assert metadata["annotations"] == {"batch.kubernetes.io/job-completion-index": str(index)}
        assert metadata["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert metadata["ownerReferences"][0]["uid"] == "uid-train"
        assert raw["spec"]["hostname"] == f"train-{index}"
        assert raw["spec"]["restartPolicy"] == "Never"
        assert raw["spec"]["containers"][0]["env"] == [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']",
                    }
                },
            }
        ]


def test_job_parallelism_and_suspension(tmp_path: Path) -> None:
    pods = _pods(tmp_path, job("work", parallelism=4))
    assert len(pods) == 4
    assert all(re.fullmatch(f"work-{SUFFIX}", name) for name in _names(pods))
    assert len(_pods(tmp_path, job("one"))) == 1
    assert _pods(tmp_path, job("held", parallelism=2, suspend=True)) == []


def test_workload_pods_are_admitted_like_plain_pods(tmp_path: Path) -> None:
    web = deployment("web", 1)
    web["spec"]["template"]["spec"]["priorityClassName"] = "gold"
    docs = [
        node("n1"),
        priority_class("gold", 1000),
        priority_class("base", 5, global_default=True),
    ]
    result = simulate([write_yaml(tmp_path / "s.yaml", [*docs, web, job("batch")])])
    by_owner = {
        raw["metadata"]["ownerReferences"][0]["kind"]: raw for raw in result.cluster.pods.values()
    }
    assert by_owner["ReplicaSet"]["spec"]["priority"] == 1000
    assert by_owner["Job"]["spec"]["priority"] == 5
    assert by_owner["Job"]["spec"]["priorityClassName"] == "base"
    assert all(raw["spec"].get("nodeName") == "n1" for raw in by_owner.values())


def test_controller_selectors_spread_the_pods_by_default(tmp_path: Path) -> None:
    # node-a is so much larger that the resource scores alone put all six pods on it (as they do
    # for the same pods without an owner); the ReplicaSet's selector brings in PodTopologySpread's
    # default constraints, which spread them.
    docs = [node("node-a", cpu="64", memory="128Gi"), node("node-b", cpu="8", memory="16Gi")]
    owned = replica_set("web", 6)
    owned["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"
    spread = simulate([write_yaml(tmp_path / "owned.yaml", [*docs, owned])])
    nodes = [raw["spec"]["nodeName"] for raw in spread.cluster.pods.values()]
    assert sorted(nodes) == ["node-a"] * 3 + ["node-b"] * 3
    bare = [pod(f"web-{i}", cpu="100m", labels={"app": "web"}) for i in range(6)]
    alone = simulate([write_yaml(tmp_path / "bare.yaml", [*docs, *bare])])
    assert {raw["spec"]["nodeName"] for raw in alone.cluster.pods.values()} == {"node-a"}


def test_a_pdb_over_a_replica_set_counts_its_replicas(tmp_path: Path) -> None:
    # Three running replicas, maxUnavailable 1, two preemptors. Once the first victim is gone,
    # the disruption controller still expects the ReplicaSet's three pods: no disruption is
    # allowed, so the second preemption violates the budget.
    web = replica_set("web", 3)
    web["spec"]["template"]["spec"].update(nodeName="n1", terminationGracePeriodSeconds=0)
    docs = [
        node("n1", cpu="3"),
        web,
        pdb("web", {"app": "web"}, max_unavailable=1),
        pod("urgent-1", priority=100),
        pod("urgent-2", priority=100),
    ]
    report = build_report(simulate([write_yaml(tmp_path / "s.yaml", docs)]))
    assert [(p["preemptor"], p["pdbViolations"]) for p in report["preemptions"]] == [
        ("default/urgent-1", 0),
        ("default/urgent-2", 1),
    ]


def test_generated_names_avoid_the_scenarios_pods(tmp_path: Path) -> None:
    first = _names(_pods(tmp_path, replica_set("cache", 1)))
    pods = _pods(tmp_path, replica_set("cache", 1), pod(first[0]))
    assert first[0] not in _names(pods[:1])
    assert _names(pods)[1] == first[0]


def _broken(kind_maker: Any, change: Any) -> Raw:
    raw = cast(Raw, kind_maker())
    change(raw["spec"])
    return raw


BAD = [
    pytest.param(
        _broken(lambda: deployment("web"), lambda s: s.pop("template")),
        "Deployment default/web",
        "spec.template: Required value",
        id="no-template",
    ),
    pytest.param(
        _broken(
            lambda: replica_set("rs"), lambda s: s.update(selector={"matchLabels": {"a": "b"}})
        ),
        "ReplicaSet default/rs",
        'spec.template.metadata.labels: Invalid value: {"app":"rs"}: `selector` does not match '
        "template `labels`",
        id="selector-mismatch",
    ),
    pytest.param(
        _broken(lambda: deployment("web"), lambda s: s.update(selector={})),
        "Deployment default/web",
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
        id="empty-selector",
    ),
    pytest.param(
        _broken(lambda: stateful_set("db", 1), lambda s: s.update(replicas=-1)),
        "StatefulSet default/db",
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        id="negative-replicas",
    ),
    pytest.param(
        _broken(lambda: job("j"), lambda s: s["template"]["spec"].pop("restartPolicy")),
        "Job default/j",
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        id="job-restart-policy",
    ),
    pytest.param(
        _broken(lambda: job("j"), lambda s: s.update(parallelism=2, completionMode="Indexed")),
        "Job default/j",
        "spec.completions: Required value: when completion mode is Indexed",
        id="indexed-without-completions",
    ),
    pytest.param(
        _broken(
            lambda: deployment("web"),
            lambda s: s["template"]["spec"]["containers"][0]["resources"]["requests"].update(
                cpu="-1"
            ),
        ),
        "Deployment default/web",
        'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be '
        "greater than or equal to 0",
        id="negative-request-in-template",
    ),
    pytest.param(
        _broken(lambda: stateful_set("db", 1), lambda s: s["template"]["spec"].pop("containers")),
        "StatefulSet default/db",
        "spec.template.spec.containers: Required value",
        id="no-containers",
    ),
    pytest.param(
        _broken(
            lambda: stateful_set("db", 1, claims=("data",)),
            lambda s: s["volumeClaimTemplates"][0]["spec"]["resources"]["requests"].update(
                storage="-1Gi"
            ),
        ),
        "StatefulSet default/db",
        'spec.volumeClaimTemplates[0].spec.resources.requests[storage]: Invalid value: "-1Gi": '
        "must be greater than or equal to 0",
        id="negative-claim-size",
    ),
]


@pytest.mark.parametrize(("workload", "obj", "reason"), BAD)
def test_bad_workloads_get_one_line_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workload: Raw, obj: str, reason: str
) -> None:
    path = write_yaml(tmp_path / "s.yaml", [node("n1"), workload])
    with pytest.raises(ScenarioError) as info:
        load_scenario([path])
    assert (info.value.object, info.value.reason) == (obj, reason)
    assert main(["simulate", str(path)]) == 2
    assert capsys.readouterr().err == f"error: {path}: {obj}: {reason}\n"


def test_what_if_adds_a_workloads_pods(tmp_path: Path) -> None:
    api = ListOnlyApi({"/api/v1/nodes": [node("n1")]}, frozenset())
    path = write_yaml(tmp_path / "add.yaml", [deployment("web", 2), stateful_set("db", 2)])
    scenario, keys = asyncio.run(cluster_scenario(cast(Api, api), [path]))
    assert keys[2:] == ["default/db-0", "default/db-1"]
    assert all(re.fullmatch(f"default/web-[{ALPHABET}]+-{SUFFIX}", key) for key in keys[:2])
    assert [w.pod["metadata"]["name"] for w in scenario.waiting_pods] == ["db-1"]


def test_the_bundled_example_shows_ordered_creation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--example", "workloads", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    placed = {p["name"]: (p["status"], p["node"]) for p in report["pods"]}
    assert {name: placed[name] for name in ("db-0", "db-1", "db-2")} == {
        "db-0": ("Bound", "node-a"),
        "db-1": ("Bound", "node-b"),
        "db-2": ("Pending", None),
    }
    assert "db-3" not in placed
    assert sum(1 for name in placed if re.fullmatch(f"train-[0-3]-{SUFFIX}", name)) == 4
    web = [name for name in placed if name.startswith("web-")]
    assert len(web) == 2
    assert all(placed[name][0] == "Bound" for name in web)
    assert report["summary"]["bound"] == 8


def test_capacity_counts_what_a_scenarios_workloads_leave_free(tmp_path: Path) -> None:
    # A 4-CPU node with a 3-replica Deployment of 1 CPU each: one more 1-CPU pod fits.
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", cpu="4"), deployment("web", 3)])
    extra = write_yaml(tmp_path / "extra.yaml", [pod("extra", cpu="1", scheduler=None)])
    result = sim_loop.run(
        count_copies(default_config(), load_scenario([cluster]), [load_template(extra)])
    )
    assert result.total == 1
