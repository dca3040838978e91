"""The scheduler under test, and the controls the scenarios need over it.

Two implementations of one interface:

- :class:`LocalSchedulers` runs ``kopf-scheduler run`` as local processes, authenticated as the
  ``kopf-scheduler`` ServiceAccount, each with its own identity, HTTPS port (a self-signed
  certificate, as in a cluster) and log file. Stop is SIGTERM and must end with exit code 0
  within 20 s; kill is SIGKILL.
- :class:`DeploymentSchedulers` drives the in-cluster Deployment of a kind cluster through
  ``kubectl``: stop and start are scaling, a kill is a forced pod deletion, a restart a
  graceful one.

The leader is whoever the Lease names (``spec.holderIdentity``), which is exactly what an
admin would look at.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from e2e.localcluster import spawn_logged, unverified_tls
from e2e.localcluster.listen_ports import free_port

from . import LEASE_NAME, SCHEDULER_NAME, SYSTEM_NAMESPACE
from .kubectl import Kubectl
from .polling import WaitTimeoutError, wait_until

STOP_TIMEOUT = 20.0
READY_TIMEOUT = 60.0
LEADER_TIMEOUT = 45.0  # a killed leader's Lease stays valid for leaseDuration (15 s)

CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
  - schedulerName: {SCHEDULER_NAME}
leaderElection:
  leaderElect: true
  resourceName: {LEASE_NAME}
  resourceNamespace: {SYSTEM_NAMESPACE}
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
"""


UPSTREAM_SCHEDULER_NAME = "default-scheduler"
"""``spec.schedulerName`` kube-scheduler serves, for scenarios run against upstream."""


def scheduler_under_test() -> str:
    """``E2E_SCHEDULER``: ``kopf`` (default, the project's scheduler) or ``upstream``.

    Scenarios that take the ``scheduler_name`` fixture run against the one chosen here;
    ``upstream`` is kube-scheduler, the reference their expectations are taken from.
    """
    choice = os.environ.get("E2E_SCHEDULER", "kopf").strip().lower() or "kopf"
    if choice not in ("kopf", "upstream"):
        raise RuntimeError(f"E2E_SCHEDULER must be 'kopf' or 'upstream', not {choice!r}")
    return choice


class Schedulers(Protocol):
    """What the scenarios do with the scheduler under test."""

    can_kill: bool

    def ensure_leader(self) -> str:
        """Make sure a scheduler runs and leads; return the leader's identity."""
        ...

    def stop_all(self) -> None: ...

    def start_all(self) -> str:
        """Start the scheduler again after :meth:`stop_all`; return the leader's identity."""
        ...

    def start_replicas(self, count: int) -> list[str]:
        """Run ``count`` replicas (one leads, the others wait); return their identities."""
        ...

    def leader(self) -> str | None: ...

    def kill_leader(self) -> str:
        """Kill the leader without a chance to release the Lease; return its identity."""
        ...

    def restart(self) -> str:
        """Stop the leader gracefully (SIGTERM) and bring the scheduler back; new leader."""
        ...

    def wait_leader(
        self, *, other_than: str | None = None, timeout: float = LEADER_TIMEOUT
    ) -> str: ...

    def begin_test(self) -> None: ...

    def end_test(self) -> list[str]:
        """Return problems seen during the test (crashed processes); tidy up after kills."""
        ...

    def logs(self) -> str:
        """The scheduler output since :meth:`begin_test`, for failure reports."""
        ...

    def close(self) -> None: ...


def lease_holder(kubectl: Kubectl) -> str | None:
    lease = kubectl.get("lease", LEASE_NAME, SYSTEM_NAMESPACE)
    if lease is None:
        return None
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


# -- local processes -----------------------------------------------------------------------


