"""The Helm chart and the kustomize manifests on a real node, the way an admin deploys them.

Everywhere else the Deployment's pods never run (kwok only pretends), so what only a real
kubelet checks stays unproven: the image starts from the runtime's store under the pod's
security context, the ServiceAccount token and ``kube-root-ca.crt`` are mounted and trusted,
the in-cluster client reaches the API server through the ``kubernetes`` Service IP, the
probes pass, and deleting the leader's pod really stops its process. This module starts a
control plane of its own with two kwok nodes and the real node of
``e2e/localcluster/realnode.py`` (kubelet + containerd, the project's image imported), then,
once with ``helm install`` and once with ``kubectl apply -k`` of an overlay:

* two replicas Running and Ready on the real node, in containerd, exactly one of them leading
  through the Lease ``kopf-scheduler`` (each replica's ``/readyz`` says which);
* a pod that opts in (on the real node, so that it runs there too) is bound, with a
  ``Scheduled`` event from kopf-scheduler;
* meanwhile the API server dispatched the replicas' requests through the deployment's
  FlowSchemas (kube-scheduler's priority levels), none through the bootstrap
  ``service-accounts`` one (its ``apiserver_flowcontrol_dispatched_requests_total``);
* the leader's pod is deleted in the middle of a burst of opted-in pods: the other replica
  takes the Lease, and the pod watch shows every pod of the burst bound exactly once, none
  lost.

The chart's configuration check (a pre-install/pre-upgrade hook Job running the image's
``config validate``) runs on the real node too: the install passes it, and an upgrade to a
configuration only the validator refuses (a misspelt plugin) fails with the validator's line in
helm's output, the hook's objects deleted and the Deployment, its ConfigMap and its pods as they
were. ``helm test`` passes on the install: its pod asks for the installed scheduler, which places
it on the real node (the pod takes the replicas' nodeSelector), where it runs to completion.

The replicas get a nodeSelector for the real node (chart value, overlay patch): without it
the upstream kube-scheduler may place them on kwok nodes, where nothing runs them (the
configuration check's pod takes the chart's value too; on a kwok node it would "succeed"
without running). The
chart's and the manifests' spreading is soft (ScheduleAnyway, preferred anti-affinity), so
both replicas fit on the one real node; their CPU request is lowered to a tenth of the default
whole CPU (chart value, overlay patch), since two whole CPUs are all the node has.

Marked ``real_node`` and run only when that marker is selected (``make e2e-real-node``):
it needs root and starts containerd, a kubelet and a control plane beside the suite's, which
the plain ``make e2e`` run should not pay for twice. Skipped, with the reason, where the
machine cannot run a real node or no Docker engine holds the image.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from e2e.localcluster import LocalCluster, unverified_tls
from e2e.localcluster.build import ensure_helm
from e2e.localcluster.realnode import NODE_NAME, PAUSE_IMAGE, RealNode, cannot_run
from e2e.support import LEASE_NAME, SCHEDULER_NAME
from e2e.support.container import build_image, docker_unavailable
from e2e.support.kubectl import Kubectl, condition, events_for, node_name, occurrences
from e2e.support.polling import wait_until
from e2e.support.watch import PodWatch

pytestmark = pytest.mark.real_node

NAMESPACE = "kopf-scheduler"  # the manifests' namespace; the chart is installed into it too
WORKLOADS = "real-node-workloads"
REPLICAS_TIMEOUT = 240.0
HANDOVER_TIMEOUT = 60.0
BURST = 10  # pods created before the leader's pod is deleted, and again after
KWOK_NODES = 2
ON_REAL_NODE = {"kubernetes.io/hostname": NODE_NAME}


@dataclass
class Deployed:
    """The replicas a deployment method started, and how long they took to be Ready."""

    replicas_ready_seconds: float
    pods: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def real_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, str]]:
    if "real_node" not in (request.config.option.markexpr or ""):
        pytest.skip("runs only when selected with -m real_node (make e2e-real-node)")
    reason = cannot_run() or docker_unavailable()
    if reason is not None:
        pytest.skip(reason)
    image = build_image(tmp_path_factory.mktemp("image") / "build.log")
    cluster = LocalCluster.up(KWOK_NODES, state_dir=tmp_path_factory.mktemp("cluster"))
    try:
        RealNode(cluster).up([image])
        yield cluster, image
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def kube(real_cluster: tuple[LocalCluster, str]) -> Kubectl:
    cluster, _ = real_cluster
    return Kubectl(cluster.binaries.kubectl, cluster.kubeconfig)


def _ready(pod: dict[str, Any]) -> bool:
    ready = condition(pod, "Ready")
    return (
        (pod.get("status") or {}).get("phase") == "Running"
        and ready is not None
        and ready.get("status") == "True"
    )


def replicas(kube: Kubectl) -> dict[str, dict[str, Any]]:
    """The Deployment's pods that are not being deleted (not the pods of helm's hooks: the
    configuration check's, the test's)."""
    pods = kube.items("pods", NAMESPACE)
    return {
        pod["metadata"]["name"]: pod
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and pod["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "kopf-scheduler"
        and pod["metadata"]["labels"].get("app.kubernetes.io/component") != "config-check"
        and "helm.sh/hook" not in (pod["metadata"].get("annotations") or {})
    }


def lease_holder(kube: Kubectl) -> str | None:
    lease = kube.get("lease", LEASE_NAME, NAMESPACE)
    holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None


def holder_pod(kube: Kubectl, pods: dict[str, dict[str, Any]]) -> str | None:
    """The replica whose identity (``<hostname>_<pid>``, hostname = pod name) holds the Lease."""
    holder = lease_holder(kube)
    if holder is None:
        return None
    return next((name for name in pods if holder.startswith(f"{name}_")), None)


def readyz(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The replica's ``/readyz``, read from this machine at the pod's IP on the bridge."""
    url = f"https://{pod['status']['podIP']}:10259/readyz"
    try:
        with urllib.request.urlopen(url, context=unverified_tls(), timeout=5) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except (OSError, ValueError):
        return None


