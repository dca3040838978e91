"""The example out-of-tree plugin, installed by pip as a user would, changes the decision.

``examples/plugins/prefer-labelled-nodes`` is copied out (a build writes into its source folder)
and installed with ``pip install --no-deps --no-build-isolation --no-index --target``: nothing
is fetched, setuptools comes from the virtualenv, and the entry point is the one its
pyproject.toml declares. The bundled scenario then runs through ``simulate`` without and with the
example's config.yaml.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "prefer-labelled-nodes"
MODULE = "prefer_labelled_nodes"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("example")
    source = work / "source"
    shutil.copytree(EXAMPLE, source)
    target = work / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture
def on_path(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(installed))
    yield installed
    sys.modules.pop(MODULE, None)


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["simulate", str(EXAMPLE / "scenario.yaml"), "-o", "json", "--explain", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    return report


def placements(report: dict[str, Any]) -> dict[str, str]:
    return {pod["name"]: pod["node"] for pod in report["pods"]}


def test_the_installed_distribution_declares_the_entry_point(installed: Path) -> None:
    (entry_points,) = installed.glob("*.dist-info/entry_points.txt")
    assert entry_points.read_text().split() == [
        "[kopf_scheduler.plugins]",
        "PreferLabelledNodes",
        "=",
        "prefer_labelled_nodes:new",
    ]


def test_the_plugin_sends_web_to_the_labelled_node(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = simulate(capsys)
    assert placements(default) == {"resident": "node-b", "web": "node-a", "big": "node-a"}

    preferred = simulate(capsys, "--config", str(EXAMPLE / "config.yaml"))
    assert placements(preferred) == {"resident": "node-b", "web": "node-b", "big": "node-a"}
    (web,) = [a for a in preferred["attempts"] if a["pod"] == "default/web"]
    scores = {n["node"]: n["scores"]["PreferLabelledNodes"] for n in web["nodes"]}
    assert scores == {"node-a": 0, "node-b": 200}  # 100 on the labelled node, weight 2


def test_the_explanation_names_the_plugin(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    config = str(EXAMPLE / "config.yaml")
    assert main(["simulate", str(EXAMPLE / "scenario.yaml"), "--config", config, "--explain"]) == 0
    table = capsys.readouterr().out
    assert "node-b: feasible, total 636 (" in table
    assert "PreferLabelledNodes=200)" in table


@pytest.mark.parametrize(
    ("args", "field", "reason"),
    [
        pytest.param(
            {},
            "profiles[0].pluginConfig[0].args.labelKey",
            "is required",
            id="missing-key",
        ),
        pytest.param(
            {"labelKey": "a/b/c"},
            "profiles[0].pluginConfig[0].args.labelKey",
            "'a/b/c' is not a label key: must have at most one '/'",
            id="bad-key",
        ),
        pytest.param(
            {"labelKey": "example.com/preferred", "labelValue": True},
            "profiles[0].pluginConfig[0].args.labelValue",
            "must be a string, got True",
            id="bad-value",
        ),
        pytest.param(
            {"labelKey": "example.com/preferred", "weight": 3},
            "profiles[0].pluginConfig[0].args.weight",
            "unknown field",
            id="unknown-field",
        ),
    ],
)
def test_bad_args_stop_it_with_the_field_named(
    on_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: dict[str, Any],
    field: str,
    reason: str,
) -> None:
    raw = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    raw["profiles"][0]["pluginConfig"][0]["args"] = args
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    capsys.readouterr()
    assert main(["simulate", str(EXAMPLE / "scenario.yaml"), "--config", str(config)]) == 2
    assert capsys.readouterr().err == f"error: {config}: {field}: {reason}\n"
