"""The image under test, run as a container the way the Deployment in ``manifests/`` runs it.

- :func:`docker_unavailable` says why no Docker engine can be used (the image tests skip then).
- :func:`build_image` runs ``scripts/image/build.sh``, what ``make image`` runs after making sure
  an engine is there; a tree that has not changed comes entirely from Docker's build cache.
- :func:`deployment_pod` reads, from ``kubectl kustomize manifests``, what the Deployment gives
  its container: arguments, plain environment variables, the ConfigMaps and emptyDirs it mounts.
- :func:`write_service_account` mints a token for the ServiceAccount and lays it out as a pod's
  ServiceAccount volume (``token``, ``ca.crt``, ``namespace``), with the API server's address
  for ``KUBERNETES_SERVICE_HOST``/``_PORT``: the container uses the in-cluster credentials, so
  every request it makes is checked against the manifests' RBAC.
- :class:`SchedulerContainer` starts it with host networking (the local API server listens on
  127.0.0.1), a read-only root filesystem, no capabilities and no privilege escalation, probes
  its port, and stops it with SIGTERM.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.localcluster import unverified_tls

from .clusters import TOKEN_DURATION
from .kubectl import Kubectl

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "scripts" / "image" / "build.sh"
BUILD_TIMEOUT = 1200.0  # a first build also makes the local base image (a few minutes)
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
STOP_GRACE_SECONDS = 20  # as the suite's STOP_TIMEOUT: SIGTERM, then SIGKILL after this


class ContainerError(AssertionError):
    """A docker command failed; the message has its output."""


def docker_binary() -> str | None:
    """``$DOCKER``, else ``docker`` from ``PATH``, else Debian's ``/usr/bin/docker``."""
    explicit = os.environ.get("DOCKER")
    if explicit:
        return explicit
    found = shutil.which("docker")
    if found:
        return found
    return "/usr/bin/docker" if Path("/usr/bin/docker").is_file() else None


