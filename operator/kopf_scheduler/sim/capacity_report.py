"""``capacity`` answers as cluster-capacity's ``ClusterCapacityReview``, or as readable text.

The JSON keeps cluster-capacity's field names and shapes (``spec.templates``,
``spec.podRequirements``, ``status.replicas``, ``status.failReason.failType/failMessage``,
``status.pods[].replicasOnNodes[].nodeName/replicas`` and ``failSummary[].reason/count``), so
scripts written for its ``-o json`` read ours. What it has no field for is added beside:
``status.pods[].podGroups`` (whole gangs placed) and ``status.preemptedPods``. ``--drain``
answers have no cluster-capacity counterpart and a shape of their own (``NodeDrainReview``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from kopf_scheduler.model.quantity import parse_quantity
from kopf_scheduler.model.resources import pod_requests
from kopf_scheduler.sim.amounts import format_bytes, format_cpu
from kopf_scheduler.sim.capacity import CapacityResult, TemplateCount
from kopf_scheduler.sim.drain import DrainResult


def _requirements(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    requests = pod_requests(spec)
    limits: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for resource, quantity in ((container.get("resources") or {}).get("limits") or {}).items():
            limits[resource] = limits.get(resource, Fraction(0)) + parse_quantity(quantity)
    return {
        "podName": name,
        "resources": {
            "primaryResources": {
                "cpu": format_cpu(requests.milli_cpu),
                "memory": format_bytes(requests.memory),
                "ephemeral-storage": format_bytes(requests.ephemeral_storage),
            },
            "scalarResources": dict(sorted(requests.scalar.items())) or None,
        },
        "limits": {
            "primaryResources": {
                "cpu": format_cpu(limits.get("cpu", Fraction(0)) * 1000),
                "memory": format_bytes(limits.get("memory", Fraction(0))),
                "ephemeral-storage": format_bytes(limits.get("ephemeral-storage", Fraction(0))),
            },
            "scalarResources": {
                resource: int(value)
                for resource, value in sorted(limits.items())
                if resource not in ("cpu", "memory", "ephemeral-storage")
            }
            or None,
        },
        "nodeSelectors": spec.get("nodeSelector") or None,
    }


def _pod_result(count: TemplateCount) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "podName": count.template.name,
        "replicasOnNodes": [
            {"nodeName": node, "replicas": replicas}
            for node, replicas in sorted(count.nodes.items())
        ],
        "failSummary": [
            {"reason": reason, "count": number} for reason, number in _by_count(count.fail_summary)
        ]
        or None,
    }
    if count.template.pod_group is not None:
        entry["podGroups"] = count.copies
    return entry


def capacity_review(result: CapacityResult, *, now: datetime | None = None) -> dict[str, Any]:
    """The answer as a ``ClusterCapacityReview`` (JSON-ready)."""
    status: dict[str, Any] = {
        "creationTimestamp": (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
        "replicas": sum(count.nodes.total() for count in result.counts),
        "failReason": {"failType": result.stop_type, "failMessage": result.stop_message},
        "pods": [_pod_result(count) for count in result.counts],
    }
    if result.preempted:
        status["preemptedPods"] = list(result.preempted)
    return {
        "kind": "ClusterCapacityReview",
        "spec": {
            "templates": [dict(count.template.pod) for count in result.counts],
            "podRequirements": [
                _requirements(count.template.pod, count.template.name) for count in result.counts
            ],
        },
        "status": status,
    }


def render_capacity_json(result: CapacityResult) -> str:
    return json.dumps(capacity_review(result), indent=2)


def render_capacity_table(result: CapacityResult) -> str:
    lines = []
    for count in result.counts:
        unit = "PodGroup" if count.template.pod_group is not None else "instance"
        lines.append(
            f"The cluster can schedule {count.copies} {unit}(s) of {count.template.name}"
            + (f" ({count.nodes.total()} pods)." if count.template.pod_group is not None else ".")
        )
    lines.append("")
    lines.append(f"Termination reason: {result.stop_type}: {result.stop_message}")
    for count in result.counts:
        if count.fail_summary:
            reasons = ", ".join(
                f"{reason} ({number})" for reason, number in _by_count(count.fail_summary)
            )
            lines.append(f"Fit failure summary on nodes ({count.template.name}): {reasons}")
    if result.preempted:
        lines.append(f"Preempted to make room: {', '.join(result.preempted)}")
    lines.append("")
    lines.append("Pod distribution among nodes:")
    for count in result.counts:
        lines.append(f"{count.template.name}")
        for node, replicas in sorted(count.nodes.items()):
            lines.append(f"\t- {node}: {replicas} instance(s)")
    return "\n".join(lines) + "\n"


def _by_count(counter: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def drain_review(result: DrainResult) -> dict[str, Any]:
    """The ``--drain`` answer (JSON-ready): the nodes in the order they were tried."""
    return {
        "kind": "NodeDrainReview",
        "removableNodes": result.removable,
        "nodes": [
            {
                "nodeName": entry.node,
                "removable": entry.removable,
                "movedPods": [
                    {"pod": pod, "nodeName": node} for pod, node in sorted(entry.moved.items())
                ],
                "podsLeavingWithNode": list(entry.stays),
                "blockingPod": entry.blocking_pod or None,
                "message": entry.message or None,
            }
            for entry in result.nodes
        ],
    }


def render_drain_json(result: DrainResult) -> str:
    return json.dumps(drain_review(result), indent=2)


def render_drain_table(result: DrainResult) -> str:
    lines = [
        f"{len(result.removable)} of {len(result.nodes)} node(s) can go, tried largest first: "
        + (", ".join(result.removable) or "none")
    ]
    for entry in result.nodes:
        if entry.removable:
            moved = ", ".join(f"{pod} -> {node}" for pod, node in sorted(entry.moved.items()))
            lines.append(f"  {entry.node}: can go" + (f" ({moved})" if moved else " (no pods)"))
        else:
            lines.append(f"  {entry.node}: stays: {entry.blocking_pod}: {entry.message}")
    return "\n".join(lines) + "\n"