def wait_replicas(kube: Kubectl, started: float) -> Deployed:
    def two_ready() -> dict[str, dict[str, Any]] | None:
        pods = replicas(kube)
        ready = {name: pod for name, pod in pods.items() if _ready(pod)}
        return ready if len(ready) == 2 and len(pods) == 2 else None

    pods = wait_until(
        two_ready,
        timeout=REPLICAS_TIMEOUT,
        what="two replicas Running and Ready",
        interval=1,
        describe=lambda: {
            name: (node_name(pod), (pod.get("status") or {}).get("containerStatuses"))
            for name, pod in replicas(kube).items()
        },
    )
    return Deployed(time.monotonic() - started, pods)


def check_replicas(kube: Kubectl, image: str, pods: dict[str, dict[str, Any]]) -> str:
    """Both on the real node, started by containerd from the imported image; one leads."""
    for pod in pods.values():
        assert node_name(pod) == NODE_NAME, pod["spec"]
        [status] = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        assert status["image"].endswith(image), status
    leader = wait_until(
        lambda: holder_pod(kube, pods),
        timeout=HANDOVER_TIMEOUT,
        what="one replica holding the Lease",
        describe=lambda: lease_holder(kube),
    )
    answers = {
        name: wait_until(functools.partial(readyz, pod), timeout=30, what=f"{name} /readyz")
        for name, pod in pods.items()
    }
    leading = sorted(name for name, answer in answers.items() if answer.get("leader"))
    assert leading == [leader], answers
    assert all(answer.get("synced") for answer in answers.values()), answers
    return leader


def workload(name: str, node_selector: dict[str, str]) -> dict[str, Any]:
    """A pod for kopf-scheduler; the pause image is in the real node's containerd."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": WORKLOADS},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "nodeSelector": node_selector,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "imagePullPolicy": "Never",
                    "resources": {"requests": {"cpu": "10m"}},
                }
            ],
        },
    }


def scheduled_by_us(kube: Kubectl, name: str) -> list[dict[str, Any]]:
    events = events_for(kube.events(WORKLOADS), name, "Scheduled")
    return [dict(e) for e in events if e.get("reportingController") == SCHEDULER_NAME]


def check_opted_in_pod(kube: Kubectl, method: str) -> None:
    name = f"opted-in-{method}"
    kube.create(workload(name, ON_REAL_NODE))

    def running() -> dict[str, Any] | None:
        pod = kube.pod(WORKLOADS, name)
        return pod if pod is not None and _ready(pod) else None

    pod = wait_until(
        running,
        timeout=120,
        what=f"{name} bound and Running on {NODE_NAME}",
        describe=lambda: kube.pod(WORKLOADS, name),
    )
    assert node_name(pod) == NODE_NAME
    [event] = wait_until(
        lambda: scheduled_by_us(kube, name), timeout=30, what=f"the Scheduled event of {name}"
    )
    assert NODE_NAME in str(event.get("note")), event


DISPATCHED = "apiserver_flowcontrol_dispatched_requests_total"
BOOTSTRAP_SERVICE_ACCOUNTS = "service-accounts"
"""The bootstrap FlowSchema (workload-low) of ServiceAccounts outside kube-system."""


def dispatched_by_flow_schema(kube: Kubectl) -> dict[str, float]:
    """The API server's dispatched requests so far, per FlowSchema (all priority levels)."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(kube.run("get", "--raw", "/metrics").stdout):
        for sample in family.samples:
            if sample.name == DISPATCHED:
                schema = sample.labels["flow_schema"]
                counts[schema] = counts.get(schema, 0.0) + sample.value
    return counts


