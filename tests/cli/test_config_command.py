"""``kopf-scheduler config validate FILE`` and ``run --write-config-to FILE``, as a user runs them.

A configuration file that kube-scheduler would refuse is refused here in one line naming the file,
the line or field and the problem (exit 2); one that is valid exits 0, and fields it sets without
effect are warned about on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kopf_scheduler.config.loader import check_config_file
from tests.cli.support import Outcome, assert_one_line_error, environment, kopf_scheduler

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

Writer = Callable[[Path], Path]


def text(body: str) -> Writer:
    def write(directory: Path) -> Path:
        path = directory / "config.yaml"
        path.write_text(body)
        return path

    return write


def raw(data: bytes) -> Writer:
    def write(directory: Path) -> Path:
        path = directory / "config.yaml"
        path.write_bytes(data)
        return path

    return write


def validate(path: Path, home: Path) -> Outcome:
    return kopf_scheduler("config", "validate", str(path), env=environment(home))


@pytest.mark.parametrize(
    ("writer", "message"),
    [
        pytest.param(
            text(HEADER + "profiles:\n- schedulerName: a\nprofiles:\n- schedulerName: b\n"),
            '{path}: line 5: duplicate key "profiles" (first at line 3)',
            id="duplicate-profiles",
        ),
        pytest.param(
            text(HEADER + "leaderElection:\n  leaderElect: true\n  leaderElect: false\n"),
            '{path}: line 5: duplicate key "leaderElect" (first at line 4)',
            id="duplicate-nested-key",
        ),
        pytest.param(
            text(HEADER + "clientConnection:\n  qps: .nan\n"),
            "{path}: line 4: .nan is not a finite number (Kubernetes numbers are finite)",
            id="nan",
        ),
        pytest.param(
            text(HEADER + "parallelism: 99999999999\n"),
            "{path}: parallelism: must be at most 2147483647, got 99999999999",
            id="out-of-int32-range",
        ),
        pytest.param(
            raw(HEADER.encode() + b"profiles:\n- schedulerName: caf\xe9\n"),
            "{path}: not UTF-8 text: byte 0xe9 at offset 106 (invalid continuation byte)",
            id="not-utf8",
        ),
        pytest.param(
            text(HEADER + "profiles: " + "[" * 20_000 + "]" * 20_000 + "\n"),
            "{path}: line 3: nested more than 100 levels deep",
            id="deeply-nested",
        ),
        pytest.param(
            text(""),
            "{path}: the configuration is empty; it needs apiVersion "
            "kubescheduler.config.k8s.io/v1",
            id="empty",
        ),
        pytest.param(
            lambda directory: directory / "absent.yaml",
            "{path}: cannot read the file: No such file or directory",
            id="missing-file",
        ),
    ],
)
def test_bad_files_get_one_line_and_exit_2(tmp_path: Path, writer: Writer, message: str) -> None:
    path = writer(tmp_path)
    assert_one_line_error(validate(path, tmp_path), 2, message.format(path=path))


def test_a_valid_file_exits_0_with_its_warnings_on_stderr(tmp_path: Path) -> None:
    path = text(HEADER + "parallelism: 32\nprofiles:\n- schedulerName: default-scheduler\n")(
        tmp_path
    )
    outcome = validate(path, tmp_path)
    assert outcome.code == 0
    assert outcome.stdout == f"{path}: valid (profiles: default-scheduler)\n"
    assert [line.split(": ")[2] for line in outcome.error_lines] == [
        "parallelism",
        "profiles[0].schedulerName",
    ]
    assert all(line.startswith(f"warning: {path}: ") for line in outcome.error_lines)


def test_write_config_to_writes_the_defaults_without_a_cluster(tmp_path: Path) -> None:
    config = text(HEADER + "profiles:\n- schedulerName: mine\n")(tmp_path)
    target = tmp_path / "written.yaml"
    outcome = kopf_scheduler(
        "run", "--config", str(config), "--write-config-to", str(target), env=environment(tmp_path)
    )
    assert outcome.code == 0, outcome.stderr
    written = yaml.safe_load(target.read_text())
    assert written["profiles"][0]["schedulerName"] == "mine"
    assert written["leaderElection"]["leaseDuration"] == "15s"
    assert check_config_file(target).warnings == ()


def test_write_config_to_an_unwritable_place(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir.yaml"
    outcome = kopf_scheduler("run", "--write-config-to", str(target), env=environment(tmp_path))
    assert_one_line_error(outcome, 2, f"cannot write {target}: No such file or directory")


def test_write_config_to_refuses_a_bad_config(tmp_path: Path) -> None:
    config = text(HEADER + "parallelism: 0\n")(tmp_path)
    target = tmp_path / "written.yaml"
    outcome = kopf_scheduler(
        "run", "--config", str(config), "--write-config-to", str(target), env=environment(tmp_path)
    )
    assert_one_line_error(outcome, 2, f"{config}: parallelism: must be at least 1, got 0")
    assert not target.exists()


def test_every_error_is_reported_at_once_with_the_name_likely_meant(tmp_path: Path) -> None:
    path = text(
        HEADER
        + "percentageOfNodeToScore: 50\n"
        + "profiles:\n"
        + "- schedulerName: a\n"
        + "  plugins:\n"
        + "    score:\n"
        + "      enabled:\n"
        + "      - name: NodeResourceFit\n"
        + "      - name: NoSuchPluginAtAll\n"
        + "  pluginConfig:\n"
        + "  - name: NodeResourcesFit\n"
        + "    args: {scoringStrateg: {}}\n"
        + "- schedulername: b\n"
        + "leaderElection: {leaseDuration: 10}\n"
    )(tmp_path)
    outcome = validate(path, tmp_path)
    assert outcome.code == 2
    assert outcome.stdout == ""
    assert "Traceback" not in outcome.stderr
    assert sorted(outcome.error_lines) == sorted(
        f"error: {path}: {line}"
        for line in [
            "percentageOfNodeToScore: unknown field; did you mean 'percentageOfNodesToScore'?",
            "profiles[1].schedulername: unknown field; did you mean 'schedulerName'?",
            "profiles[0].pluginConfig[0].args.scoringStrateg: unknown field; "
            "did you mean 'scoringStrategy'?",
            "profiles[0].plugins.score.enabled[0].name: unknown plugin 'NodeResourceFit'; "
            "did you mean 'NodeResourcesFit'?",
            "profiles[0].plugins.score.enabled[1].name: unknown plugin 'NoSuchPluginAtAll' "
            "(neither in-tree nor installed: an out-of-tree plugin's distribution declares it "
            "as an entry point in the group kopf_scheduler.plugins)",
            "leaderElection.leaseDuration: must be a duration such as '15s', got 10",
        ]
    )


def test_config_schema_prints_the_published_schema(tmp_path: Path) -> None:
    outcome = kopf_scheduler("config", "schema", env=environment(tmp_path))
    assert (outcome.code, outcome.stderr) == (0, "")
    published = Path(__file__).resolve().parents[2] / "schema" / "kopf-scheduler-config.schema.json"
    assert json.loads(outcome.stdout) == json.loads(published.read_text())
    assert json.loads(outcome.stdout)["properties"]["kind"] == {
        "const": "KubeSchedulerConfiguration"
    }
