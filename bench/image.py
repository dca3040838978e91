"""The container image's size and memory, run the way the Deployment runs it.

Cluster admins size the Deployment's memory request and limit from these figures, so they are
measured on the real image against a real API server rather than on the in-process scheduler:
the image (``make image``) runs with the Deployment's arguments, its configuration and the
ServiceAccount's in-cluster credentials, as ``e2e/test_image.py`` runs it, on the local control
plane with ``--nodes`` kwok nodes. Memory is the container's cgroup usage as ``docker stats``
reports it:

- idle: the highest sample over ``IDLE_SECONDS`` once the container leads with synced caches;
- busy: the highest sample while ``--pods`` default pods (scheduler_perf's shape) are created at
  once and bound, and the seconds from the first creation to the last binding.

It is a measurement, never a test: nothing here passes or fails on a figure.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from e2e.localcluster.build import binaries
from e2e.localcluster.cluster import LocalCluster
from e2e.localcluster.listen_ports import free_port
from e2e.support import SCHEDULER_NAME, SYSTEM_NAMESPACE
from e2e.support.clusters import apply_rbac
from e2e.support.container import (
    SchedulerContainer,
    build_image,
    deployment_pod,
    docker,
    write_service_account,
)
from e2e.support.kubectl import Kubectl
from e2e.support.polling import wait_until
from e2e.support.schedulers import LEADER_TIMEOUT, lease_holder

from . import shapes
from .cluster import state_dir

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVICE_ACCOUNT = "kopf-scheduler"
NAMESPACE = "bench-image"
IDENTITY = "bench-image"
IDLE_SECONDS = 20.0
SAMPLE_SECONDS = 0.5
BIND_TIMEOUT = 300.0
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2}


@dataclass(frozen=True)
class ImageFigures:
    image: str
    image_bytes: int
    nodes: int
    pods: int
    idle_mib: float
    busy_peak_mib: float
    bind_seconds: float
    stop_exit_code: int
    stop_seconds: float


def memory_bytes(usage: str) -> int:
    """The used part of ``docker stats``' ``MemUsage`` (``"87.1MiB / 23.4GiB"``) in bytes."""
    used = usage.split("/", maxsplit=1)[0].strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if used.endswith(unit):
            return int(float(used[: -len(unit)]) * _UNITS[unit])
    raise ValueError(f"docker stats memory {usage!r}: unknown unit")


def sample_memory(container: str) -> int:
    usage = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", container).stdout
    return memory_bytes(usage.strip())


def _bound_count(kube: Kubectl) -> int:
    pods = kube.json("get", "pods", "-n", NAMESPACE)["items"]
    return sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))


def _create_pods(kube: Kubectl, count: int) -> subprocess.Popen[str]:
    """All pods in one ``kubectl create``, in the background, so sampling goes on meanwhile."""
    items = [
        shapes.pod("default", f"pod-{index}", NAMESPACE, SCHEDULER_NAME, "measured")
        for index in range(count)
    ]
    creator = subprocess.Popen(
        kube.command("create", "-f", "-"),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert creator.stdin is not None
    # kubectl reads the whole list before its first request, so this returns at once.
    creator.stdin.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    creator.stdin.close()
    return creator


def measure(nodes: int, pods: int) -> ImageFigures:
    cluster = LocalCluster.up(nodes=nodes, state_dir=state_dir(), reuse=True)
    kube = Kubectl(binaries().kubectl, cluster.kubeconfig)
    apply_rbac(kube)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    work = Path(tempfile.mkdtemp(prefix="bench-image-"))
    image = build_image(work / "build.log")
    size = int(docker("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())
    pod = deployment_pod(kube, REPO_ROOT / "manifests")
    api = write_service_account(kube, work / "serviceaccount", SERVICE_ACCOUNT, SYSTEM_NAMESPACE)
    running = SchedulerContainer(
        image, name="kopf-scheduler-bench", port=free_port(), work_dir=work
    )
    try:
        running.start(
            pod,
            api,
            work / "serviceaccount",
            extra_args=[
                "--health-host=127.0.0.1",
                f"--health-port={running.port}",
                f"--identity={IDENTITY}",
            ],
        )
        wait_until(
            lambda: lease_holder(kube) == IDENTITY,
            timeout=LEADER_TIMEOUT,
            what="the container to lead",
            describe=lambda: {"log": running.logs(20)},
        )
        idle = _highest(running.name, IDLE_SECONDS)
        started = time.monotonic()
        creator = _create_pods(kube, pods)
        peak, bound_at = idle, 0.0
        deadline = started + BIND_TIMEOUT
        while time.monotonic() < deadline:
            peak = max(peak, sample_memory(running.name))
            if creator.poll() is not None and _bound_count(kube) >= pods:
                bound_at = time.monotonic() - started
                break
            time.sleep(SAMPLE_SECONDS)
        if not bound_at:
            raise RuntimeError(f"not every pod was bound within {BIND_TIMEOUT:.0f}s")
        stop_started = time.monotonic()
        exit_code = running.stop()
        stopped = time.monotonic() - stop_started
    finally:
        running.remove()
        kube.run("delete", "namespace", NAMESPACE, "--wait=false", check=False)
    return ImageFigures(
        image=image,
        image_bytes=size,
        nodes=nodes,
        pods=pods,
        idle_mib=round(idle / 1024**2, 1),
        busy_peak_mib=round(peak / 1024**2, 1),
        bind_seconds=round(bound_at, 1),
        stop_exit_code=exit_code,
        stop_seconds=round(stopped, 1),
    )


def _highest(container: str, seconds: float) -> int:
    highest = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        highest = max(highest, sample_memory(container))
        time.sleep(SAMPLE_SECONDS)
    return highest


def render_figures(figures: ImageFigures) -> str:
    return json.dumps(asdict(figures), indent=2)
