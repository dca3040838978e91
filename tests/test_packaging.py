"""The package's metadata, as pyproject.toml writes it: one version, and honest dependencies.

The version is written once, in pyproject.toml; ``kopf-scheduler --version`` and
``kopf_scheduler.__version__`` read it from the installed metadata, and no source file or image
build file repeats it. The runtime dependencies are exactly the distributions the package
imports (each with an upper bound), and the tests, the end-to-end suite and the benchmarks import
nothing that is not declared.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import kopf_scheduler
from kopf_scheduler.cli import main
from kopf_scheduler.version import UNKNOWN, installed_version

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "operator" / "kopf_scheduler"
LOCAL_PACKAGES = {PACKAGE.name} | {
    path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file()
}


@cache
def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as stream:
        table: dict[str, Any] = tomllib.load(stream)["project"]
    return table


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return canonical(match[0])


def declared(requirements: list[str]) -> set[str]:
    return {requirement_name(requirement) for requirement in requirements}


def imported_modules(directory: Path) -> dict[str, Path]:
    """Top-level third-party modules imported by the files under ``directory``, with one file
    that imports each."""
    found: dict[str, Path] = {}
    for path in sorted(directory.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in LOCAL_PACKAGES:
                    found.setdefault(top, path)
    return found


def distributions(modules: dict[str, Path]) -> set[str]:
    providers = metadata.packages_distributions()
    result: set[str] = set()
    for module, path in modules.items():
        names = providers.get(module)
        assert names, f"{module} (imported by {path.relative_to(ROOT)}) is not installed"
        result.update(canonical(name) for name in names)
    return result


# -- the version -------------------------------------------------------------------------------


def test_version_option_prints_the_version_from_pyproject(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"kopf-scheduler {project()['version']}\n"


def test_the_package_reads_its_version_from_the_installed_metadata() -> None:
    assert kopf_scheduler.__version__ == metadata.version("kopf-scheduler")
    assert kopf_scheduler.__version__ == project()["version"], "reinstall: `make venv`"


def test_a_package_that_is_not_installed_has_an_unknown_version() -> None:
    assert installed_version("kopf-scheduler-never-installed") == UNKNOWN


@pytest.mark.parametrize(
    "path",
    [
        *(
            pytest.param(path, id=str(path.relative_to(ROOT)))
            for path in sorted(PACKAGE.rglob("*.py"))
        ),
        pytest.param(ROOT / "Dockerfile", id="Dockerfile"),
        *(
            pytest.param(path, id=str(path.relative_to(ROOT)))
            for path in sorted((ROOT / "scripts").rglob("*.sh"))
        ),
    ],
)
def test_no_source_or_build_file_repeats_the_version(path: Path) -> None:
    version = project()["version"]
    text = path.read_text(encoding="utf-8")
    assert not re.search(rf"(?<![\w.]){re.escape(version)}(?![\w.])", text), (
        f"{path.relative_to(ROOT)} writes the version {version}: read it from the package "
        "metadata (kopf_scheduler.version) or pyproject.toml instead"
    )


# -- the dependencies --------------------------------------------------------------------------


def test_runtime_dependencies_are_exactly_what_the_package_imports() -> None:
    imported = distributions(imported_modules(PACKAGE))
    runtime = declared(project()["dependencies"])
    assert imported - runtime == set(), "imported but not declared in [project] dependencies"
    assert runtime - imported == set(), "declared in [project] dependencies but never imported"


@pytest.mark.parametrize("directory", sorted(LOCAL_PACKAGES - {PACKAGE.name}))
def test_tests_and_tools_import_only_declared_packages(directory: str) -> None:
    imported = distributions(imported_modules(ROOT / directory))
    everything = declared(project()["dependencies"]) | declared(
        project()["optional-dependencies"]["dev"]
    )
    assert imported - everything == set()


@pytest.mark.parametrize(
    "requirement",
    [
        pytest.param(requirement, id=requirement_name(requirement))
        for requirement in [
            *project()["dependencies"],
            *project()["optional-dependencies"]["dev"],
        ]
    ],
)
def test_every_dependency_has_an_upper_bound(requirement: str) -> None:
    assert re.search(r"<[^=]", requirement), f"{requirement}: no upper bound"