def check_api_priority(kube: Kubectl, before: dict[str, float]) -> None:
    """Since ``before`` the replicas' requests went through the deployment's FlowSchemas (the
    leader's binding and its Lease's, the replicas' Lease reads, each every retry period), and
    none through ``service-accounts``, which takes a ServiceAccount outside kube-system without
    them."""

    def grown() -> dict[str, float]:
        after = dispatched_by_flow_schema(kube)
        return {schema: after.get(schema, 0.0) - before.get(schema, 0.0) for schema in after}

    def both_grown() -> dict[str, float] | None:
        found = grown()
        ours = ("kopf-scheduler", "kopf-scheduler-leader-election")
        return found if all(found.get(schema, 0.0) > 0 for schema in ours) else None

    growth = wait_until(
        both_grown,
        timeout=30,
        interval=1,
        what="requests dispatched through both FlowSchemas of the deployment",
        describe=grown,
    )
    assert growth.get(BOOTSTRAP_SERVICE_ACCOUNTS, 0.0) == 0, growth


def check_handover(kube: Kubectl, method: str, leader: str, pods: dict[str, Any]) -> float:
    """Delete the leader's pod amid a burst: another replica leads, each pod is bound once.

    The other replica usually takes the Lease; the replacement that the Deployment starts at
    the same moment competes for it too, and may win. Either is a handover.
    """
    watch = PodWatch(kube, WORKLOADS)
    try:
        time.sleep(1)  # the watch is listening before the first pod exists
        names = [f"burst-{method}-{index}" for index in range(2 * BURST)]
        kube.create(*(workload(name, {"type": "kwok"}) for name in names[:BURST]))
        deleted = time.monotonic()
        kube.run("delete", "pod", leader, "-n", NAMESPACE, "--wait=false")
        kube.create(*(workload(name, {"type": "kwok"}) for name in names[BURST:]))

        def new_leader() -> str | None:
            holder = holder_pod(kube, replicas(kube))  # the deleted pod is terminating
            return holder if holder != leader else None

        successor = wait_until(
            new_leader,
            timeout=HANDOVER_TIMEOUT,
            what=f"another replica to take the Lease from {leader}",
            describe=lambda: {"holder": lease_holder(kube), "logs": replica_logs(kube)},
        )
        handover = time.monotonic() - deleted
        who = "the other replica" if successor in pods else "the Deployment's new replica"
        print(f"\n{method}: {who} {successor} took the Lease from {leader} in {handover:.1f}s")
        for name in names:
            watch.wait_first(
                lambda e: node_name(e.pod) is not None,
                name=name,
                timeout=60,
                what=f"{name} bound",
            )
        time.sleep(2)  # a second binding would show within the scheduler's next cycles
        for name in names:
            assert len(watch.ever_bound_to(name)) == 1, watch.summary(name)
            assert watch.deleted(name) is None, watch.summary(name)
            events = wait_until(
                functools.partial(scheduled_by_us, kube, name),
                timeout=30,
                what=f"the Scheduled event of {name}",
            )
            assert sum(occurrences(e) for e in events) == 1, events
        return handover
    finally:
        watch.stop()


def replica_logs(kube: Kubectl, lines: int = 15) -> dict[str, str]:
    """The last log lines of each replica (through the kubelet), for failure messages."""
    logs = {}
    for name in replicas(kube):
        result = kube.run("logs", "-n", NAMESPACE, name, f"--tail={lines}", check=False)
        logs[name] = result.stdout or result.stderr
    return logs


