"""The container image, built here and run against the cluster the way the Deployment runs it.

The image is what ``make image`` builds (``scripts/image/build.sh``; an unchanged tree comes
from Docker's build cache). The container gets the Deployment's arguments, the configuration
from the manifests' ConfigMap and the in-cluster credentials of the ``kopf-scheduler``
ServiceAccount, whose token only the manifests' RBAC binds; it runs with host networking (the
local API server listens on 127.0.0.1), a read-only root filesystem, no capabilities and no
privilege escalation. It is the only kopf-scheduler while it runs: the suite's own scheduler
processes serve the same scheduler name and Lease, so they are stopped first.

Marked ``image`` (``pytest e2e -m image`` runs only these); skipped, with the reason, where no
Docker engine answers. With ``E2E_CLUSTER=kind`` the Deployment already runs the image.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e.localcluster.listen_ports import free_port
from e2e.support import SCHEDULER_NAME, SYSTEM_NAMESPACE
from e2e.support.clusters import Cluster
from e2e.support.container import (
    ApiServer,
    DeploymentPod,
    SchedulerContainer,
    build_image,
    deployment_pod,
    docker,
    docker_unavailable,
    image_labels,
    write_service_account,
)
from e2e.support.env import TestEnv
from e2e.support.kubectl import Kubectl
from e2e.support.polling import wait_until
from e2e.support.schedulers import LEADER_TIMEOUT, Schedulers, lease_holder

pytestmark = pytest.mark.image

SERVICE_ACCOUNT = "kopf-scheduler"
NON_ROOT_UID = 65532
RELEASE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Launched:
    """The running container, what it was given from the Deployment, and the API server."""

    container: SchedulerContainer
    pod: DeploymentPod
    api: ApiServer


def package_version(repo_root: Path) -> str:
    with (repo_root / "pyproject.toml").open("rb") as stream:
        return str(tomllib.load(stream)["project"]["version"])


@pytest.fixture(scope="module")
def image(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    if cluster.is_kind:
        pytest.skip("E2E_CLUSTER=kind: the Deployment runs the image already (e2e/kind/run.sh)")
    reason = docker_unavailable()
    if reason is not None:
        pytest.skip(reason)
    return build_image(tmp_path_factory.mktemp("image") / "build.log")


@pytest.fixture
def container(
    image: str,
    kube: Kubectl,
    scheduler_pool: Schedulers,
    env: TestEnv,
    repo_root: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Launched]:
    """The container, running and leading; removed afterwards whatever happened. A failing
    test's report shows its log (conftest.py reads it from ``e2e_schedulers``)."""
    # scheduler_pool has applied the manifests' RBAC; its processes share our Lease.
    scheduler_pool.stop_all()
    pod = deployment_pod(kube, repo_root / "manifests")
    api = write_service_account(
        kube, tmp_path / "serviceaccount", SERVICE_ACCOUNT, SYSTEM_NAMESPACE
    )
    running = SchedulerContainer(
        image, name=f"kopf-scheduler-e2e-{env.id}", port=free_port(), work_dir=tmp_path
    )
    identity = f"e2e-image-{env.id}"
    try:
        running.start(
            pod,
            api,
            tmp_path / "serviceaccount",
            extra_args=[
                "--health-host=127.0.0.1",
                f"--health-port={running.port}",
                f"--identity={identity}",
            ],
        )
        request.node.e2e_schedulers = running

        def leading() -> bool:
            if not running.running():
                raise AssertionError(
                    f"the container exited ({running.state()['ExitCode']}):\n{running.logs()}"
                )
            reply = running.get("/readyz")
            return (
                bool(reply and reply.status == 200 and json.loads(reply.body).get("leader"))
                and lease_holder(kube) == identity
            )

        wait_until(
            leading,
            timeout=LEADER_TIMEOUT,
            what=f"the container to hold the Lease as {identity}",
            describe=lambda: {"holder": lease_holder(kube), "log": running.logs(20)},
        )
        yield Launched(running, pod, api)
    finally:
        running.remove()


def test_labels_and_version_come_from_the_package(image: str, repo_root: Path) -> None:
    version = package_version(repo_root)
    labels = image_labels(image)
    assert labels["org.opencontainers.image.version"] == version
    assert labels["org.opencontainers.image.title"] == "kopf-scheduler"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.description"]
    shown = docker("run", "--rm", "--read-only", image, "--version").stdout.strip()
    assert shown == f"kopf-scheduler {version}"


def test_container_schedules_as_the_deployment_runs_it(
    container: Launched,
    kube: Kubectl,
    env: TestEnv,
) -> None:
    running, pod, api = container.container, container.pod, container.api
    assert pod.security_context.get("readOnlyRootFilesystem") is True
    assert str(pod.security_context.get("runAsUser")) == str(NON_ROOT_UID)

    [node] = env.create_nodes(1)
    env.create(env.pod("opted-in", cpu="100m"))
    assert env.wait_bound("opted-in") == node
    [event] = env.wait_event("opted-in", "Scheduled")
    assert event["reportingController"] == SCHEDULER_NAME

    # The scheduler is PID 1 of the container; every one of its UIDs is the non-root one.
    status = running.exec("cat", "/proc/1/status")
    assert status.returncode == 0, status.stderr
    [uids] = [line.split()[1:] for line in status.stdout.splitlines() if line.startswith("Uid:")]
    assert uids == [str(NON_ROOT_UID)] * 4, uids
    written = running.exec("touch", "/written-at-run-time")
    assert written.returncode != 0
    assert "Read-only file system" in written.stderr, written.stderr
    assert running.exec("touch", "/tmp/scratch").returncode == 0, "/tmp is the writable emptyDir"

    healthz = running.get("/healthz")
    assert healthz is not None and (healthz.status, healthz.body) == (200, "ok"), healthz
    readyz = running.get("/readyz")
    assert readyz is not None and readyz.status == 200, readyz
    assert json.loads(readyz.body) == {"synced": True, "leader": True}
    metrics = running.get("/metrics", token=api.admin_token)
    assert metrics is not None and metrics.status == 200, metrics
    assert "# TYPE scheduler_schedule_attempts_total" in metrics.body

    code = running.stop()
    assert code == 0, f"exit code {code} after SIGTERM:\n{running.logs()}"
    wait_until(
        lambda: not lease_holder(kube),
        timeout=RELEASE_TIMEOUT,
        what="the Lease released on SIGTERM",
        describe=lambda: {"holder": lease_holder(kube)},
    )
