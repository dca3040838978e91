"""Every way the scenario loader refuses input: the exact file, object and reason, and exit 2.

A scenario is hand-written more often than not, so a rejection has to say which file, which
object and what is wrong with it; the CLI prints ``error: <file>: <object>: <reason>`` on stderr,
nothing on stdout, and exits with 2 (a usage error) before anything is simulated.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from tests.sim.support import node, pdb, pod, priority_class, write_yaml

QUANTITY_RULE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUPPORTED = (
    "supported: Deployment (apps/v1), ReplicaSet (apps/v1), StatefulSet (apps/v1), "
    "Job (batch/v1), PodDisruptionBudget (policy/v1), DeviceClass (resource.k8s.io/v1), "
    "ResourceClaim (resource.k8s.io/v1), ResourceClaimTemplate (resource.k8s.io/v1), "
    "ResourceSlice (resource.k8s.io/v1), PriorityClass (scheduling.k8s.io/v1), "
    "PodGroup (scheduling.x-k8s.io/v1alpha1), "
    "CSIDriver (storage.k8s.io/v1), CSINode (storage.k8s.io/v1), "
    "CSIStorageCapacity (storage.k8s.io/v1), StorageClass (storage.k8s.io/v1), "
    "VolumeAttachment (storage.k8s.io/v1), Namespace (v1), Node (v1), PersistentVolume (v1), "
    "PersistentVolumeClaim (v1), Pod (v1)"
)
INVALID_YAML = (
    "line 2, column 1: not valid YAML: while parsing a flow sequence, "
    "expected ',' or ']', but got '<stream end>'"
)

Writer = Callable[[Path], Path]


def _text(name: str, text: str) -> Writer:
    def write(directory: Path) -> Path:
        path = directory / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


def _bytes(name: str, data: bytes) -> Writer:
    def write(directory: Path) -> Path:
        path = directory / name
        path.write_bytes(data)
        return path

    return write


def _docs(name: str, *docs: dict[str, object]) -> Writer:
    return lambda directory: write_yaml(directory / name, docs)


def _missing(directory: Path) -> Path:
    return directory / "absent.yaml"


def _directory(directory: Path) -> Path:
    path = directory / "folder.yaml"
    path.mkdir()
    return path


def _bad_pod_quantity() -> dict[str, object]:
    raw = pod("web", cpu="abc")
    return raw


def _bad_second_container() -> dict[str, object]:
    raw = pod("web", cpu="1")
    raw["spec"]["containers"].append(  # type: ignore[index]
        {"name": "side", "resources": {"requests": {"memory": "lots"}}}
    )
    return raw


CASES = [
    pytest.param(_missing, "file", "cannot read: No such file or directory", id="missing-file"),
    pytest.param(_directory, "file", "cannot read: Is a directory", id="directory"),
    pytest.param(
        _bytes("latin1.yaml", b"\xffkind: Node\n"),
        "file",
        "not UTF-8 text: byte 0xff at offset 0 (invalid start byte)",
        id="not-utf8",
    ),
    pytest.param(_text("bad.yaml", "a: [1, 2\n"), "file", INVALID_YAML, id="invalid-yaml"),
    pytest.param(
        _text("bad.json", '{"kind": "Node",'),
        "file",
        "line 1, column 17: not valid JSON: Expecting property name enclosed in double quotes",
        id="invalid-json",
    ),
    pytest.param(
        _text("list.yaml", "- 1\n- 2\n"),
        "document #1",
        "must be a Kubernetes object (a mapping)",
        id="sequence-document",
    ),
    pytest.param(
        _text("second.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n42\n"),
        "document #2",
        "must be a Kubernetes object (a mapping)",
        id="scalar-second-document",
    ),
    pytest.param(
        _text(
            "json-array.json",
            '[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "x"]',
        ),
        "document #2",
        "must be a Kubernetes object (a mapping)",
        id="json-array-with-a-string",
    ),
    pytest.param(
        _docs("svc.yaml", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}),
        "Service web",
        f"unsupported apiVersion/kind v1/Service; {SUPPORTED}",
        id="unsupported-kind",
    ),
    pytest.param(
        _docs("apps.yaml", {**pod("web"), "apiVersion": "apps/v1"}),
        "Pod default/web",
        f"unsupported apiVersion/kind apps/v1/Pod; {SUPPORTED}",
        id="unsupported-api-version",
    ),
    pytest.param(
        _docs(
            "pvc.yaml",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "-1Gi"}}},
            },
        ),
        "PersistentVolumeClaim default/data",
        'spec.resources.requests[storage]: Invalid value: "-1Gi": must be greater than or equal '
        "to 0",
        id="claim-negative-size",
    ),
    pytest.param(
        _docs("pod.yaml", node("n"), _bad_pod_quantity()),
        "Pod default/web",
        f"spec.containers[0].resources.requests.cpu: {QUANTITY_RULE}, got 'abc'",
        id="pod-bad-cpu",
    ),
    pytest.param(
        _docs("pod.yaml", _bad_second_container()),
        "Pod default/web",
        f"spec.containers[1].resources.requests.memory: {QUANTITY_RULE}, got 'lots'",
        id="pod-bad-memory-second-container",
    ),
    pytest.param(
        _docs("node.yaml", node("n1", cpu="4x")),
        "Node n1",
        f"status.allocatable.cpu: {QUANTITY_RULE}, got '4x'",
        id="node-bad-allocatable",
    ),
    pytest.param(
        _docs("pdb.yaml", pdb("db", {"app": "db"}, min_available=1, max_unavailable=1)),
        "PodDisruptionBudget default/db",
        "spec: minAvailable and maxUnavailable cannot be both set",
        id="pdb-both-bounds",
    ),
    pytest.param(
        _docs("pc.yaml", priority_class("high", None)),
        "PriorityClass high",
        "value: must be an integer, got None",
        id="priority-class-without-value",
    ),
    pytest.param(
        _docs("dup.yaml", node("n1"), node("n1")),
        "Node n1",
        "defined more than once",
        id="duplicate-node",
    ),
    pytest.param(
        _docs("dup.yaml", pod("p"), pod("p", namespace="default")),
        "Pod default/p",
        "defined more than once",
        id="duplicate-pod-implicit-namespace",
    ),
    pytest.param(
        _docs("ns.yaml", {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}),
        "Namespace #1",
        "metadata.name: must be a non-empty string",
        id="namespace-without-name",
    ),
    pytest.param(
        _docs("bound.yaml", node("n1"), pod("p", node_name="ghost")),
        "Pod default/p",
        "spec.nodeName: node 'ghost' is not defined",
        id="bound-to-undefined-node",
    ),
    pytest.param(
        _docs("class.yaml", node("n1"), pod("p", priority_class="gold")),
        "Pod default/p",
        "spec.priorityClassName: no PriorityClass named 'gold'",
        id="unknown-priority-class",
    ),
    pytest.param(
        _text("list.yaml", "apiVersion: v1\nkind: List\n"),
        "List",
        "items must be a list",
        id="list-without-items",
    ),
    pytest.param(
        _text("list.yaml", "apiVersion: v1\nkind: List\nitems: {a: 1}\n"),
        "List",
        "items must be a list",
        id="list-items-not-a-list",
    ),
]


@pytest.mark.parametrize(("write", "obj", "reason"), CASES)
def test_loader_rejects(tmp_path: Path, write: Writer, obj: str, reason: str) -> None:
    path = write(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario([path])
    error = info.value
    assert (error.source, error.object, error.reason) == (str(path), obj, reason)
    assert str(error) == f"{path}: {obj}: {reason}"


@pytest.mark.parametrize(("write", "obj", "reason"), CASES)
def test_cli_exits_2_with_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], write: Writer, obj: str, reason: str
) -> None:
    path = write(tmp_path)
    assert main(["simulate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {path}: {obj}: {reason}\n"
    assert captured.out == ""


def test_error_names_the_file_that_holds_the_bad_reference(tmp_path: Path) -> None:
    nodes = write_yaml(tmp_path / "nodes.yaml", [node("n1")])
    pods = write_yaml(tmp_path / "pods.yaml", [pod("ok", node_name="n1"), pod("p", node_name="n2")])
    with pytest.raises(ScenarioError) as info:
        load_scenario([nodes, pods])
    assert str(info.value) == f"{pods}: Pod default/p: spec.nodeName: node 'n2' is not defined"


def test_references_may_point_into_another_file(tmp_path: Path) -> None:
    pods = write_yaml(tmp_path / "pods.yaml", [pod("p", node_name="n1", priority_class="gold")])
    rest = write_yaml(tmp_path / "rest.yaml", [node("n1"), priority_class("gold", 7)])
    scenario = load_scenario([pods, rest])
    assert [p["metadata"]["name"] for p in scenario.running_pods] == ["p"]


def test_duplicate_across_files_names_the_second_file(tmp_path: Path) -> None:
    first = write_yaml(tmp_path / "a.yaml", [node("n1")])
    second = write_yaml(tmp_path / "b.yaml", [node("n2"), node("n1")])
    with pytest.raises(ScenarioError) as info:
        load_scenario([first, second])
    assert str(info.value) == f"{second}: Node n1: defined more than once"


def test_first_problem_wins_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_yaml(tmp_path / "good.yaml", [node("n1"), pod("p")])
    bad = write_yaml(tmp_path / "bad.yaml", [node("n2", cpu="x"), pdb("d", {"a": "b"})])
    assert main(["simulate", str(good), str(bad), "-o", "json"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {bad}: Node n2: status.allocatable.cpu: ")
    assert captured.out == ""


def test_system_priority_classes_need_no_definition(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "s.yaml", [node("n1"), pod("p", priority_class="system-node-critical")]
    )
    assert len(load_scenario([path]).pending_pods) == 1


CONFIG_HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            CONFIG_HEADER + "percentageOfNodesToScore: 300\n",
            "percentageOfNodesToScore: must be at most 100, got 300",
            id="out-of-range",
        ),
        pytest.param(CONFIG_HEADER + "bogusField: 1\n", "bogusField: unknown field", id="unknown"),
    ],
)
def test_bad_config_exits_2_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    assert main(["simulate", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {config}: {message}\n"
    assert captured.out == ""


def test_missing_config_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "nope.yaml"
    assert main(["simulate", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {config}: ")
    assert "No such file or directory" in captured.err
    assert captured.out == ""
