"""The fault suite's judge: a clean record passes, and each rule fails on a record broken in
just the way it guards against (a check that cannot fail would make every fault look fine)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from e2e.faults.harness import bindings_logged
from e2e.faults.invariants import Record, judge
from e2e.support.watch import WatchEvent

NS = "e2e-x"


def pod(
    name: str,
    rv: int,
    node: str | None = None,
    *,
    cpu: str = "1",
    unschedulable: bool = False,
    terminating: bool = False,
    preempted: bool = False,
) -> dict[str, Any]:
    conditions = []
    if unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    if preempted:
        conditions.append(
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        )
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "resourceVersion": str(rv)}
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"conditions": conditions}}


def node(name: str, rv: int, cpu: str = "2") -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "status": {"allocatable": {"cpu": cpu, "pods": "110"}},
    }


def scheduled(name: str) -> dict[str, Any]:
    return {"reason": "Scheduled", "regarding": {"kind": "Pod", "name": name}}


def events(*items: tuple[str, Mapping[str, Any]]) -> list[WatchEvent]:
    return [WatchEvent(i, float(i), kind, obj) for i, (kind, obj) in enumerate(items)]


def clean() -> dict[str, Any]:
    """a bound to n1, b unschedulable; both seen by the watch; a logged by one scheduler."""
    return {
        "pod_events": events(
            ("ADDED", pod("a", 10)),
            ("MODIFIED", pod("a", 11, "n1")),
            ("ADDED", pod("b", 12)),
            ("MODIFIED", pod("b", 13, unschedulable=True)),
        ),
        "node_events": events(("ADDED", node("n1", 1))),
        "final_pods": {"a": pod("a", 11, "n1"), "b": pod("b", 13, unschedulable=True)},
        "final_nodes": {"n1": node("n1", 1)},
        "events": [scheduled("a")],
        "bindings_logged": {"a": {"s1": "n1"}},
    }


def test_a_clean_record_passes_with_its_figures() -> None:
    verdict = judge(Record(**clean()))
    assert verdict.ok, verdict.problems
    assert verdict.figures() == {
        "pods": 2,
        "bound": 1,
        "bound_once": 1,
        "pending": 1,
        "lost": 0,
        "double_bound": 0,
        "victims": 0,
    }


def _broken(change: str) -> dict[str, Any]:
    record = clean()
    if change == "node changed":
        record["pod_events"] = [*record["pod_events"], *events(("MODIFIED", pod("a", 14, "n2")))]
        record["node_events"] = events(("ADDED", node("n1", 1)), ("ADDED", node("n2", 2)))
    elif change == "two Scheduled events":
        record["events"] = [scheduled("a"), scheduled("a")]
    elif change == "bound by two schedulers":
        record["bindings_logged"] = {"a": {"s1": "n1", "s2": "n1"}}
    elif change == "no Scheduled event":
        record["events"] = []
    elif change == "nobody logged the binding":
        record["bindings_logged"] = {}
    elif change == "logged another node":
        record["bindings_logged"] = {"a": {"s1": "n9"}}
    elif change == "lost: neither bound nor unschedulable":
        record["final_pods"]["b"] = pod("b", 12)
    elif change == "lost: vanished":
        del record["final_pods"]["b"]
    elif change == "bound after node deletion":
        record["node_events"] = events(("ADDED", node("n1", 1)), ("DELETED", node("n1", 5)))
    elif change == "node never existed":
        record["node_events"] = []
        record["final_nodes"] = {}
    elif change == "over capacity":
        record["final_nodes"] = {"n1": node("n1", 1, cpu="500m")}
    elif change == "victim without preemption":
        record["pod_events"] = [
            *record["pod_events"],
            *events(("MODIFIED", pod("a", 20, "n1", terminating=True))),
        ]
    return record


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("node changed", "nodeName changed"),
        ("two Scheduled events", "2 Scheduled events"),
        ("bound by two schedulers", "bound by 2 schedulers"),
        ("no Scheduled event", "without a Scheduled event"),
        ("nobody logged the binding", "no scheduler logged it"),
        ("logged another node", "logged a binding to n9"),
        ("lost: neither bound nor unschedulable", "neither bound nor PodScheduled=False"),
        ("lost: vanished", "gone, not deleted by the test"),
        ("bound after node deletion", "after the node was deleted"),
        ("node never existed", "never existed"),
        ("over capacity", "1000m CPU requested, 500m allocatable"),
        ("victim without preemption", "no preemption was expected"),
    ],
)
def test_each_rule_fails_on_its_broken_record(change: str, problem: str) -> None:
    verdict = judge(Record(**_broken(change)))
    assert any(problem in p for p in verdict.problems), verdict.problems


def test_a_victim_needs_the_preemption_condition_where_preemption_is_expected() -> None:
    base = _broken("victim without preemption")
    assert not judge(Record(**base, preemption_expected=True)).ok
    base["pod_events"] = [
        *base["pod_events"],
        *events(("MODIFIED", pod("a", 21, "n1", terminating=True, preempted=True))),
    ]
    verdict = judge(Record(**base, preemption_expected=True))
    assert verdict.ok, verdict.problems
    assert verdict.victims == 1


def test_a_pod_the_test_deleted_is_neither_lost_nor_a_victim() -> None:
    record = _broken("lost: vanished")
    record["pod_events"] = [*record["pod_events"], *events(("DELETED", pod("b", 30)))]
    assert judge(Record(**record, deleted_by_test=frozenset({"b"}))).ok
    assert not judge(Record(**record)).ok


def test_a_kill_excuses_only_the_missing_event_and_log_of_bindings_before_it() -> None:
    record = clean()
    record["events"] = []
    record["bindings_logged"] = {}
    assert judge(Record(**record, killed_at=5.0)).ok  # a was bound at received=1.0
    assert not judge(Record(**record, killed_at=0.5)).ok


def test_bindings_are_read_from_console_log_lines_of_the_namespace() -> None:
    log = (
        "2026-11-27T00:00:00Z [info     ] pod_bound   [kopf_scheduler] cycle=3 node=n1 "
        f"pod={NS}/a\n"
        "2026-11-27T00:00:01Z [info     ] pod_bound   [kopf_scheduler] cycle=4 node=n2 "
        "pod=other/a\n"
        "2026-11-27T00:00:02Z [info     ] cycle_done  [kopf_scheduler] node=n3 "
        f"pod={NS}/b\n"
    )
    assert bindings_logged({"s1": log, "s2": log}, NS) == {"a": {"s1": "n1", "s2": "n1"}}