SMALL_CPU_REQUEST = "100m"
"""The replicas' CPU request here. The real node has this machine's two CPUs: with the default
whole CPU each, two replicas would take all of it, and the rolling update's third pod and the
helm test pod would not fit."""
CPU_REQUEST_PATH = "/spec/template/spec/containers/0/resources/requests/cpu"


def chart_values(image: str) -> dict[str, Any]:
    """The image built here, the real node for the replicas and the configuration check, and a
    CPU request that leaves room beside two replicas (:data:`SMALL_CPU_REQUEST`)."""
    repository, tag = image.rsplit(":", 1)
    return {
        "scheduler": {
            "image": {"repository": repository, "tag": tag},
            "nodeSelector": ON_REAL_NODE,
            # Helm merges maps: the chart's memory and limits stay as they are.
            "resources": {"requests": {"cpu": SMALL_CPU_REQUEST}},
        }
    }


def deploy_chart(kube: Kubectl, root: Path, image: str, work: Path) -> Deployed:
    values = work / "values.yaml"
    values.write_text(yaml.safe_dump(chart_values(image)))
    helm = os.environ.get("HELM") or str(ensure_helm())
    started = time.monotonic()
    run_helm(
        helm, kube, root, "install", "kopf-scheduler", "charts/kopf-scheduler",
        "--namespace", NAMESPACE, "--create-namespace", "--values", str(values),
    )  # fmt: skip
    # The install waited for the configuration check, which passed and was deleted.
    assert config_check_phases(helm, kube) == {"ConfigMap": "Succeeded", "Job": "Succeeded"}
    assert not config_check_objects(kube)
    return wait_replicas(kube, started)


def run_helm(
    helm: str, kube: Kubectl, root: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    command = [helm, *args, f"--kubeconfig={kube.kubeconfig}"]
    result = subprocess.run(
        command, cwd=root, capture_output=True, text=True, timeout=300, check=False
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def config_check_phases(helm: str, kube: Kubectl) -> dict[str, str]:
    """How the last run of each of the configuration check's hooks ended, by kind."""
    status = subprocess.run(
        [helm, "status", "kopf-scheduler", "--namespace", NAMESPACE, "--output", "json",
         f"--kubeconfig={kube.kubeconfig}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return {
        hook["kind"]: hook["last_run"]["phase"]
        for hook in json.loads(status.stdout).get("hooks", [])
        if hook["name"].endswith("-config-check")
    }


def config_check_objects(kube: Kubectl) -> list[str]:
    """The configuration check's Job and ConfigMap, while they exist."""
    return [
        f"{kind}/{item['metadata']['name']}"
        for kind in ("jobs", "configmaps")
        for item in kube.items(kind, NAMESPACE)
        if item["metadata"]["name"].endswith("-config-check")
    ]


def deployment_state(kube: Kubectl) -> dict[str, Any]:
    """What a rolled Deployment would change: its template, revision, pods and ConfigMap."""
    deployment = kube.get("deployment", "kopf-scheduler", NAMESPACE)
    config = kube.get("configmap", "kopf-scheduler-config", NAMESPACE)
    assert deployment is not None and config is not None
    return {
        "revision": deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "template": deployment["spec"]["template"],
        "config": config["data"],
        "pods": sorted(pod["metadata"]["uid"] for pod in replicas(kube).values()),
    }


def check_helm_test(kube: Kubectl, root: Path) -> None:
    """``helm test`` on the real install: its pod asks for the installed scheduler, which must
    place it on the real node, where it runs to completion."""
    helm = os.environ.get("HELM") or str(ensure_helm())
    result = run_helm(
        helm, kube, root, "test", "kopf-scheduler", "--namespace", NAMESPACE, "--timeout", "3m"
    )
    assert re.search(r"Phase:\s+Succeeded", result.stdout), result.stdout
    scheduled = [
        event["message"]
        for event in kube.items("events", NAMESPACE)
        if event.get("reason") == "Scheduled"
        and event["involvedObject"]["name"] == "kopf-scheduler-test"
    ]
    assert scheduled == [f"Successfully assigned {NAMESPACE}/kopf-scheduler-test to {NODE_NAME}"], (
        scheduled
    )


def check_bad_upgrade_refused(kube: Kubectl, root: Path, image: str, work: Path) -> None:
    """An upgrade to a configuration only the validator refuses fails in the pre-upgrade hook,
    with the validator's line in helm's output, and the running Deployment stays as it was."""
    values = chart_values(image)
    values["pluginConfig"] = [{"name": "NodeResourceFit", "args": {}}]  # NodeResourcesFit
    bad = work / "bad-values.yaml"
    bad.write_text(yaml.safe_dump(values))
    helm = os.environ.get("HELM") or str(ensure_helm())
    before = deployment_state(kube)
    result = run_helm(
        helm, kube, root, "upgrade", "kopf-scheduler", "charts/kopf-scheduler",
        "--namespace", NAMESPACE, "--values", str(bad), check=False,
    )  # fmt: skip
    assert result.returncode != 0, result.stdout
    assert "pre-upgrade hooks failed" in result.stderr, result.stderr
    assert (
        "error: /etc/kopf-scheduler/config.yaml: profiles[0].pluginConfig[0].name: unknown "
        "plugin 'NodeResourceFit'; did you mean 'NodeResourcesFit'?"
    ) in result.stderr, result.stderr
    assert config_check_phases(helm, kube)["Job"] == "Failed"
    wait_until(
        lambda: not config_check_objects(kube),
        timeout=60,
        what="the failed configuration check's objects deleted",
        describe=lambda: config_check_objects(kube),
    )
    assert deployment_state(kube) == before
    print(f"\nreal node, chart: the bad upgrade was refused by its hook:\n{result.stderr}")


def deploy_kustomize(kube: Kubectl, root: Path, image: str, work: Path) -> Deployed:
    repository, tag = image.rsplit(":", 1)
    overlay = work / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(root / "manifests", overlay)],
                "images": [
                    {
                        "name": "ghcr.io/kopf-scheduler/kopf-scheduler",
                        "newName": repository,
                        "newTag": tag,
                    }
                ],
                "patches": [
                    {
                        "target": {"kind": "Deployment", "name": "kopf-scheduler"},
                        "patch": yaml.safe_dump(
                            [
                                {
                                    "op": "add",
                                    "path": "/spec/template/spec/nodeSelector",
                                    "value": ON_REAL_NODE,
                                },
                                {
                                    "op": "replace",
                                    "path": CPU_REQUEST_PATH,
                                    "value": SMALL_CPU_REQUEST,
                                },
                            ]
                        ),
                    }
                ],
            }
        )
    )
    started = time.monotonic()
    kube.run("apply", "-k", str(overlay), timeout=120)
    return wait_replicas(kube, started)


