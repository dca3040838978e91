"""What must hold after any fault, judged from an independent record of the cluster.

The record is the admin's: a pod watch and a node watch started before the burst (the
scheduler's own view is what a fault corrupts, so it cannot be the judge), the final pods and
nodes, the ``Scheduled`` events, and which scheduler process logged each binding. From it:

- **bound once**: a pod's ``spec.nodeName`` was set once and never changed, it has exactly one
  ``Scheduled`` event, and exactly one scheduler process logged its binding, naming that node;
- **lost**: a pod that is neither bound nor ``PodScheduled=False`` with reason
  ``Unschedulable`` at the end, or that vanished without the test or a preemption deleting it;
- **double-bound**: a second node, a second ``Scheduled`` event, or a binding logged by two
  processes;
- **node that cannot hold it**: bound after its node's deletion (by resourceVersion, so the
  API server's own order), to a node that never existed, or beyond a node's allocatable CPU or
  pod count (sum of the requests of the pods bound there at the end);
- **victims only where a preemption was decided**: a pod the test did not delete that
  terminated must carry the ``DisruptionTarget`` condition with reason
  ``PreemptionByScheduler``, and only in scenarios that decide a preemption.

:func:`judge` is pure, so each rule is shown to fail on a deliberately faulty record in
``tests/faults/test_invariants.py``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from e2e.support.kubectl import condition, events_for, is_terminating, node_name, occurrences
from e2e.support.messages import milli_cpu
from e2e.support.watch import WatchEvent

PREEMPTION_REASON = "PreemptionByScheduler"


@dataclass
class Record:
    """Everything the judge reads; built by the test from its watches, never by the scheduler."""

    pod_events: Sequence[WatchEvent]
    node_events: Sequence[WatchEvent]
    final_pods: Mapping[str, Mapping[str, Any]]
    final_nodes: Mapping[str, Mapping[str, Any]]
    events: Sequence[Mapping[str, Any]]
    bindings_logged: Mapping[str, Mapping[str, str]]  # pod name -> {process identity: node}
    deleted_by_test: frozenset[str] = frozenset()
    preemption_expected: bool = False
    # When a scheduler was SIGKILLed (monotonic time, as WatchEvent.received): a binding the
    # watch saw before then may lack its Scheduled event and its log line, which the killed
    # process had no time to write (kube-scheduler's events are asynchronous too).
    killed_at: float | None = None


@dataclass
class Verdict:
    pods: int = 0
    bound: int = 0
    bound_once: int = 0
    pending: int = 0
    lost: int = 0
    double_bound: int = 0
    victims: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def figures(self) -> dict[str, int]:
        return {
            "pods": self.pods,
            "bound": self.bound,
            "bound_once": self.bound_once,
            "pending": self.pending,
            "lost": self.lost,
            "double_bound": self.double_bound,
            "victims": self.victims,
        }


def _bindings(events: Iterable[WatchEvent]) -> dict[str, list[tuple[int, str]]]:
    """Per pod, each change of ``spec.nodeName`` to a new value: (resourceVersion, node)."""
    seen: dict[str, str | None] = {}
    changes: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for event in events:
        if event.type == "DELETED":
            continue
        node = node_name(event.object)
        if node is not None and node != seen.get(event.name):
            changes[event.name].append((event.resource_version, node))
        seen[event.name] = node if node is not None else seen.get(event.name)
    return changes


def _node_deletions(events: Iterable[WatchEvent]) -> dict[str, int]:
    return {e.name: e.resource_version for e in events if e.type == "DELETED"}


def _preempted(events: Iterable[WatchEvent]) -> set[str]:
    names = set()
    for event in events:
        target = condition(event.object, "DisruptionTarget")
        if target and target.get("status") == "True" and target.get("reason") == PREEMPTION_REASON:
            names.add(event.name)
    return names


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return bool(
        scheduled
        and scheduled.get("status") == "False"
        and scheduled.get("reason") == "Unschedulable"
    )


def judge(record: Record) -> Verdict:
    verdict = Verdict()
    bindings = _bindings(record.pod_events)
    node_deleted = _node_deletions(record.node_events)
    nodes_seen = {e.name for e in record.node_events} | set(record.final_nodes)
    preempted = _preempted(record.pod_events)
    names = sorted({e.name for e in record.pod_events} | set(record.final_pods))
    verdict.pods = len(names)
    terminated = {e.name for e in record.pod_events if is_terminating(e.object)} | {
        e.name for e in record.pod_events if e.type == "DELETED"
    }

    for name in names:
        changes = bindings.get(name, [])
        scheduled = sum(occurrences(e) for e in events_for(record.events, name, "Scheduled"))
        logged = dict(record.bindings_logged.get(name, {}))
        double = False
        if len(changes) > 1:
            double = True
            verdict.problems.append(f"{name}: nodeName changed {[n for _, n in changes]}")
        if scheduled > 1:
            double = True
            verdict.problems.append(f"{name}: {scheduled} Scheduled events")
        if len(logged) > 1:
            double = True
            verdict.problems.append(f"{name}: bound by {len(logged)} schedulers: {logged}")
        if changes:
            verdict.bound += 1
            rv, node = changes[0]
            first = next(e for e in record.pod_events if e.name == name and node_name(e.object))
            cut_short = record.killed_at is not None and first.received <= record.killed_at
            if node not in nodes_seen:
                verdict.problems.append(f"{name}: bound to {node}, which never existed")
            elif node in node_deleted and node_deleted[node] < rv:
                verdict.problems.append(
                    f"{name}: bound to {node} at rv {rv}, after the node was deleted "
                    f"(rv {node_deleted[node]})"
                )
            if scheduled == 0 and not cut_short:
                verdict.problems.append(f"{name}: bound to {node} without a Scheduled event")
            if not logged and not cut_short:
                verdict.problems.append(f"{name}: bound to {node}, no scheduler logged it")
            for identity, logged_node in logged.items():
                if logged_node != node:
                    verdict.problems.append(
                        f"{name}: {identity} logged a binding to {logged_node}, pod is on {node}"
                    )
            if not double and (cut_short or (scheduled == 1 and len(logged) == 1)):
                verdict.bound_once += 1
        elif logged:
            verdict.problems.append(f"{name}: binding logged by {logged} but never bound")
        verdict.double_bound += double

        if name in terminated and name not in record.deleted_by_test:
            verdict.victims += 1
            if not record.preemption_expected:
                verdict.problems.append(f"{name}: deleted, and no preemption was expected")
            elif name not in preempted:
                verdict.problems.append(
                    f"{name}: deleted without a DisruptionTarget {PREEMPTION_REASON} condition"
                )
            continue
        if name in terminated:
            continue
        pod = record.final_pods.get(name)
        if pod is None:
            verdict.lost += 1
            verdict.problems.append(f"{name}: gone, not deleted by the test or a preemption")
        elif not changes:
            if _unschedulable(pod):
                verdict.pending += 1
            else:
                verdict.lost += 1
                verdict.problems.append(f"{name}: neither bound nor PodScheduled=False")

    verdict.problems.extend(_capacity_problems(record, set(node_deleted)))
    return verdict


def _capacity_problems(record: Record, deleted_nodes: set[str]) -> list[str]:
    """Allocatable against the requests bound at the end; pods left on a node the test
    deleted are the pod GC's to remove (a binding after the deletion is checked above)."""
    used_cpu: Counter[str] = Counter()
    used_pods: Counter[str] = Counter()
    for pod in record.final_pods.values():
        node = node_name(pod)
        if node is None or is_terminating(pod):
            continue
        used_pods[node] += 1
        for container in (pod.get("spec") or {}).get("containers") or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            used_cpu[node] += milli_cpu(str(requests.get("cpu", "0")))
    problems = []
    for node, count in sorted(used_pods.items()):
        manifest = record.final_nodes.get(node)
        if manifest is None and node in deleted_nodes:
            continue
        if manifest is None:
            problems.append(f"{node}: {count} pods bound to a node that no longer exists")
            continue
        allocatable = (manifest.get("status") or {}).get("allocatable") or {}
        cpu = milli_cpu(str(allocatable.get("cpu", "0")))
        if used_cpu[node] > cpu:
            problems.append(f"{node}: {used_cpu[node]}m CPU requested, {cpu}m allocatable")
        if count > int(allocatable.get("pods", "110")):
            problems.append(f"{node}: {count} pods, {allocatable.get('pods')} allocatable")
    return problems