def docker_unavailable() -> str | None:
    """Why no Docker engine can be used here, or ``None`` when one answers."""
    binary = docker_binary()
    if binary is None:
        return "no docker client on PATH (scripts/image/engine.sh installs Debian's docker.io)"
    result = subprocess.run(
        [binary, "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no Docker engine answers ({reason}); scripts/image/engine.sh starts one"
    return None


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = docker_binary()
    assert binary is not None, "no docker client"
    result = subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise ContainerError(
            f"docker {' '.join(args)} failed ({result.returncode}):\n"
            + result.stdout[-2000:]
            + result.stderr[-2000:]
        )
    return result


def build_image(log_path: Path) -> str:
    """Build (or reuse from the build cache) the image; its reference. The log goes to a file."""
    with log_path.open("w") as log:
        result = subprocess.run(
            [str(BUILD_SCRIPT)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    if result.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
        raise ContainerError(f"{BUILD_SCRIPT} failed ({result.returncode}):\n{tail}")
    return result.stdout.strip().splitlines()[-1]


def image_labels(image: str) -> dict[str, str]:
    labels: dict[str, str] | None = json.loads(
        docker("image", "inspect", "--format", "{{json .Config.Labels}}", image).stdout
    )
    return labels or {}


# -- what the Deployment gives its container -------------------------------------------------


@dataclass
class DeploymentPod:
    """The parts of the Deployment's pod that ``docker run`` can reproduce."""

    args: list[str]
    env: dict[str, str]
    files: dict[str, dict[str, str]]
    """mount path -> file name -> content, from the ConfigMaps the container mounts."""
    tmpfs: dict[str, str]
    """mount path -> size limit (``64Mi``, or empty), from the emptyDirs it mounts."""
    security_context: dict[str, Any] = field(default_factory=dict)


def deployment_pod(kube: Kubectl, manifests: Path) -> DeploymentPod:
    """The Deployment's only container as ``kubectl kustomize`` renders ``manifests``."""
    documents = [
        doc for doc in yaml.safe_load_all(kube.run("kustomize", str(manifests)).stdout) if doc
    ]
    [deployment] = [doc for doc in documents if doc["kind"] == "Deployment"]
    config_maps = {
        doc["metadata"]["name"]: doc.get("data") or {}
        for doc in documents
        if doc["kind"] == "ConfigMap"
    }
    pod_spec = deployment["spec"]["template"]["spec"]
    [container] = pod_spec["containers"]
    volumes = {volume["name"]: volume for volume in pod_spec.get("volumes") or []}
    files: dict[str, dict[str, str]] = {}
    tmpfs: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            files[mount["mountPath"]] = dict(config_maps[volume["configMap"]["name"]])
        elif "emptyDir" in volume:
            tmpfs[mount["mountPath"]] = str(volume["emptyDir"].get("sizeLimit") or "")
        else:
            raise ContainerError(f"volume {mount['name']}: only configMap and emptyDir are known")
    env = {}
    for variable in container.get("env") or []:
        if "value" not in variable:
            raise ContainerError(f"env {variable['name']}: only plain values are known")
        env[variable["name"]] = str(variable["value"])
    return DeploymentPod(
        args=[str(arg) for arg in container.get("args") or []],
        env=env,
        files=files,
        tmpfs=tmpfs,
        security_context=dict(container.get("securityContext") or {}),
    )


def tmpfs_option(path: str, size_limit: str) -> str:
    """``--tmpfs`` for an emptyDir: ``64Mi`` becomes docker's ``64m``."""
    if not size_limit:
        return path
    units = {"Ki": "k", "Mi": "m", "Gi": "g"}
    number, unit = size_limit[:-2], size_limit[-2:]
    if unit not in units or not number.isdigit():
        raise ContainerError(f"emptyDir sizeLimit {size_limit!r}: expected <n>Ki, Mi or Gi")
    return f"{path}:size={number}{units[unit]}"


# -- the ServiceAccount's in-cluster credentials ---------------------------------------------


@dataclass(frozen=True)
class ApiServer:
    host: str
    port: int
    admin_token: str | None


def write_service_account(
    kube: Kubectl, directory: Path, service_account: str, namespace: str
) -> ApiServer:
    """``token``, ``ca.crt`` and ``namespace`` in ``directory``, readable by any UID."""
    view = json.loads(kube.run("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = view["clusters"][0]["cluster"]
    server = urllib.parse.urlsplit(cluster["server"])
    assert server.scheme == "https" and server.hostname and server.port, cluster["server"]
    if "certificate-authority-data" in cluster:
        ca = base64.b64decode(cluster["certificate-authority-data"])
    else:
        ca = Path(cluster["certificate-authority"]).read_bytes()
    token = kube.run(
        "create", "token", service_account, "-n", namespace, f"--duration={TOKEN_DURATION}"
    ).stdout.strip()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(ca)
    (directory / "namespace").write_text(namespace)
    make_readable(directory)
    admin_token = (view["users"][0].get("user") or {}).get("token")
    return ApiServer(server.hostname, server.port, admin_token)


def write_files(directory: Path, files: Mapping[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_text(content)
    make_readable(directory)


def make_readable(directory: Path) -> None:
    """The container runs as UID 65532: it must read what is mounted from here."""
    directory.chmod(0o755)
    for path in directory.iterdir():
        path.chmod(0o644)


# -- the container ---------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    body: str


@dataclass
class SchedulerContainer:
    """One ``docker run`` of the image; :meth:`start` returns once it runs."""

    image: str
    name: str
    port: int
    work_dir: Path
    container_id: str = ""

    def start(
        self,
        pod: DeploymentPod,
        api: ApiServer,
        credentials: Path,
        extra_args: Sequence[str] = (),
    ) -> None:
        command = [
            "run",
            "--detach",
            "--name",
            self.name,
            "--network",
            "host",
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--env",
            f"KUBERNETES_SERVICE_HOST={api.host}",
            "--env",
            f"KUBERNETES_SERVICE_PORT={api.port}",
            "--volume",
            f"{credentials}:{SERVICE_ACCOUNT_MOUNT}:ro",
        ]
        for key, value in pod.env.items():
            command += ["--env", f"{key}={value}"]
        for index, (mount_path, files) in enumerate(sorted(pod.files.items())):
            source = self.work_dir / f"volume-{index}"
            write_files(source, files)
            command += ["--volume", f"{source}:{mount_path}:ro"]
        for mount_path, size_limit in sorted(pod.tmpfs.items()):
            command += ["--tmpfs", tmpfs_option(mount_path, size_limit)]
        command += [self.image, *pod.args, *extra_args]
        docker("rm", "--force", self.name, check=False)
        self.container_id = docker(*command).stdout.strip()

    # -- state -------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(
            docker("inspect", "--format", "{{json .State}}", self.name).stdout
        )
        return state

    def running(self) -> bool:
        return bool(self.state().get("Running"))

    def logs(self, lines: int = 80) -> str:
        result = docker("logs", "--tail", str(lines), self.name, check=False)
        return result.stdout + result.stderr

    def exec(self, *command: str) -> subprocess.CompletedProcess[str]:
        return docker("exec", self.name, *command, check=False)

    # -- its port ----------------------------------------------------------------------------

    def get(self, path: str, token: str | None = None) -> Reply | None:
        """GET on the scheduler's port (HTTPS, its self-signed certificate not verified)."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5, context=unverified_tls()) as response:
                return Reply(response.status, response.read().decode())
        except urllib.error.HTTPError as error:
            return Reply(error.code, error.read().decode(errors="replace"))
        except OSError:
            return None

    # -- stop --------------------------------------------------------------------------------

    def stop(self) -> int:
        """SIGTERM, SIGKILL after the grace period (as a kubelet does); the exit code."""
        docker(
            "stop", "--time", str(STOP_GRACE_SECONDS), self.name, timeout=STOP_GRACE_SECONDS + 30
        )
        return int(self.state()["ExitCode"])

    def remove(self) -> None:
        docker("rm", "--force", self.name, check=False)
