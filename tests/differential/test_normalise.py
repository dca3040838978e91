"""The normaliser: what a run shows, keyed by the scenario's names, free of run identities."""

from __future__ import annotations

import json
from typing import Any

import pytest
from differential.normalise import TextNormaliser, normalise
from differential.record import RunRecord

from tests.builders import make_pod

NS = "diff-mixed-1-upstream1-ab12"
UID_P1 = "5c436db5-0839-4a0c-bfd2-379350c5169f"
UID_R1 = "bf454c8c-61ce-4fdd-805e-7354cf043a12"
OTHER_UID = "00000000-1111-2222-3333-444444444444"


def event(pod: str, reason: str, note: str, count: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{pod}.1", "namespace": NS},
        "regarding": {"kind": "Pod", "name": pod, "namespace": NS},
        "reason": reason,
        "note": note,
        "reportingController": "default-scheduler",
    }
    if count is not None:
        body["series"] = {"count": count}
    return body


def change(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": pod}


def record(**fields: Any) -> RunRecord:
    base: dict[str, Any] = {
        "scenario": "mixed-1",
        "side": "upstream",
        "scheduler_name": "default-scheduler",
        "namespace": NS,
        "settled": True,
        "seconds": 10.0,
    }
    base.update(fields)
    return RunRecord(**base)


def preemption_run() -> RunRecord:
    """p01 preempts r01 on node-1 and is bound there; p02 stays pending."""
    p01 = make_pod("p01-web", NS).uid(UID_P1)
    r01 = make_pod("r01-db", NS).uid(UID_R1).node("node-1")
    p02 = make_pod("p02-db", NS).uid("uid-p02")
    unschedulable = (
        f"0/3 nodes are available: 3 Insufficient cpu. preemption: pod {UID_P1} is waiting"
    )
    history = [
        change("ADDED", r01.obj()),
        change("ADDED", p01.obj()),
        change("ADDED", p02.obj()),
        change("MODIFIED", p01.condition("PodScheduled", "False", "Unschedulable", "x").obj()),
        change("MODIFIED", p01.nominated("node-1").obj()),
        change(
            "MODIFIED",
            r01.condition(
                "DisruptionTarget",
                "True",
                "PreemptionByScheduler",
                "default-scheduler: preempting to accommodate a higher priority pod",
            )
            .terminating()
            .obj(),
        ),
        change("MODIFIED", p01.nominated("node-1").obj()),
        change("DELETED", r01.obj()),
        change("MODIFIED", p01.node("node-1").obj()),
        change("MODIFIED", make_pod("p01-web", NS).uid(UID_P1).node("node-1").obj()),
        change(
            "MODIFIED", p02.condition("PodScheduled", "False", "Unschedulable", unschedulable).obj()
        ),
    ]
    final_p01 = make_pod("p01-web", NS).uid(UID_P1).node("node-1").condition("PodScheduled")
    return record(
        pods=[final_p01.obj(), p02.obj()],
        history=history,
        events=[
            event("p01-web", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu."),
            event("p01-web", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu."),
            event("p01-web", "Scheduled", f"Successfully assigned {NS}/p01-web to node-1"),
            event("r01-db", "Preempted", f"Preempted by pod {UID_P1} on node node-1"),
            event("r01-db", "Preempted", f"Preempted by pod {UID_P1} on node node-1"),
            event("p02-db", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", 5),
            event("p02-db", "Pulled", "not the scheduler's"),
        ],
        claims=[
            {"metadata": {"name": "data-p01"}, "spec": {"volumeName": "pv-2"}},
            {"metadata": {"name": "data-p02"}, "spec": {}},
        ],
    )


def test_placements_name_a_node_pending_or_deleted() -> None:
    outcome = normalise(preemption_run(), ["r01-db", "p01-web", "p02-db", "p03-never-seen"])
    assert outcome["placements"] == {
        "r01-db": "deleted",
        "p01-web": "node-1",
        "p02-db": "pending",
        "p03-never-seen": "absent",
    }


def test_victims_are_the_pods_that_terminated() -> None:
    assert normalise(preemption_run())["victims"] == {"r01-db": "deleted"}


def test_nominations_fold_repeats_and_show_clearing() -> None:
    assert normalise(preemption_run())["nominations"] == {"p01-web": ["node-1", "-"]}


def test_conditions_hide_uids_namespace_and_scheduler() -> None:
    conditions = normalise(preemption_run())["conditions"]
    assert conditions == {
        "p01-web": "True",
        "p02-db": "False Unschedulable: 0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: pod p01-web is waiting",
    }


def test_disruption_targets_name_the_scheduler_generically() -> None:
    assert normalise(preemption_run())["disruption_targets"] == {
        "r01-db": "True PreemptionByScheduler: <scheduler>: preempting to accommodate a higher "
        "priority pod"
    }


def test_events_are_distinct_notes_with_repeats_marked_where_they_count() -> None:
    assert normalise(preemption_run())["events"] == {
        "p01-web": [
            "FailedScheduling: 0/3 nodes are available: 3 Insufficient cpu.",
            "Scheduled: Successfully assigned <ns>/p01-web to node-1",
        ],
        "p02-db": ["FailedScheduling: 0/3 nodes are available: 3 Insufficient cpu."],
        "r01-db": ["Preempted: Preempted by pod p01-web on node node-1 (repeated)"],
    }


def test_a_series_counts_as_a_repeat() -> None:
    run = record(events=[event("r01", "Preempted", "Preempted by pod x on node n", count=2)])
    assert normalise(run)["events"] == {
        "r01": ["Preempted: Preempted by pod x on node n (repeated)"]
    }


def test_claims_show_their_volume() -> None:
    assert normalise(preemption_run())["claims"] == {"data-p01": "pv-2", "data-p02": "unbound"}


def test_the_same_decisions_under_other_names_normalise_alike() -> None:
    upstream = preemption_run()
    text = json.dumps(upstream.to_json())
    text = text.replace(NS, "diff-mixed-1-kopf1-cd34").replace(
        "default-scheduler", "kopf-scheduler"
    )
    text = text.replace(UID_P1, "11111111-2222-3333-4444-555555555555")
    ours = RunRecord.from_json(json.loads(text))  # the same run under other identities
    assert ours.scheduler_name == "kopf-scheduler"
    assert normalise(ours) == normalise(upstream)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"assigned {NS}/p1 to n1", "assigned <ns>/p1 to n1", id="namespace"),
        pytest.param(f"{NS}-other/p1", f"{NS}-other/p1", id="longer-namespace-kept"),
        pytest.param(f"pod {UID_R1}", "pod r01", id="known-uid"),
        pytest.param(f"claim {OTHER_UID}", "claim <uid>", id="unknown-uid"),
        pytest.param("kopf-scheduler: preempting", "<scheduler>: preempting", id="scheduler"),
    ],
)
def test_text_normaliser(text: str, expected: str) -> None:
    normaliser = TextNormaliser(NS, "kopf-scheduler", {UID_R1: "r01"})
    assert normaliser(text) == expected
