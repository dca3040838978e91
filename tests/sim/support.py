"""Raw Kubernetes objects and one-call runners for the simulator tests.

Scenario tests write real files (YAML or JSON) and go through ``load_scenario`` like a user's
input does; the builders here produce the plain dictionaries those files contain.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report, render_json
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import load_scenario

SCHEDULER = "kopf-scheduler"
"""The default profile's scheduler name; pending pods name it explicitly."""

Raw = dict[str, Any]


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> Raw:
    raw: Raw = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }
    if taints:
        raw["spec"] = {"taints": [dict(t) for t in taints]}
    return raw


def pod(
    name: str,
    *,
    cpu: str | None = "1",
    memory: str | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    preemption_policy: str | None = None,
    labels: Mapping[str, str] | None = None,
    grace: int | None = None,
    start_time: str | None = None,
    namespace: str | None = None,
    scheduler: str | None = SCHEDULER,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
) -> Raw:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container: Raw = {"name": "main", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests}
    metadata: Raw = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    spec: Raw = {"containers": [container]}
    optional = {
        "nodeName": node_name,
        "priority": priority,
        "priorityClassName": priority_class,
        "preemptionPolicy": preemption_policy,
        "terminationGracePeriodSeconds": grace,
        "nodeSelector": dict(node_selector) if node_selector else None,
        "tolerations": [dict(t) for t in tolerations] if tolerations else None,
    }
    if node_name is None:
        optional["schedulerName"] = scheduler
    spec.update({k: v for k, v in optional.items() if v is not None})
    raw: Raw = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if start_time is not None:
        raw["status"] = {"startTime": start_time}
    return raw


def priority_class(
    name: str, value: int | None, *, global_default: bool = False, policy: str | None = None
) -> Raw:
    raw: Raw = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    raw["metadata"] = {"name": name}
    if value is not None:
        raw["value"] = value
    if global_default:
        raw["globalDefault"] = True
    if policy is not None:
        raw["preemptionPolicy"] = policy
    return raw


def pdb(
    name: str,
    match: Mapping[str, str],
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    disruptions_allowed: int | None = None,
) -> Raw:
    spec: Raw = {"selector": {"matchLabels": dict(match)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    raw: Raw = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    if disruptions_allowed is not None:
        raw["status"] = {
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }
    return raw


def write_yaml(path: Path, docs: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all([dict(d) for d in docs], sort_keys=False))
    return path


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2))
    return path


def simulate(paths: Sequence[Path | str], *, seed: int = 0) -> SimulationResult:
    """Load ``paths`` and run them through the default configuration."""
    scenario = load_scenario(paths)
    return sim_loop.run(Simulation(default_config(), seed=seed).run(scenario))


def simulate_docs(
    tmp_path: Path, docs: Iterable[Mapping[str, Any]], *, seed: int = 0, name: str = "s.yaml"
) -> SimulationResult:
    return simulate([write_yaml(tmp_path / name, docs)], seed=seed)


def report(result: SimulationResult, *, explain: bool = False) -> dict[str, Any]:
    return build_report(result, explain=explain)


def report_json(result: SimulationResult) -> str:
    return render_json(build_report(result, explain=True))


def pods_by_name(rep: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in rep["pods"]}


def placements(rep: Mapping[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Pod name → (status, node)."""
    return {p["name"]: (p["status"], p["node"]) for p in rep["pods"]}