def undeploy(kube: Kubectl, method: str, root: Path, work: Path) -> None:
    if method == "chart":
        helm = os.environ.get("HELM") or str(ensure_helm())
        run_helm(helm, kube, root, "uninstall", "kopf-scheduler", "--namespace", NAMESPACE)
    else:
        kube.run("delete", "-k", str(work / "overlay"), "--wait=false", check=False, timeout=120)
    # The next method starts from nothing: no replica, no Lease of the previous one.
    kube.run("delete", "lease", LEASE_NAME, "-n", NAMESPACE, "--ignore-not-found", check=False)
    wait_until(
        lambda: not kube.items("pods", NAMESPACE) if kube.get("namespace", NAMESPACE) else True,
        timeout=120,
        what=f"the replicas of the {method} gone",
    )


@pytest.mark.parametrize("method", ["chart", "kustomize"])
def test_replicas_run_lead_bind_and_hand_over(
    real_cluster: tuple[LocalCluster, str],
    kube: Kubectl,
    repo_root: Path,
    tmp_path: Path,
    method: str,
) -> None:
    _, image = real_cluster
    if kube.get("namespace", WORKLOADS) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}})
    deploy = deploy_chart if method == "chart" else deploy_kustomize
    try:
        deployed = deploy(kube, repo_root, image, tmp_path)
        leader = check_replicas(kube, image, deployed.pods)
        dispatched = dispatched_by_flow_schema(kube)
        check_opted_in_pod(kube, method)
        check_api_priority(kube, dispatched)
        if method == "chart":
            check_helm_test(kube, repo_root)
            check_bad_upgrade_refused(kube, repo_root, image, tmp_path)
        handover = check_handover(kube, method, leader, deployed.pods)
        print(
            f"\nreal node, {method}: two replicas Ready {deployed.replicas_ready_seconds:.1f}s "
            f"after the install; Lease handed over {handover:.1f}s after the leader's pod was "
            "deleted"
        )
    finally:
        undeploy(kube, method, repo_root, tmp_path)