@dataclass
class SchedulerProcess:
    identity: str
    port: int
    log_path: Path
    popen: subprocess.Popen[bytes]
    expected_exit: bool = False
    mark: int = 0
    exit_codes: list[int] = field(default_factory=list)

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def readyz(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(
                f"{self.url}/readyz", timeout=2, context=unverified_tls()
            ) as response:
                body: dict[str, Any] = json.loads(response.read())
                return body
        except urllib.error.HTTPError as error:
            if error.code == 503:
                return {"synced": False, "leader": False}
            return None
        except (OSError, ValueError):
            return None

    def log_since_mark(self) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(self.mark)
                return log.read().decode(errors="replace")
        except OSError:
            return ""


class LocalSchedulers:
    can_kill = True

    def __init__(
        self,
        admin: Kubectl,
        kubeconfig: Path,
        work_dir: Path,
        config: str = CONFIG,
        extra_args: Sequence[str] = (),
    ) -> None:
        """``extra_args`` go to every ``kopf-scheduler run`` (e.g. a serving certificate)."""
        self.admin = admin
        self.kubeconfig = kubeconfig
        self.work_dir = work_dir
        self.extra_args = list(extra_args)
        self.config_path = work_dir / "scheduler-config.yaml"
        self.config_path.write_text(config)
        self.processes: list[SchedulerProcess] = []
        self._counter = 0
        self._killed = False
        self._test_processes: list[SchedulerProcess] = []

    # -- one process -------------------------------------------------------------------------

    def start(
        self, identity: str | None = None, kubeconfig: Path | None = None
    ) -> SchedulerProcess:
        """Start one process and wait until its caches are synced (not until it leads).

        ``kubeconfig`` replaces the pool's (the fault suite routes one replica through its
        fault proxy).
        """
        self._counter += 1
        identity = identity or f"e2e-scheduler-{self._counter}"
        port = free_port()
        log_path = self.work_dir / f"{identity}.log"
        command = [
            sys.executable,
            "-m",
            "kopf_scheduler",
            "run",
            f"--kubeconfig={kubeconfig or self.kubeconfig}",
            f"--config={self.config_path}",
            "--health-host=127.0.0.1",
            f"--health-port={port}",
            f"--identity={identity}",
            "--log-format=console",
            *self.extra_args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["PYTHONUNBUFFERED"] = "1"
        popen = spawn_logged(command, log_path, env=env)
        proc = SchedulerProcess(identity, port, log_path, popen)
        self.processes.append(proc)
        self._test_processes.append(proc)

        def synced() -> bool:
            if not proc.alive():
                raise AssertionError(
                    f"scheduler {identity} exited with {proc.popen.returncode} during start-up:\n"
                    + _tail(proc.log_since_mark(), 40)
                )
            body = proc.readyz()
            return bool(body and body.get("synced"))

        try:
            wait_until(synced, timeout=READY_TIMEOUT, what=f"{identity} /readyz synced")
        except WaitTimeoutError as error:
            raise AssertionError(f"{error}\n{_tail(proc.log_since_mark(), 40)}") from None
        return proc

    def stop(self, proc: SchedulerProcess, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM; the process must exit with code 0 within ``timeout`` seconds."""
        proc.expected_exit = True
        if proc.alive():
            proc.popen.send_signal(signal.SIGTERM)
        try:
            code = proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(10)
            raise AssertionError(
                f"scheduler {proc.identity} did not exit within {timeout:.0f}s of SIGTERM:\n"
                + _tail(proc.log_since_mark(), 40)
            ) from None
        finally:
            self._forget(proc)
        if code != 0:
            raise AssertionError(
                f"scheduler {proc.identity} exited with {code} after SIGTERM:\n"
                + _tail(proc.log_since_mark(), 40)
            )

    def kill(self, proc: SchedulerProcess) -> None:
        proc.expected_exit = True
        self._killed = True
        if proc.alive():
            proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(10)
        self._forget(proc)

    def _forget(self, proc: SchedulerProcess) -> None:
        if proc in self.processes:
            self.processes.remove(proc)

    @property
    def test_processes(self) -> list[SchedulerProcess]:
        """Every process that ran during the current test, killed ones included."""
        return list(self._test_processes)

    def by_identity(self, identity: str) -> SchedulerProcess | None:
        return next((p for p in self.processes if p.identity == identity), None)

    # -- the interface -----------------------------------------------------------------------

    def leader(self) -> str | None:
        return lease_holder(self.admin)

    def wait_leader(self, *, other_than: str | None = None, timeout: float = LEADER_TIMEOUT) -> str:
        def leading() -> str | None:
            holder = self.leader()
            if not holder or holder == other_than:
                return None
            proc = self.by_identity(holder)
            body = proc.readyz() if proc is not None else None
            return holder if body and body.get("leader") else None

        return wait_until(
            leading,
            timeout=timeout,
            what="a scheduler to hold the Lease"
            + (f" other than {other_than}" if other_than else ""),
            interval=0.2,
            describe=lambda: {
                "holder": self.leader(),
                "running": [(p.identity, p.readyz()) for p in self.processes],
            },
        )

    def ensure_leader(self) -> str:
        for proc in list(self.processes):
            if not proc.alive():
                self._forget(proc)
        if not self.processes:
            self.start()
        return self.wait_leader()

    def stop_all(self) -> None:
        errors = []
        for proc in list(self.processes):
            try:
                self.stop(proc)
            except AssertionError as error:
                errors.append(str(error))
        if errors:
            raise AssertionError("\n".join(errors))

    def start_all(self) -> str:
        self.start()
        return self.wait_leader()

    def start_replicas(self, count: int) -> list[str]:
        while len(self.processes) < count:
            self.start()
        self.wait_leader()
        return [p.identity for p in self.processes]

    def kill_leader(self) -> str:
        holder = self.wait_leader()
        proc = self.by_identity(holder)
        assert proc is not None, f"the Lease names {holder}, which is not one of ours"
        self.kill(proc)
        return holder

    def restart(self) -> str:
        self.stop_all()
        return self.start_all()

    def begin_test(self) -> None:
        self._test_processes = list(self.processes)
        for proc in self.processes:
            proc.mark = proc.log_path.stat().st_size if proc.log_path.exists() else 0

    def end_test(self) -> list[str]:
        problems = []
        for proc in list(self.processes):
            if not proc.alive():
                problems.append(
                    f"scheduler {proc.identity} died (exit code {proc.popen.returncode}):\n"
                    + _tail(proc.log_since_mark(), 40)
                )
                self._forget(proc)
        if self._killed:
            # A killed leader leaves its Lease valid for leaseDuration: stop the rest and hand
            # the next test a clean slate instead of a 15 s wait.
            try:
                self.stop_all()
            except AssertionError as error:
                problems.append(str(error))
            self.admin.delete("lease", LEASE_NAME, namespace=SYSTEM_NAMESPACE)
            self._killed = False
        elif len(self.processes) > 1:
            # Keep one replica for the next test; stop the extra ones.
            holder = self.leader()
            for proc in list(self.processes):
                if proc.identity != holder:
                    try:
                        self.stop(proc)
                    except AssertionError as error:
                        problems.append(str(error))
        return problems

    def logs(self) -> str:
        parts = []
        for proc in self._test_processes:
            parts.append(
                f"--- {proc.identity} ({proc.log_path}) ---\n" + _tail(proc.log_since_mark(), 80)
            )
        return "\n".join(parts)

    def close(self) -> None:
        self.stop_all()


# -- the in-cluster Deployment (kind) ------------------------------------------------------


DEPLOYMENT = "kopf-scheduler"
POD_SELECTOR = "app.kubernetes.io/name=kopf-scheduler"


class DeploymentSchedulers:
    """The Deployment from manifests/ in a kind cluster, driven with kubectl."""

    can_kill = True  # a forced pod deletion stands in for SIGKILL

    def __init__(self, admin: Kubectl) -> None:
        self.admin = admin
        deployment = admin.get("deployment", DEPLOYMENT, SYSTEM_NAMESPACE)
        if deployment is None:
            raise RuntimeError(
                f"E2E_CLUSTER=kind needs the Deployment {SYSTEM_NAMESPACE}/{DEPLOYMENT} "
                "(deploy it with e2e/kind/run.sh or `kubectl apply -k e2e/kind/overlay`)"
            )
        self.replicas = max(int(deployment["spec"].get("replicas") or 1), 1)
        self._since = time.time()

    def _scale(self, replicas: int) -> None:
        self.admin.run(
            "-n", SYSTEM_NAMESPACE, "scale", f"deployment/{DEPLOYMENT}", f"--replicas={replicas}"
        )

    def _pods(self) -> list[dict[str, Any]]:
        return self.admin.items("pods", SYSTEM_NAMESPACE, POD_SELECTOR)

    def _ready_pods(self) -> list[str]:
        names = []
        for pod in self._pods():
            if pod["metadata"].get("deletionTimestamp"):
                continue
            conditions = (pod.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                names.append(pod["metadata"]["name"])
        return names

    @staticmethod
    def pod_of(identity: str) -> str:
        # The default identity is "<hostname>_<pid>" and the hostname is the pod name.
        return identity.split("_", 1)[0]

    def leader(self) -> str | None:
        return lease_holder(self.admin)

    def wait_leader(self, *, other_than: str | None = None, timeout: float = LEADER_TIMEOUT) -> str:
        def leading() -> str | None:
            holder = self.leader()
            if not holder or holder == other_than:
                return None
            return holder if self.pod_of(holder) in self._ready_pods() else None

        return wait_until(
            leading, timeout=timeout, what="a replica to hold the Lease", interval=0.5
        )

    def ensure_leader(self) -> str:
        self._scale(self.replicas)
        self.admin.run(
            "-n",
            SYSTEM_NAMESPACE,
            "rollout",
            "status",
            f"deployment/{DEPLOYMENT}",
            "--timeout=180s",
            timeout=200,
        )
        return self.wait_leader()

    def stop_all(self) -> None:
        self._scale(0)
        wait_until(lambda: not self._pods(), timeout=60, what="the scheduler pods to go away")

    def start_all(self) -> str:
        return self.ensure_leader()

    def start_replicas(self, count: int) -> list[str]:
        if count > self.replicas:
            self._scale(count)
        wait_until(
            lambda: len(self._ready_pods()) >= count, timeout=180, what=f"{count} ready replicas"
        )
        self.wait_leader()
        return self._ready_pods()

    def kill_leader(self) -> str:
        holder = self.wait_leader()
        self.admin.run(
            "-n",
            SYSTEM_NAMESPACE,
            "delete",
            "pod",
            self.pod_of(holder),
            "--grace-period=0",
            "--force",
        )
        return holder

    def restart(self) -> str:
        holder = self.wait_leader()
        self.admin.run("-n", SYSTEM_NAMESPACE, "delete", "pod", self.pod_of(holder), "--wait=true")
        return self.wait_leader(other_than=holder)

    def begin_test(self) -> None:
        self._since = time.time()

    def end_test(self) -> list[str]:
        return []

    def logs(self) -> str:
        seconds = max(int(time.time() - self._since) + 1, 1)
        proc = self.admin.run(
            "-n",
            SYSTEM_NAMESPACE,
            "logs",
            "-l",
            POD_SELECTOR,
            "--prefix",
            "--all-containers",
            f"--since={seconds}s",
            "--tail=200",
            check=False,
        )
        return proc.stdout + proc.stderr

    def close(self) -> None:
        self._scale(self.replicas)
