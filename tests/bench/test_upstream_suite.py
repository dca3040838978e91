"""scheduler_perf v1.34.10's configs read as they are: test cases, workloads, params, ops."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench.upstream import suite, support
from bench.upstream.cli import render_list

SUITE = suite.suite_dir()
MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
needs_suite = pytest.mark.skipif(
    not (SUITE / "misc" / suite.CONFIG_NAME).exists(),
    reason=f"scheduler_perf v1.34.10 is not in the Go module cache ({SUITE}); "
    "`make cluster-up` downloads it",
)


@pytest.fixture(scope="module")
def test_cases() -> list[suite.TestCase]:
    return suite.load_all(suite.default_configs())


def _workload(test_cases: list[suite.TestCase], workload_id: str) -> suite.Workload:
    (found,) = [w for tc in test_cases for w in tc.workloads if w.id == workload_id]
    return found


@needs_suite
def test_the_six_configs_hold_37_test_cases_and_208_workloads(
    test_cases: list[suite.TestCase],
) -> None:
    workloads = [w for tc in test_cases for w in tc.workloads]
    assert len(test_cases) == 37
    assert len(workloads) == 208
    assert sum(suite.LABEL_PERFORMANCE in w.labels for w in workloads) == 124
    assert sum(suite.LABEL_INTEGRATION in w.labels for w in workloads) == 73


@needs_suite
def test_nothing_in_the_real_configs_is_unknown(test_cases: list[suite.TestCase]) -> None:
    assert [tc.name for tc in test_cases if tc.unknown_keys] == []
    assert [w.id for tc in test_cases for w in tc.workloads if w.unknown_keys] == []
    assert [(tc.name, op.opcode) for tc in test_cases for op in tc.ops if not op.known] == []
    assert [
        (tc.name, op.unknown_fields) for tc in test_cases for op in tc.ops if op.unknown_fields
    ] == []


@needs_suite
def test_scheduling_basic_fills_its_template_from_the_workload_params(
    test_cases: list[suite.TestCase],
) -> None:
    workload = _workload(test_cases, "SchedulingBasic/5000Nodes_10000Pods")
    assert workload.threshold.get() == 270
    assert workload.threshold_selector == suite.ThresholdSelector("SchedulingThroughput", "Average")
    assert workload.feature_gates == {"SchedulerQueueingHints": False}
    assert workload.labels == ("performance",)
    ops = workload.ops()
    assert [(op.index, op.opcode, op.count()) for op in ops] == [
        (0, "createNodes", 5000),
        (1, "createPods", 1000),
        (2, "createPods", 10000),
    ]
    assert [op.collects_metrics for op in ops] == [False, False, True]
    default_pod = workload.test_case.default_pod_template
    assert default_pod == SUITE / "templates" / "pod-default.yaml"
    assert default_pod.exists()


@needs_suite
def test_template_paths_are_resolved_against_the_config_directory(
    test_cases: list[suite.TestCase],
) -> None:
    paths = [
        Path(value)
        for tc in test_cases
        for op in tc.ops
        for name, value in op.fields.items()
        if name.endswith("Path")
    ]
    assert len(paths) > 50
    assert all(path.is_absolute() and path.exists() for path in paths)
    extended = _workload(test_cases, "SchedulingWithExtendedResource/fast")
    node_templates = [op.path("nodeTemplatePath") for op in extended.ops()]
    assert SUITE / "misc" / "templates" / "node-with-extended-resource.yaml" in node_templates


@needs_suite
def test_durations_and_driver_counts_come_from_their_params(
    test_cases: list[suite.TestCase],
) -> None:
    (steady,) = [
        w
        for tc in test_cases
        for w in tc.workloads
        if w.test_case.name == "SteadyStateClusterResourceClaimTemplate" and w.name == "fast"
    ]
    ops = {op.opcode: op for op in steady.ops()}
    assert ops["createPods"].get("steadyState") is True
    assert ops["createPods"].seconds() == suite.go_duration_seconds(steady.params["duration"])
    assert ops["createResourceDriver"].get("maxClaimsPerNode") == steady.params["maxClaimsPerNode"]
    assert steady.feature_gates["DynamicResourceAllocation"] is True


@needs_suite
def test_pod_sets_are_unrolled_before_the_ops_are_numbered(
    test_cases: list[suite.TestCase],
) -> None:
    workload = _workload(test_cases, "SchedulingRequiredPodAntiAffinityWithNSSelector/10Nodes")
    ops = workload.ops()
    namespaces = [op.get("namespace") for op in ops if op.opcode == "createPods"]
    initial = int(workload.params["initNamespaces"])
    assert namespaces == [*(f"init-ns-{i}" for i in range(initial)), "measure-ns-0"]
    assert [op.index for op in ops] == list(range(len(ops)))
    assert "createPodSets" not in {op.opcode for op in ops}


@needs_suite
def test_the_listing_counts_every_performance_workload_as_run(
    test_cases: list[suite.TestCase],
) -> None:
    listing = render_list([w for tc in test_cases for w in tc.workloads])
    assert "performance: 124 of 124 workloads run in full" in listing
    assert "held back" not in listing
    assert "SchedulingBasic/5Nodes  [integration-test,short]  runs" in listing


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "performance-config.yaml"
    path.write_text(text)
    return path


def test_unknown_op_kinds_fields_and_keys_are_kept_and_reported(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
- name: Odd
  futureKey: 1
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    shinyNewStrategy: {}
  - opcode: teleportPods
    count: 3
  workloads:
  - name: small
    params: {nodes: 2}
    colour: blue
""",
    )
    (test_case,) = suite.load(config)
    (workload,) = test_case.workloads
    assert test_case.unknown_keys == ("futureKey",)
    assert workload.unknown_keys == ("colour",)
    nodes, teleport = workload.ops()
    assert nodes.count() == 2
    assert nodes.unknown_fields == ("shinyNewStrategy",)
    assert not teleport.known
    assert teleport.fields == {"count": 3}
    reasons = [str(b) for b in support.blockers(workload)]
    assert reasons == [
        "futureKey: a test case or workload key the runner does not know",
        "colour: a test case or workload key the runner does not know",
        "op 0 createNodes: fields the runner does not know: shinyNewStrategy",
        "op 1 teleportPods: not an op kind of scheduler_perf v1.34.10",
    ]


