"""Gang scheduling under test: the PodGroup API, its member pods and a scheduler that gangs them.

Coscheduling (scheduler-plugins' gang scheduling, which kopf-scheduler follows) ties pods to a
PodGroup by the label ``scheduling.x-k8s.io/pod-group: <PodGroup name>`` in the PodGroup's
namespace; until ``minMember`` of them can be placed together, none is bound. The suite runs
it as a second scheduler beside the one the other scenarios use: its own ``schedulerName``, no
leader election (so it schedules as soon as its caches are synced), the same ServiceAccount and
RBAC from ``manifests/``, and a short Permit wait so that a group that cannot be completed gives
its reservations back within seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .clusters import MANIFESTS
from .kubectl import Kubectl
from .polling import wait_until

PODGROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUP_CRD = MANIFESTS / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
PODGROUP_CRD_NAME = "podgroups.scheduling.x-k8s.io"

GANG_SCHEDULER_NAME = "kopf-gang-scheduler"
"""``spec.schedulerName`` of the profile that enables Coscheduling."""

PERMIT_WAITING_SECONDS = 3
"""Coscheduling's ``permitWaitingTimeSeconds``: how long members that fit wait at Permit for
the rest of their group before all of them are rejected and their reservations released."""

GANG_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: {GANG_SCHEDULER_NAME}
    plugins:
      queueSort:
        enabled:
          - name: Coscheduling
        disabled:
          - name: PrioritySort
      preFilter:
        enabled:
          - name: Coscheduling
      postFilter:
        enabled:
          - name: Coscheduling
      reserve:
        enabled:
          - name: Coscheduling
      permit:
        enabled:
          - name: Coscheduling
    pluginConfig:
      - name: Coscheduling
        args:
          permitWaitingTimeSeconds: {PERMIT_WAITING_SECONDS}
"""

# The walk-through of scheduler-plugins' install guide ("Test Coscheduling"), as published:
# a PodGroup that needs three pods and a Deployment that first asks for two of them.
DOCS_PODGROUP = """\
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: pg1
spec:
  scheduleTimeoutSeconds: 10
  minMember: 3
"""

DOCS_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pause
spec:
  replicas: 2
  selector:
    matchLabels:
      app: pause
  template:
    metadata:
      labels:
        app: pause
        scheduling.x-k8s.io/pod-group: pg1
    spec:
      containers:
      - name: pause
        image: registry.k8s.io/pause:3.6
"""


def docs_workload(scheduler_name: str) -> list[dict[str, Any]]:
    """The guide's PodGroup and Deployment; the only change is the pods' ``schedulerName``,
    which the guide itself asks for when Coscheduling runs as a second scheduler."""
    podgroup = yaml.safe_load(DOCS_PODGROUP)
    deployment = yaml.safe_load(DOCS_DEPLOYMENT)
    deployment["spec"]["template"]["spec"]["schedulerName"] = scheduler_name
    return [podgroup, deployment]


def podgroup(
    name: str, namespace: str, min_member: int, schedule_timeout_seconds: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = schedule_timeout_seconds
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def install_podgroup_crd(kubectl: Kubectl, path: Path = PODGROUP_CRD) -> None:
    """Apply the PodGroup CRD shipped in ``manifests/crds`` and wait until it is served."""
    kubectl.apply(yaml.safe_load(path.read_text(encoding="utf-8")))

    def established() -> bool:
        crd = kubectl.get("crd", PODGROUP_CRD_NAME) or {}
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_until(established, timeout=30, what=f"CRD {PODGROUP_CRD_NAME} Established")
