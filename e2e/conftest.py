"""Fixtures of the end-to-end suite (see e2e/README.md for how to run it).

- ``cluster``/``kube`` (session): the cluster under test and kubectl as its admin.
- ``scheduler_pool`` (session): the scheduler under test. Locally: ``kopf-scheduler run``
  processes authenticated with a ServiceAccount token bound only by the RBAC in manifests/.
  With ``E2E_CLUSTER=kind``: the in-cluster Deployment.
- ``schedulers`` (per test): makes sure a leader runs before the test, reports crashed
  processes after it, and attaches the scheduler log to a failing test's report.
- ``env`` (per test): a namespace and fresh fake nodes that only this test's pods can use.
- ``devices`` (per test): a DeviceClass of the test's own and the fake driver's ResourceSlices
  for the test's nodes (``support/dra.py``).
- ``scheduler_name`` (per test): the ``schedulerName`` of the scheduler chosen with
  ``E2E_SCHEDULER`` (``kopf``, the default: ``schedulers`` above; ``upstream``: kube-scheduler,
  started for the session on the local control plane when it is not running).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.localcluster import node_ready
from e2e.support import SCHEDULER_NAME, objects
from e2e.support.clusters import Cluster, apply_rbac, open_cluster, service_account_kubeconfig
from e2e.support.dra import TestDevices
from e2e.support.env import TestEnv, make_test_id
from e2e.support.kubectl import Kubectl
from e2e.support.schedulers import (
    UPSTREAM_SCHEDULER_NAME,
    DeploymentSchedulers,
    LocalSchedulers,
    Schedulers,
    scheduler_under_test,
)

SERVICE_ACCOUNT = "kopf-scheduler"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    with open_cluster() as opened:
        yield opened


@pytest.fixture(scope="session")
def kube(cluster: Cluster) -> Kubectl:
    return cluster.kubectl


@pytest.fixture(scope="session")
def priority_classes(kube: Kubectl) -> None:
    kube.apply(*objects.priority_classes())


@pytest.fixture(scope="session")
def fake_nodes(cluster: Cluster, kube: Kubectl) -> None:
    """Fail fast (kind) when nothing plays the kubelet for fake nodes."""
    if not cluster.is_kind:
        return
    name = f"e2e-probe-{os.getpid()}"
    kube.create(objects.fake_node(name, "probe"))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            node = kube.get("node", name)
            if node is not None and node_ready(node):
                return
            time.sleep(1)
        pytest.skip(
            "fake nodes annotated kwok.x-k8s.io/node=fake never became Ready: install kwok in "
            "the kind cluster with the stages from e2e/localcluster/stages.yaml (see e2e/README.md)"
        )
    finally:
        kube.delete("node", name)


@pytest.fixture(scope="session")
def scheduler_pool(
    cluster: Cluster, kube: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Schedulers]:
    pool: Schedulers
    if cluster.is_kind:
        pool = DeploymentSchedulers(kube)
    else:
        artifacts = os.environ.get("E2E_ARTIFACTS_DIR")
        if artifacts:
            work = Path(artifacts).resolve() / "schedulers"
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = tmp_path_factory.mktemp("schedulers")
        apply_rbac(kube)
        kubeconfig = service_account_kubeconfig(
            kube, work / "scheduler.kubeconfig", SERVICE_ACCOUNT
        )
        pool = LocalSchedulers(kube, kubeconfig, work)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def schedulers(scheduler_pool: Schedulers, request: pytest.FixtureRequest) -> Iterator[Schedulers]:
    scheduler_pool.ensure_leader()
    scheduler_pool.begin_test()
    request.node.e2e_schedulers = scheduler_pool
    yield scheduler_pool
    problems = scheduler_pool.end_test()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def upstream_scheduler(cluster: Cluster) -> Iterator[Path | None]:
    """kube-scheduler for the session; yields its log file on the local control plane.

    A kind cluster runs it already. Locally it is started unless it runs, and then stopped
    again at the end of the session.
    """
    if cluster.local is None:
        yield None
        return
    started = "kube-scheduler" not in cluster.local.running()
    if started:
        cluster.local.start_kube_scheduler()
    try:
        yield cluster.local.log_dir / "kube-scheduler.log"
    finally:
        if started:
            cluster.local.stop_kube_scheduler()


@pytest.fixture
def scheduler_name(request: pytest.FixtureRequest) -> str:
    """The ``schedulerName`` of the scheduler under test (``E2E_SCHEDULER``), running."""
    if scheduler_under_test() == "upstream":
        log: Path | None = request.getfixturevalue("upstream_scheduler")
        if log is not None:
            request.node.e2e_upstream_log = (log, log.stat().st_size if log.exists() else 0)
        return UPSTREAM_SCHEDULER_NAME
    request.getfixturevalue("schedulers")
    return SCHEDULER_NAME


@pytest.fixture
def env(
    kube: Kubectl, request: pytest.FixtureRequest, priority_classes: None, fake_nodes: None
) -> Iterator[TestEnv]:
    test_env = TestEnv(kube, make_test_id(request.node.name))
    request.node.e2e_env = test_env
    try:
        yield test_env
    finally:
        test_env.close()


@pytest.fixture
def devices(env: TestEnv) -> Iterator[TestDevices]:
    """The test's DeviceClass and, once it publishes them, its nodes' ResourceSlices."""
    test_devices = TestDevices(env)
    try:
        yield test_devices
    finally:
        test_devices.close()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed or report.when != "call":
        return
    test_env: TestEnv | None = getattr(item, "e2e_env", None)
    if test_env is not None:
        report.sections.append(("pod history (watch)", "\n".join(test_env.watch.summary())))
    pool: Schedulers | None = getattr(item, "e2e_schedulers", None)
    if pool is not None:
        report.sections.append(("scheduler log", pool.logs()))
    upstream: tuple[Path, int] | None = getattr(item, "e2e_upstream_log", None)
    if upstream is not None:
        log, offset = upstream
        with log.open("rb") as stream:
            stream.seek(offset)
            lines = stream.read().decode(errors="replace").splitlines()
        report.sections.append(("kube-scheduler log", "\n".join(lines[-80:])))
