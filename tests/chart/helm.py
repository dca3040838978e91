"""Running the locally built helm on the chart, and the value combinations the tests render.

helm is built from its Go module into the cache (``python -m e2e.localcluster helm``, or
``make helm``); the tests that need it skip when it is not built. Every combination is a values
file in ``tests/chart/values/`` rendered as one release in one namespace; the monitoring one
renders a copy of the chart with the stand-in ``files/`` beside this module, so its golden does
not follow the real dashboard and alert rules.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.localcluster.build import helm_binary
from e2e.localcluster.versions import KUBERNETES_VERSION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHART = ROOT / "charts" / "kopf-scheduler"
VALUES = HERE / "values"
GOLDEN = HERE / "golden"
STAND_IN_FILES = HERE / "files"

Obj = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One value combination: a values file, the release and namespace it is rendered as."""

    name: str
    release: str = "kopf-scheduler"
    namespace: str = "kopf-scheduler"
    stand_in_files: bool = False

    @property
    def values_file(self) -> Path:
        return VALUES / f"{self.name}.yaml"

    @property
    def golden(self) -> Path:
        return GOLDEN / f"{self.name}.yaml"

    def values(self) -> Obj:
        loaded = yaml.safe_load(self.values_file.read_text(encoding="utf-8"))
        assert isinstance(loaded, dict)
        return loaded


CASES = (
    Case("default"),
    Case("single-replica"),
    Case("kube-system", release="my-scheduler", namespace="kube-system"),
    Case("profile"),
    Case("hardened", release="scheduler", namespace="platform"),
    Case("monitoring", stand_in_files=True),
)


def case_params() -> list[Any]:
    return [pytest.param(case, id=case.name) for case in CASES]


def helm_path() -> Path:
    path = helm_binary()
    if not path.is_file():
        pytest.skip(f"no helm at {path} (built by `make helm`)")
    return path


def run_helm(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm_path()), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@contextmanager
def chart_for(case: Case) -> Iterator[Path]:
    """The chart to render ``case`` from: the real one, or a copy with the stand-in files."""
    if not case.stand_in_files:
        yield CHART
        return
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / CHART.name
        shutil.copytree(CHART, copy)
        shutil.rmtree(copy / "files", ignore_errors=True)
        shutil.copytree(STAND_IN_FILES, copy / "files")
        yield copy


def template_args(case: Case, chart: Path, *extra: str | Path) -> list[str | Path]:
    return [
        "template",
        case.release,
        chart,
        "--namespace",
        case.namespace,
        "--kube-version",
        KUBERNETES_VERSION,
        "--values",
        case.values_file,
        *extra,
    ]


def template(case: Case, overrides: Mapping[str, Any] | None = None) -> str:
    """``helm template`` of a case, with further values on top; fails the test on an error."""
    result = template_result(case, overrides)
    assert result.returncode == 0, result.stderr
    return result.stdout


def template_result(
    case: Case, overrides: Mapping[str, Any] | None = None, chart: Path | None = None
) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as extra, chart_for(case) as copy:
        yaml.safe_dump(dict(overrides or {}), extra)
        extra.flush()
        return run_helm(*template_args(case, chart or copy, "--values", extra.name))


def render(case: Case, overrides: Mapping[str, Any] | None = None) -> dict[tuple[str, str], Obj]:
    """The rendered objects of a case by (kind, name)."""
    objects = [doc for doc in yaml.safe_load_all(template(case, overrides)) if doc]
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


METRICS_RBAC_SUFFIXES = ("-auth-delegator", "-metrics-reader", "-metrics-scraper")
"""Name endings of the secure /metrics port's RBAC (templates/metrics-rbac.yaml) and of the
ServiceMonitor's scraper account (templates/metrics-scraper.yaml)."""


def one(objects: Mapping[tuple[str, str], Obj], kind: str) -> Obj:
    """The one object of ``kind`` among the scheduler's own (the /metrics RBAC left aside)."""
    (match,) = [
        obj
        for (k, name), obj in objects.items()
        if k == kind and not name.endswith(METRICS_RBAC_SUFFIXES)
    ]
    return match
