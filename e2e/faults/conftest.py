"""Fixtures of the fault suite: a control plane of its own, the scheduler pool, the fault proxy.

The suite kills and stalls the API server and etcd, so it never runs on a shared cluster: it
starts one in a fresh ``/tmp/lc-faults-*`` state directory and takes it down at the end. The
API server keeps no watch cache for pods and nodes (``--watch-cache-sizes=pods#0,nodes#0``):
watches then resume from etcd, where a compaction makes an old resourceVersion "too old" and
forces the relist that the watch-expiry fault is about.

Its tests run only when the marker is selected (``-m faults``, ``make e2e-faults``): a plain
``pytest e2e`` skips them before any of these fixtures starts anything.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.localcluster import LocalCluster
from e2e.support.clusters import Cluster, apply_rbac, service_account_kubeconfig
from e2e.support.faultproxy import FaultProxy, Faults
from e2e.support.kubectl import Kubectl
from e2e.support.schedulers import LocalSchedulers, SchedulerProcess

from .harness import proxy_kubeconfig
from .results import Results, command_line, results_dir

HERE = Path(__file__).resolve().parent
APISERVER_ARGS = ("--watch-cache-sizes=pods#0,nodes#0",)
SERVICE_ACCOUNT = "kopf-scheduler"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "faults" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="runs only when selected with -m faults (make e2e-faults)")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    state_dir = Path(tempfile.mkdtemp(prefix="lc-faults-", dir="/tmp"))
    local = LocalCluster.up(nodes=1, state_dir=state_dir, apiserver_args=APISERVER_ARGS)
    try:
        yield Cluster("local", Kubectl(local.binaries.kubectl, local.kubeconfig), local=local)
    finally:
        if os.environ.get("E2E_KEEP_CLUSTER") != "1":
            local.down()


@pytest.fixture(scope="session")
def kube(cluster: Cluster) -> Kubectl:
    return cluster.kubectl


@pytest.fixture(scope="session")
def local(cluster: Cluster) -> LocalCluster:
    assert isinstance(cluster.local, LocalCluster)
    return cluster.local


@pytest.fixture(scope="session")
def scheduler_pool(
    kube: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalSchedulers]:
    work = tmp_path_factory.mktemp("schedulers")
    apply_rbac(kube)
    kubeconfig = service_account_kubeconfig(kube, work / "scheduler.kubeconfig", SERVICE_ACCOUNT)
    pool = LocalSchedulers(kube, kubeconfig, work)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def results() -> Results:
    return Results(results_dir(), os.environ.get("E2E_FAULTS_COMMAND") or command_line())


class Proxied:
    """Scheduler replicas whose API server is the fault proxy; stopped before the proxy is."""

    def __init__(self, pool: LocalSchedulers, proxy: FaultProxy, work: Path) -> None:
        self.pool = pool
        self.proxy = proxy
        self.kubeconfig = proxy_kubeconfig(pool.kubeconfig, proxy, work / "proxied.kubeconfig")
        self.processes: list[SchedulerProcess] = []

    def start(self, identity: str) -> SchedulerProcess:
        proc = self.pool.start(identity, kubeconfig=self.kubeconfig)
        self.processes.append(proc)
        return proc

    def close(self) -> None:
        self.proxy.heal()
        self.proxy.faults = Faults()
        for proc in self.processes:
            if proc in self.pool.processes:
                self.pool.stop(proc)


@pytest.fixture
def proxied(
    local: LocalCluster, scheduler_pool: LocalSchedulers, tmp_path: Path
) -> Iterator[Proxied]:
    """The fault proxy in front of the API server, and replicas that go through it.

    The pool's direct replicas are stopped first, so that the test decides who leads.
    """
    scheduler_pool.stop_all()
    proxy = FaultProxy(local.server, local.ca_file, tmp_path, seed=17)
    proxy.start()
    running = Proxied(scheduler_pool, proxy, tmp_path)
    try:
        yield running
    finally:
        running.close()
        proxy.stop()
