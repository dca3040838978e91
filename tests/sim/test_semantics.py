"""What a scenario means: input formats, priorities, PDB budgets, start times, order and time.

The simulator stands in for the API server's admission (priority classes), the disruption
controller (PDB status) and the kubelet (grace periods); these tests pin those stand-ins to the
Kubernetes rules, mostly through scheduling outcomes a user would see in the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.sim.virtual_clock import SIMULATION_EPOCH
from tests.sim.support import (
    node,
    pdb,
    placements,
    pod,
    pods_by_name,
    priority_class,
    report,
    report_json,
    simulate,
    simulate_docs,
    write_json,
    write_yaml,
)

# Input formats ------------------------------------------------------------------------------


def _mixed_docs() -> list[dict[str, Any]]:
    return [
        priority_class("high", 100),
        node("n1", cpu="2"),
        node("n2", cpu="2", labels={"disk": "ssd"}),
        pod("old", cpu="2", node_name="n1", labels={"app": "old"}),
        pdb("old", {"app": "old"}, min_available=0),
        pod("fast", cpu="1", priority=200, node_selector={"disk": "ssd"}),
        pod("urgent", cpu="2", priority_class="high"),
    ]


def _write_multi_document(tmp_path: Path) -> list[Path]:
    return [write_yaml(tmp_path / "multi.yaml", _mixed_docs())]


def _write_list(tmp_path: Path) -> list[Path]:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": _mixed_docs()}))
    return [path]


def _write_json_list(tmp_path: Path) -> list[Path]:
    return [
        write_json(
            tmp_path / "list.json", {"apiVersion": "v1", "kind": "List", "items": _mixed_docs()}
        )
    ]


def _write_json_array(tmp_path: Path) -> list[Path]:
    return [write_json(tmp_path / "array.json", _mixed_docs())]


def _write_flow_yaml(tmp_path: Path) -> list[Path]:
    path = tmp_path / "flow.yaml"
    path.write_text("---\n".join(yaml.safe_dump(d, default_flow_style=True) for d in _mixed_docs()))
    assert path.read_text().startswith("{")
    return [path]


def _write_two_files(tmp_path: Path) -> list[Path]:
    docs = _mixed_docs()
    return [write_yaml(tmp_path / "a.yaml", docs[:3]), write_yaml(tmp_path / "b.yaml", docs[3:])]


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(_write_list, id="yaml-list"),
        pytest.param(_write_json_list, id="json-list"),
        pytest.param(_write_json_array, id="json-array"),
        pytest.param(_write_flow_yaml, id="yaml-flow-style"),
        pytest.param(_write_two_files, id="two-files"),
    ],
)
def test_every_input_form_means_the_same(tmp_path: Path, write: Any) -> None:
    reference = simulate(_write_multi_document(tmp_path))
    other = simulate(write(tmp_path))
    assert report_json(other) == report_json(reference)


def test_mixed_scenario_outcome(tmp_path: Path) -> None:
    rep = report(simulate(_write_multi_document(tmp_path)))
    assert placements(rep) == {
        "old": ("Preempted", "n1"),
        "fast": ("Bound", "n2"),
        "urgent": ("Bound", "n1"),
    }
    assert [(p["preemptor"], p["victims"]) for p in rep["preemptions"]] == [
        ("default/urgent", ["default/old"])
    ]


# Priorities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "pod_args", "priority", "class_name"),
    [
        pytest.param(
            [priority_class("high", 1000)],
            {"priority": 5, "priority_class": "high"},
            5,
            "high",
            id="spec-priority-wins",
        ),
        pytest.param(
            [priority_class("high", 1000), priority_class("base", 3, global_default=True)],
            {"priority_class": "high"},
            1000,
            "high",
            id="named-class",
        ),
        pytest.param(
            [priority_class("base", 3, global_default=True), priority_class("high", 1000)],
            {},
            3,
            "base",
            id="global-default",
        ),
        pytest.param(
            [
                priority_class("base", 30, global_default=True),
                priority_class("floor", 20, global_default=True),
            ],
            {},
            20,
            "floor",
            id="lowest-of-two-global-defaults",
        ),
        pytest.param([priority_class("high", 1000)], {}, 0, None, id="nothing-means-zero"),
        pytest.param(
            [],
            {"priority_class": "system-cluster-critical"},
            2000000000,
            "system-cluster-critical",
            id="built-in-system-class",
        ),
        pytest.param(
            [priority_class("neg", -5)], {"priority_class": "neg"}, -5, "neg", id="negative"
        ),
    ],
)
def test_priority_resolution(
    tmp_path: Path,
    classes: list[dict[str, Any]],
    pod_args: dict[str, Any],
    priority: int,
    class_name: str | None,
) -> None:
    result = simulate_docs(tmp_path, [*classes, node("n1"), pod("p", **pod_args)])
    assert pods_by_name(report(result))["p"]["priority"] == priority
    spec = result.cluster.pods["default/p"]["spec"]
    assert spec["priority"] == priority
    assert spec.get("priorityClassName") == class_name


def _full_node_with(*preemptor_docs: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node("n1", cpu="2"),
        pod("low", cpu="2", node_name="n1", priority=0, grace=0),
        *preemptor_docs,
    ]


NEVER = (
    "0/1 nodes are available: 1 Insufficient cpu. "
    "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
)


@pytest.mark.parametrize(
    ("docs", "preempts"),
    [
        pytest.param(
            [priority_class("hi", 100), pod("p", cpu="2", priority_class="hi")],
            True,
            id="class-default-policy",
        ),
        pytest.param(
            [priority_class("hi", 100, policy="Never"), pod("p", cpu="2", priority_class="hi")],
            False,
            id="class-never",
        ),
        pytest.param(
            [
                priority_class("hi", 100, policy="Never"),
                pod("p", cpu="2", priority=100, priority_class="hi"),
            ],
            False,
            id="spec-priority-with-never-class",
        ),
        pytest.param(
            [pod("p", cpu="2", priority=100, preemption_policy="Never")],
            False,
            id="spec-never",
        ),
        pytest.param(
            [priority_class("hi", 100, policy="Never", global_default=True), pod("p", cpu="2")],
            False,
            id="global-default-class-never",
        ),
    ],
)
def test_preemption_policy(tmp_path: Path, docs: list[dict[str, Any]], preempts: bool) -> None:
    rep = report(simulate_docs(tmp_path, _full_node_with(*docs)))
    pods = pods_by_name(rep)
    if preempts:
        assert (pods["p"]["status"], pods["low"]["status"]) == ("Bound", "Preempted")
        assert [p["victims"] for p in rep["preemptions"]] == [["default/low"]]
    else:
        assert (pods["p"]["status"], pods["low"]["status"]) == ("Pending", "Bound")
        assert pods["p"]["message"] == NEVER
        assert rep["preemptions"] == []


# PodDisruptionBudgets -----------------------------------------------------------------------


def _db_pods(count: int) -> list[dict[str, Any]]:
    return [pod(f"db-{i}", cpu="100m", node_name="n1", labels={"app": "db"}) for i in range(count)]


@pytest.mark.parametrize(
    ("budget", "allowed"),
    [
        pytest.param(pdb("b", {"app": "db"}, min_available=2), 1, id="min-available-int"),
        pytest.param(pdb("b", {"app": "db"}, min_available=5), 0, id="min-available-above-count"),
        pytest.param(pdb("b", {"app": "db"}, min_available="50%"), 1, id="min-available-pct-up"),
        pytest.param(pdb("b", {"app": "db"}, min_available="100%"), 0, id="min-available-all"),
        pytest.param(pdb("b", {"app": "db"}, min_available=0), 3, id="min-available-zero"),
        pytest.param(pdb("b", {"app": "db"}, max_unavailable=1), 1, id="max-unavailable-int"),
        pytest.param(pdb("b", {"app": "db"}, max_unavailable=0), 0, id="max-unavailable-zero"),
        pytest.param(
            pdb("b", {"app": "db"}, max_unavailable="50%"), 2, id="max-unavailable-pct-up"
        ),
        pytest.param(
            pdb("b", {"app": "db"}, max_unavailable="10%"), 1, id="max-unavailable-small-pct"
        ),
        pytest.param(
            pdb("b", {"app": "db"}, min_available=3, disruptions_allowed=2),
            2,
            id="status-given-wins",
        ),
        pytest.param(
            pdb("b", {"app": "db"}, max_unavailable=3, disruptions_allowed=0),
            0,
            id="status-given-zero",
        ),
        pytest.param(pdb("b", {"app": "none"}, min_available=0), 0, id="selects-nothing"),
    ],
)
def test_pdb_status_is_computed_unless_given(
    tmp_path: Path, budget: dict[str, Any], allowed: int
) -> None:
    docs = [
        node("n1"),
        *_db_pods(3),
        pod("other", cpu="100m", node_name="n1", labels={"app": "web"}),
        pod("elsewhere", cpu="100m", node_name="n1", labels={"app": "db"}, namespace="team"),
        budget,
    ]
    result = simulate_docs(tmp_path, docs)
    assert result.cluster.pdbs["default/b"]["status"]["disruptionsAllowed"] == allowed


def _pdb_preemption(budget: dict[str, Any], preemptor_cpu: str) -> list[dict[str, Any]]:
    return [
        node("n1", cpu="4"),
        pod("db-0", cpu="2", node_name="n1", labels={"app": "db"}, priority=0, grace=1),
        pod("db-1", cpu="2", node_name="n1", labels={"app": "db"}, priority=0, grace=1),
        budget,
        pod("p", cpu=preemptor_cpu, priority=100),
    ]


@pytest.mark.parametrize(
    ("budget", "cpu", "victims", "violations"),
    [
        pytest.param(
            pdb("b", {"app": "db"}, min_available=1), "2", 1, 0, id="one-allowed-one-victim"
        ),
        pytest.param(
            pdb("b", {"app": "db"}, min_available=1), "4", 2, 1, id="one-allowed-two-victims"
        ),
        pytest.param(pdb("b", {"app": "db"}, min_available=2), "2", 1, 1, id="none-allowed"),
        pytest.param(pdb("b", {"app": "db"}, max_unavailable="100%"), "4", 2, 0, id="all-allowed"),
        pytest.param(
            pdb("b", {"app": "db"}, min_available=2, disruptions_allowed=1),
            "2",
            1,
            0,
            id="given-status-allows",
        ),
        pytest.param(
            pdb("b", {"app": "db"}, max_unavailable=2, disruptions_allowed=0),
            "2",
            1,
            1,
            id="given-status-forbids",
        ),
    ],
)
def test_pdb_budget_decides_violations(
    tmp_path: Path, budget: dict[str, Any], cpu: str, victims: int, violations: int
) -> None:
    rep = report(simulate_docs(tmp_path, _pdb_preemption(budget, cpu)))
    [preemption] = rep["preemptions"]
    assert len(preemption["victims"]) == victims
    assert preemption["pdbViolations"] == violations
    assert pods_by_name(rep)["p"]["status"] == "Bound"


# Start times --------------------------------------------------------------------------------


def test_running_pods_keep_their_start_time(tmp_path: Path) -> None:
    docs = [
        node("n1"),
        pod("given", node_name="n1", start_time="2025-06-01T12:00:00Z"),
        pod("unset", node_name="n1"),
    ]
    result = simulate_docs(tmp_path, docs)
    assert result.cluster.pods["default/given"]["status"]["startTime"] == "2025-06-01T12:00:00Z"
    assert result.cluster.pods["default/unset"]["status"]["startTime"] == format_timestamp(
        SIMULATION_EPOCH
    )


def _start_time_nodes(x_starts: tuple[str, ...], y_starts: tuple[str, ...]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [node("x", cpu="4"), node("y", cpu="4")]
    for name, starts in (("x", x_starts), ("y", y_starts)):
        share = f"{4000 // len(starts)}m"
        for index, start in enumerate(starts):
            docs.append(
                pod(
                    f"{name}{index}",
                    cpu=share,
                    node_name=name,
                    priority=0,
                    start_time=start,
                    grace=1,
                )
            )
    docs.append(pod("p", cpu="4", priority=10))
    return docs


@pytest.mark.parametrize(
    ("x_starts", "y_starts", "chosen"),
    [
        pytest.param(
            ("2025-01-01T03:00:00Z",), ("2025-01-01T04:00:00Z",), "y", id="single-later-y"
        ),
        pytest.param(
            ("2025-01-01T05:00:00Z",), ("2025-01-01T04:00:00Z",), "x", id="single-later-x"
        ),
        pytest.param(
            ("2025-01-01T01:00:00Z", "2025-01-01T05:00:00Z"),
            ("2025-01-01T03:00:00Z", "2025-01-01T04:00:00Z"),
            "y",
            id="earliest-of-each-node-compared",
        ),
        pytest.param(
            ("2025-01-01T02:00:00Z", "2025-01-01T02:30:00Z"),
            ("2025-01-01T01:00:00Z", "2025-01-01T09:00:00Z"),
            "x",
            id="late-pod-does-not-rescue-node",
        ),
    ],
)
def test_given_start_times_decide_the_preemption_node(
    tmp_path: Path, x_starts: tuple[str, ...], y_starts: tuple[str, ...], chosen: str
) -> None:
    rep = report(simulate_docs(tmp_path, _start_time_nodes(x_starts, y_starts)))
    [preemption] = rep["preemptions"]
    assert (preemption["node"], preemption["decidedBy"]) == (chosen, "LatestStartTime")
    assert placements(rep)["p"] == ("Bound", chosen)


# Arrival order ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        pytest.param(("zeta", 0), ("alpha", 0), "zeta", id="equal-priority-first-document"),
        pytest.param(("alpha", 0), ("zeta", 0), "alpha", id="equal-priority-reversed"),
        pytest.param(("zeta", 0), ("alpha", 5), "alpha", id="priority-beats-order"),
    ],
)
def test_pending_pods_arrive_in_document_order(
    tmp_path: Path, first: tuple[str, int], second: tuple[str, int], winner: str
) -> None:
    docs = [node("n1", cpu="1")]
    docs += [
        pod(name, cpu="1", priority=prio, preemption_policy="Never")
        for name, prio in (first, second)
    ]
    result = simulate_docs(tmp_path, docs)
    bound = [name for name, (status, _) in placements(report(result)).items() if status == "Bound"]
    assert bound == [winner]
    assert result.pending_order == [f"default/{first[0]}", f"default/{second[0]}"]


def test_pending_pods_arrive_in_file_order(tmp_path: Path) -> None:
    first = write_yaml(tmp_path / "1.yaml", [node("n1", cpu="1"), pod("zz", cpu="1")])
    second = write_yaml(tmp_path / "2.yaml", [pod("aa", cpu="1")])
    assert placements(report(simulate([first, second])))["zz"] == ("Bound", "n1")
    assert placements(report(simulate([second, first])))["aa"] == ("Bound", "n1")


# Virtual time -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grace", "bound_at"),
    [
        pytest.param(None, 30, id="default-30s"),
        pytest.param(45, 45, id="45s"),
        pytest.param(7200, 7200, id="two-hours"),
        pytest.param(0, 0, id="zero-pops-from-backoff"),
    ],
)
def test_victims_leave_after_their_grace_period(
    tmp_path: Path, grace: int | None, bound_at: float
) -> None:
    docs = [
        node("n1", cpu="1"),
        pod("victim", cpu="1", node_name="n1", priority=0, grace=grace),
        pod("p", cpu="1", priority=10),
    ]
    result = simulate_docs(tmp_path, docs)
    rep = report(result)
    times = {(e["reason"], e["object"]): e["time"] for e in rep["events"]}
    assert times[("Preempted", "default/victim")] == 0
    assert times[("Scheduled", "default/p")] == bound_at
    assert placements(rep) == {"victim": ("Preempted", "n1"), "p": ("Bound", "n1")}
    assert rep["summary"]["virtualSeconds"] >= bound_at
    assert "default/victim" not in result.cluster.pods


def test_preemptor_waits_for_the_victim_on_the_virtual_clock(tmp_path: Path) -> None:
    """While the victim terminates the preemptor only holds a nomination; it binds at the end."""
    docs = [
        node("n1", cpu="1"),
        pod("victim", cpu="1", node_name="n1", priority=0, grace=600),
        pod("p", cpu="1", priority=10),
    ]
    result = simulate_docs(tmp_path, docs)
    attempts = [a for a in result.attempts if a.pod == "default/p"]
    assert [a.result for a in attempts] == ["unschedulable", "scheduled"]
    assert attempts[0].preemption is not None
    assert attempts[0].preemption["nominated_node"] == "n1"
    assert attempts[1].time - attempts[0].time == 600
    assert attempts[0].time == SIMULATION_EPOCH
