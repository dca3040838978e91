"""The FailedScheduling message kube-scheduler v1.34 writes, computed from the nodes present.

The message counts every node in the cluster, including other tests' nodes and the control
plane's default fake nodes, so the expected text is rebuilt from ``kubectl get nodes`` for the
pod at hand instead of being hard-coded. Format (upstream ``FitError.Error``): a histogram of
per-node reasons, each ``"<count> <reason>"``, sorted as strings, joined by ``", "``, ended by
``"."``; then the PostFilter part: DynamicResources' ``no new claims to deallocate``, joined by
``", "`` to DefaultPreemption's ``preemption: `` and its own histogram in the same format. A pod
that a PreFilter rejects gets ``0/N nodes are available: <reason>. not found`` instead: the
PreFilter of DynamicResources, ordered last, never ran, so its PostFilter fails before
DefaultPreemption is tried.

The volume scenarios give their own nodes' reasons explicitly (:func:`expected_message`).
Otherwise only the filters a scenario's pods can hit are modelled: NodeUnschedulable,
TaintToleration (NoSchedule/NoExecute), NodeAffinity via ``nodeSelector`` and NodeResourcesFit
for a CPU request above a node's allocatable (UnschedulableAndUnresolvable in v1.34, so
preemption is "not helpful" everywhere).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

UNSCHEDULABLE = "node(s) were unschedulable"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
NODE_SELECTOR = "node(s) didn't match Pod's node affinity/selector"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
NO_VICTIMS = "No preemption victims found for incoming pod"

# The volume plugins' per-node reasons.
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"
NO_VOLUME_ZONE = "node(s) had no available volume zone"
RWOP_IN_USE = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
MAX_VOLUME_COUNT = "node(s) exceed max volume count"


def milli_cpu(quantity: str) -> int:
    if quantity.endswith("m"):
        return int(quantity[:-1])
    return int(float(quantity) * 1000)


def _tolerates(taint: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key")
        if operator == "Exists" and (not key or key == taint.get("key")):
            return True
        if key == taint.get("key") and (toleration.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def node_reason(node: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    """Why the first failing filter rejects ``node`` for ``pod`` (None: it fits)."""
    spec = pod["spec"]
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not _tolerates(
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        spec.get("tolerations") or [],
    ):
        return UNSCHEDULABLE
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            taint, spec.get("tolerations") or []
        ):
            return UNTOLERATED_TAINT
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return NODE_SELECTOR
    requested = sum(
        milli_cpu(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
        for c in spec["containers"]
    )
    allocatable = milli_cpu(str((node.get("status") or {}).get("allocatable", {}).get("cpu", "0")))
    if requested > allocatable:
        return "Insufficient cpu"
    return None


def histogram(reasons: Iterable[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in Counter(reasons).items()))


def fit_message(total: int, reasons: Iterable[str]) -> str:
    """``0/N nodes are available: <histogram>.``, the shape of both parts of a FitError."""
    return f"0/{total} nodes are available: {histogram(reasons)}."


def expected_message(
    nodes: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    own: Mapping[str, str],
    own_preemption: Mapping[str, str] | None = None,
    *,
    postfilter: str = NO_CLAIMS_TO_DEALLOCATE,
) -> str:
    """The FitError when the test's own nodes fail for reasons the helpers here do not model.

    ``own`` maps each of the test's nodes to its filter reason and ``own_preemption`` to its
    preemption reason (default: not helpful, as for any UnschedulableAndUnresolvable reason);
    every other node gets the reason :func:`node_reason` computes, and "not helpful".
    ``postfilter`` is DynamicResources' PostFilter part: ``no new claims to deallocate`` for a
    pod without claims, ``still not schedulable`` for one whose claims it could not free.
    """
    reasons = []
    preemption = []
    for node in nodes:
        name = node["metadata"]["name"]
        if name in own:
            reasons.append(own[name])
            preemption.append((own_preemption or {}).get(name, NOT_HELPFUL))
            continue
        reason = node_reason(node, pod)
        if reason is None:
            raise AssertionError(f"the pod fits on {name}; the scenario expects it to fit nowhere")
        reasons.append(reason)
        preemption.append(NOT_HELPFUL)
    missing = sorted(set(own) - {node["metadata"]["name"] for node in nodes})
    if missing:
        raise AssertionError(f"the test's nodes {missing} are not in the cluster")
    total = len(nodes)
    return (
        f"{fit_message(total, reasons)} {postfilter}, preemption: {fit_message(total, preemption)}"
    )


def expected_unresolvable_message(
    nodes: Sequence[Mapping[str, Any]], pod: Mapping[str, Any]
) -> str:
    """The message for a pod every node rejects with an UnschedulableAndUnresolvable status."""
    reasons = [node_reason(node, pod) for node in nodes]
    if any(reason is None for reason in reasons):
        fitting = [n["metadata"]["name"] for n, r in zip(nodes, reasons, strict=True) if r is None]
        raise AssertionError(f"the pod fits on {fitting}; the scenario expects it to fit nowhere")
    total = len(nodes)
    return (
        f"0/{total} nodes are available: {histogram(r for r in reasons if r)}. "
        f"{NO_CLAIMS_TO_DEALLOCATE}, "
        f"preemption: 0/{total} nodes are available: {total} {NOT_HELPFUL}."
    )
