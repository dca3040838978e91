"""``kopf-scheduler explain``: whatever is written in a pod's decision-record annotation (anyone
who can patch the pod can write it), the command answers with the record or one line saying what
is wrong with it, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kmock
import pytest

from kopf_scheduler.config.loader import check_config_file, default_config
from kopf_scheduler.service.explain_cli import explain
from kopf_scheduler.service.explanations import ANNOTATION, encode_record
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import load_scenario
from tests.cli.support import assert_one_line_error, environment, kopf_scheduler, write_kubeconfig

POD_PATH = "/api/v1/namespaces/team/pods/web"
VALID = {"pod": "team/web", "attempt": 1, "result": "unschedulable", "node": None, "nodes": []}


def pod_with(annotation: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web", "namespace": "team"}
    if annotation is not None:
        metadata["annotations"] = {ANNOTATION: annotation}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {}, "status": {}}


@pytest.fixture
def kubeconfig(tmp_path: Path, kmock: kmock.RawHandler) -> str:
    return str(write_kubeconfig(tmp_path / "kubeconfig", str(kmock.url).rstrip("/")))


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        pytest.param(
            "{not json",
            "not JSON (Expecting property name enclosed in double quotes)",
            id="not-json",
        ),
        pytest.param("[1, 2]", "must be a JSON object, not list", id="a-list"),
        pytest.param('"text"', "must be a JSON object, not str", id="a-string"),
        pytest.param("[" * 100_000 + "]" * 100_000, "not JSON (nested too deeply)", id="deep"),
        pytest.param("{}", "pod is missing", id="empty-object"),
        pytest.param(
            json.dumps({k: v for k, v in VALID.items() if k != "nodes"}),
            "nodes is missing",
            id="no-nodes",
        ),
        pytest.param(
            json.dumps({**VALID, "nodes": [{"node": "n1", "feasible": False, "code": "x"}]}),
            "nodes[0].plugin is missing",
            id="rejected-node-without-plugin",
        ),
        pytest.param(
            json.dumps({**VALID, "nodes": [{"node": "n1", "feasible": True, "scores": []}]}),
            "nodes[0].scores must be an object of numbers",
            id="scores-not-an-object",
        ),
        pytest.param(
            json.dumps({**VALID, "rejected": {"plugin": "NodeResourcesFit"}}),
            "rejected must be a list",
            id="groups-not-a-list",
        ),
        pytest.param(
            json.dumps(
                {**VALID, "rejected": [{"plugin": None, "code": "x", "reasons": [], "nodes": "n1"}]}
            ),
            "rejected[0].nodes must be a list of strings",
            id="group-nodes-not-a-list",
        ),
        pytest.param(
            json.dumps({**VALID, "preemption": {"outcome": "x", "candidates": [{"node": "n"}]}}),
            "preemption.candidates[0].victims is missing",
            id="candidate-without-victims",
        ),
        pytest.param(
            json.dumps({**VALID, "plugins": ["Coscheduling"]}),
            "plugins must be an object",
            id="plugins-not-an-object",
        ),
        pytest.param(
            json.dumps({**VALID, "plugins": {"Coscheduling": {"summary": 3}}}),
            "plugins.Coscheduling.summary must be a string",
            id="summary-not-a-string",
        ),
    ],
)
async def test_a_bad_record_is_one_line(
    kmock: kmock.RawHandler,
    kubeconfig: str,
    capsys: pytest.CaptureFixture[str],
    annotation: str,
    problem: str,
) -> None:
    kmock[f"get {POD_PATH}"] << pod_with(annotation)
    code = await explain("team/web", kubeconfig, "text")
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err == f"error: the {ANNOTATION} annotation of team/web: {problem}\n"


async def test_every_record_the_scheduler_writes_is_shown(
    kmock: kmock.RawHandler, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from kopf_scheduler.sim.bundled_scenarios import bundled_demo

    simulation = Simulation(default_config())
    result = await simulation.run(load_scenario([bundled_demo()]))
    assert any(attempt.preemption for attempt in result.attempts)
    for attempt in result.attempts:
        for limit in (1024, 16384):
            kmock[f"get {POD_PATH}"] << pod_with(encode_record(attempt, limit))
            assert await explain("team/web", kubeconfig, "text") == 0
            assert capsys.readouterr().err == ""


async def test_nodes_rejected_alike_are_shown_one_a_line(
    kmock: kmock.RawHandler, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fit = {"plugin": "NodeResourcesFit", "code": "Unschedulable", "reasons": ["Insufficient cpu"]}
    record = {**VALID, "rejected": [{**fit, "nodes": ["n1", "n2"]}]}
    kmock[f"get {POD_PATH}"] << pod_with(json.dumps(record))
    assert await explain("team/web", kubeconfig, "text") == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"  {node}: rejected by NodeResourcesFit (Unschedulable): Insufficient cpu"
        for node in ("n1", "n2")
    ]


async def test_a_pod_without_a_record(
    kmock: kmock.RawHandler, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kmock[f"get {POD_PATH}"] << pod_with(None)
    assert await explain("team/web", kubeconfig, "text") == 0
    assert "no decision record is stored on it" in capsys.readouterr().out


def test_a_missing_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    outcome = kopf_scheduler(
        "explain", "team/web", "--kubeconfig", str(absent), env=environment(tmp_path)
    )
    assert_one_line_error(outcome, 2, f"kubeconfig {absent}: the file does not exist")


def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    outcome = kopf_scheduler(
        "explain", "team/web", "--kubeconfig", str(kubeconfig), env=environment(tmp_path)
    )
    assert outcome.code == 1
    assert "Traceback" not in outcome.stderr
    [line] = outcome.error_lines
    assert line.startswith("error: cannot connect to the API server: ")


async def test_a_gang_members_record_shows_its_group(
    kmock: kmock.RawHandler, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).parents[2]
    config = check_config_file(root / "manifests/base/config.yaml").config
    scenario = load_scenario([root / "operator/kopf_scheduler/scenarios/gangs.yaml"])
    result = await Simulation(config, explain=True).run(scenario)
    failed = next(a for a in result.attempts if a.result == "unschedulable")
    kmock[f"get {POD_PATH}"] << pod_with(encode_record(failed, 16384))
    assert await explain("team/web", kubeconfig, "text") == 0
    assert (
        "  Coscheduling: 3 waiting at Permit: 3 of 4 members placed, 1 missing "
        "(group default/training, members 4, minMember 4, missing 1, placed 3, waiting 3)\n"
    ) in capsys.readouterr().out
