"""Keep the gang benchmark (G1) working: a tiny run in process, its check, its command line."""

from __future__ import annotations

from typing import Any

import pytest
from bench.gangs import (
    PODGROUP_LABEL,
    gang_check,
    gang_config,
    gang_scenario,
    main,
    run_inprocess,
)

from kopf_scheduler.config.loader import parse_config


def _pod(group: str, node: str | None) -> dict[str, Any]:
    return {"metadata": {"labels": {PODGROUP_LABEL: group}}, "spec": {"nodeName": node}}


def test_scaled_g1_keeps_the_group_size_and_labels_members_group_by_group() -> None:
    scenario = gang_scenario("G1@0.1")
    assert (scenario.nodes, scenario.groups, scenario.size) == (100, 50, 8)
    assert scenario.label == "G1@0.1"
    pods = scenario.member_pods("ns")
    assert len(pods) == 400
    groups = [pod["metadata"]["labels"][PODGROUP_LABEL] for pod in pods]
    assert groups[:9] == ["g-0"] * 8 + ["g-1"]
    assert groups[-1] == "g-49"
    assert [pg["spec"]["minMember"] for pg in scenario.podgroups("ns")] == [8] * 50


def test_the_gang_configuration_is_accepted_with_coscheduling_in_the_profile() -> None:
    raw = gang_config(qps=50, burst=100)
    plugins = raw["profiles"][0]["plugins"]
    assert plugins["queueSort"]["enabled"] == [{"name": "Coscheduling"}]
    assert plugins["queueSort"]["disabled"] == [{"name": "PrioritySort"}]
    assert plugins["permit"]["enabled"] == [{"name": "Coscheduling"}]
    parse_config(raw)  # raises on anything the scheduler would refuse at start


def test_gang_check_tells_whole_partial_and_unbound_groups_apart() -> None:
    scenario = gang_scenario("G1@0.006")  # 3 groups of 8
    pods = [
        *(_pod("g-0", "n1") for _ in range(8)),
        *(_pod("g-1", "n1") for _ in range(5)),
        *(_pod("g-1", None) for _ in range(3)),
        *(_pod("g-2", None) for _ in range(8)),
    ]
    result = gang_check(pods, scenario)
    assert result == {"groups_whole": 1, "groups_partial": 1, "groups_unbound": 1, "ok": False}
    assert gang_check([_pod(f"g-{g}", "n") for g in range(3) for _ in range(8)], scenario)["ok"]


def test_a_tiny_g1_in_process_binds_every_group_whole() -> None:
    result = run_inprocess(gang_scenario("G1@0.004"))  # 2 groups of 8 on 4 nodes
    assert result["measured_pods"] == 16
    assert result["bound_measured"] == 16
    assert result["checks"] == {
        "groups_whole": 2,
        "groups_partial": 0,
        "groups_unbound": 0,
        "ok": True,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("S1", "unknown gang scenario 'S1' (known: G1)"),
        ("G1@half", "bad scale 'half' in 'G1@half': expected a number"),
    ],
)
def test_bad_specs_are_one_line_errors(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([spec, "--no-e2e"]) == 2
    assert capsys.readouterr().err == f"bench.gangs: error: {message}\n"