def test_a_missing_parameter_keeps_the_workload_from_running(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
- name: Short
  workloadTemplate:
  - opcode: createPods
    countParam: $pods
    collectMetrics: true
  workloads:
  - name: none
    params: {}
""",
    )
    (workload,) = suite.load(config)[0].workloads
    with pytest.raises(suite.SuiteError, match="parameter pods is undefined"):
        workload.ops()
    assert [b.opcode for b in support.blockers(workload)] == ["params"]


def test_workload_gates_override_the_test_case_and_labels_add_up(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
- name: Gated
  labels: [performance]
  featureGates: {A: true, B: true}
  defaultPodTemplatePath: ../pod.yaml
  workloadTemplate:
  - opcode: sleep
    duration: 1m30s
  workloads:
  - name: w
    labels: [short]
    featureGates: {B: false}
    threshold: {topic-a: 5}
""",
    )
    (test_case,) = suite.load(config)
    (workload,) = test_case.workloads
    assert workload.feature_gates == {"A": True, "B": False}
    assert workload.labels == ("performance", "short")
    assert workload.threshold.get("topic-a") == 5
    assert workload.threshold.get() == 0
    assert test_case.default_pod_template == (tmp_path.parent / "pod.yaml").resolve()
    assert workload.ops()[0].seconds() == 90.0
    assert suite.select([test_case], labels=["short"]) == [workload]
    assert suite.select([test_case], names=["Gated/w"]) == [workload]
    assert suite.select([test_case], labels=["integration-test"]) == []


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("0", 0.0), ("1.5s", 1.5)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert suite.go_duration_seconds(text) == pytest.approx(seconds)


def test_a_malformed_duration_is_refused() -> None:
    with pytest.raises(suite.SuiteError):
        suite.go_duration_seconds("10 seconds")


@needs_suite
def test_the_subcommand_lists_without_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    assert main(["upstream", "--list", "--workload", "SchedulingBasic/5Nodes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "SchedulingBasic/5Nodes  [integration-test,short]  runs"
    assert "integration-test: 1 of 1 workloads run in full" in lines


@needs_suite
def test_a_misspelt_workload_is_one_line_and_runs_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.__main__ import main

    arguments = ["upstream", "--workload", "SchedulingBasic/5Nodes", "--workload", "Nope/5Nodes"]
    assert main(arguments) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "error: no workload is named Nope/5Nodes\n")


@needs_suite
def test_smallest_first_lists_the_quick_workloads_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.__main__ import main

    chosen = ["--workload", "SchedulingBasic", "--workload", "EventHandlingPodAdd"]
    assert main(["upstream", "--list", "--label", "performance", *chosen]) == 0
    in_suite_order = [line.split()[0] for line in capsys.readouterr().out.splitlines()[:7]]
    assert in_suite_order[0] == "SchedulingBasic/500Nodes"
    assert in_suite_order[6] == "EventHandlingPodAdd/1000Pods"
    assert main(["upstream", "--list", "--label", "performance", "--smallest-first", *chosen]) == 0
    smallest_first = [line.split()[0] for line in capsys.readouterr().out.splitlines()[:7]]
    assert smallest_first[:3] == [
        "EventHandlingPodAdd/1000Pods",
        "SchedulingBasic/500Nodes",
        "SchedulingBasic/5000Nodes",
    ]
    assert sorted(smallest_first) == sorted(in_suite_order)


def _ci_slice() -> list[str]:
    """The workloads ``make bench-upstream-ci`` runs, read from the Makefile."""
    found = re.search(
        r"^BENCH_UPSTREAM_CI_WORKLOADS \?=((?:.*\\\n)*.*)$", MAKEFILE.read_text(), re.M
    )
    assert found is not None
    return found.group(1).replace("\\\n", " ").split()


@needs_suite
def test_the_ci_slice_uses_every_op_of_the_suite_the_runner_carries_out(
    test_cases: list[suite.TestCase],
) -> None:
    workloads = [_workload(test_cases, name) for name in _ci_slice()]
    assert all(suite.LABEL_INTEGRATION in w.labels for w in workloads)
    assert all(not support.blockers(w) for w in workloads)
    used = {op.opcode for w in workloads for op in w.ops()}
    in_the_suite = {op.opcode for tc in test_cases for w in tc.workloads for op in w.ops()}
    assert support.SUPPORTED & in_the_suite <= used
