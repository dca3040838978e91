"""Run a real Kubernetes control plane on loopback, with kwok playing the kubelets.

The scheduler under test needs the real API semantics that fakes get wrong: admission
(Priority fills ``spec.priority``, ServiceAccount, TaintNodesByCondition), RBAC, the
disruption controller's PDB status, graceful pod deletion, node lifecycle taints. So this
module starts the upstream binaries as plain processes, each on its own free port on
127.0.0.1, all state in one directory:

    etcd -> kube-apiserver -> kube-controller-manager -> kwok [-> kube-scheduler]

The processes run in their own sessions, so ``up`` can return (or a pytest session can
end) while the cluster keeps running. Their PIDs and start times are recorded in
``state.json`` so that ``down`` stops exactly the processes it started and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from . import build
from . import versions as v
from .kubeconfig import write_token_kubeconfig
from .listen_ports import free_ports, port_holders
from .processes import Process, log_tail, proc_start_time, spawn_logged, terminate

STATE_FILE = "state.json"
STAGES_FILE = Path(__file__).with_name("stages.yaml")

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
ZONES = ("zone-a", "zone-b", "zone-c")
NODE_NAME_PREFIX = "kwok-node-"
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
LEASES_PATH = "/apis/coordination.k8s.io/v1"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
ALWAYS_ALLOW_PATHS = "/healthz,/readyz,/livez,/metrics"
KCM_CONTROLLERS = (
    "disruption",
    "serviceaccount",
    "nodelifecycle",
    "taint-eviction-controller",
    "podgc",
    "garbagecollector",
    "namespace",
    "replicaset",
    "deployment",
    # Volume binding: the PV controller completes what the scheduler starts (it binds a claim
    # to the PV whose claimRef the scheduler wrote, and hands claims with a selected node to
    # their provisioner); the ephemeral-volume controller creates the claims of generic
    # ephemeral volumes; the two protection controllers release the finalizers that admission
    # puts on every claim and volume, so that deleting them (and their namespace) completes.
    "persistentvolume-binder",
    "ephemeral-volume",
    "pvc-protection",
    "pv-protection",
    # The ConfigMap kube-root-ca.crt in every namespace: the CA that pods on the real node
    # (realnode.py) mount with their ServiceAccount token to trust the API server.
    "root-ca-cert-publisher",
    # Dynamic Resource Allocation (resource.k8s.io/v1, GA and served by default in v1.34): the
    # resource-claim controller makes each pod's ResourceClaims from its ResourceClaimTemplates,
    # records their names in the pod's status, takes finished pods out of a claim's
    # reservedFor and deletes the claims it made once their pod is gone.
    "resourceclaim-controller",
    # Jobs: the chart's configuration check is a hook Job, whose pod runs on the real node.
    "job",
)
# Start order; `down` stops in the reverse order.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kube-scheduler")
# The static identities written to tokens.csv: the admin and an unprivileged user that the
# project's scheduler can be bound to with RBAC.
ADMIN_USER = "admin"
SCHEDULER_USER = "kopf-scheduler"

# Files and folders that `up` creates in the state directory; `down` removes only these.
_OWNED = (
    STATE_FILE,
    "etcd",
    "pki",
    "logs",
    "sa.key",
    "tokens.csv",
    "admin.kubeconfig",
    "scheduler.kubeconfig",
    "stages.yaml",
    "real-node",
)


class ClusterError(RuntimeError):
    pass


def default_state_dir() -> Path:
    override = os.environ.get("LOCALCLUSTER_DIR")
    if override:
        return Path(override).expanduser().resolve()
    return v.cache_root() / "cluster"


def _has_default_route() -> bool:
    try:
        lines = Path("/proc/net/route").read_text().splitlines()[1:]
    except OSError:
        return True
    return any(line.split()[1] == "00000000" for line in lines if len(line.split()) > 1)


def _advertise_address() -> str | None:
    """An address for --advertise-address, needed only on hosts without a default route.

    The apiserver otherwise picks the default-route interface by itself; loopback is not
    usable because the `kubernetes` Endpoints reject 127.0.0.0/8.
    """
    if _has_default_route():
        return None
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            address = str(info[4][0])
            if not address.startswith("127."):
                return address
    return None


# -- the cluster -------------------------------------------------------------------------


ATTACHMENTS = "attachments"
"""Where the state file keeps what other modules attach to the cluster (a real node), by key."""

ADDRESS_IN_USE = "address already in use"
"""What kube-apiserver says when its port is still taken."""
RESTART_PORT_TIMEOUT = 30.0
"""How long a restarted kube-apiserver may keep finding its port taken before that is an error."""

Teardown = Callable[["LocalCluster", float, bool], None]
"""Stops and removes one kind of attachment: ``(cluster, timeout, keep_logs)``."""

_TEARDOWNS: dict[str, Teardown] = {}


def register_teardown(key: str, teardown: Teardown) -> None:
    """Have :meth:`LocalCluster.down` call ``teardown`` first whenever something is attached
    under ``key``.

    A module that attaches something to a cluster builds on this one, so this one cannot import
    it: the module registers when it is imported (the command line imports every such module).
    """
    _TEARDOWNS[key] = teardown


class LocalCluster:
    """A local control plane whose state lives in one directory.

    ``LocalCluster.up()`` starts one (or reuses a healthy one in the same directory);
    ``LocalCluster(state_dir)`` attaches to whatever is recorded there.
    """

    def __init__(self, state_dir: Path | str | None = None, log: TextIO | None = None) -> None:
        self.state_dir = Path(state_dir).resolve() if state_dir else default_state_dir()
        self.log = log or sys.stderr
        self.binaries = build.binaries()
        self._popens: dict[str, subprocess.Popen[bytes]] = {}
        self._state: dict[str, Any] = {}
        self._load_state()

    # -- paths and identity --------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (user in group system:masters)."""
        return self.state_dir / "admin.kubeconfig"

    @property
    def scheduler_kubeconfig(self) -> Path:
        """Kubeconfig of the unprivileged static user ``kopf-scheduler`` (no RBAC bound)."""
        return self.state_dir / "scheduler.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._state.get("ports", {}))

    @property
    def admin_token(self) -> str:
        return str(self._state["tokens"][ADMIN_USER])

    @property
    def ca_file(self) -> Path:
        return self.state_dir / "pki" / "apiserver.crt"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    def env(self) -> dict[str, str]:
        """Environment variables that point clients at this cluster."""
        return {"KUBECONFIG": str(self.kubeconfig)}

    def processes(self) -> dict[str, Process]:
        return {
            name: Process(name=name, **info)
            for name, info in self._state.get("processes", {}).items()
        }

    # -- what other modules attach -------------------------------------------------------

    def attachment(self, key: str) -> dict[str, Any]:
        """The state recorded for the thing attached under ``key`` (empty when none is), which
        the caller may change and then keep with :meth:`save_state`."""
        attached: dict[str, Any] = self._state.setdefault(ATTACHMENTS, {}).setdefault(key, {})
        return attached

    def is_attached(self, key: str) -> bool:
        return bool(self._state.get(ATTACHMENTS, {}).get(key))

    def detach(self, key: str) -> None:
        """Forget the state of ``key`` (once what it recorded is stopped and removed)."""
        self._state.get(ATTACHMENTS, {}).pop(key, None)
        if self._state:
            self.save_state()

    def adopt(self, name: str, popen: subprocess.Popen[bytes]) -> None:
        """Keep ``popen``, a process started for an attachment, so that stopping it reaps it."""
        self._popens[name] = popen

    def release(self, name: str) -> subprocess.Popen[bytes] | None:
        return self._popens.pop(name, None)

    # -- state file ----------------------------------------------------------------------

    def _load_state(self) -> None:
        path = self.state_dir / STATE_FILE
        self._state = json.loads(path.read_text()) if path.exists() else {}

    def save_state(self) -> None:
        path = self.state_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state, indent=2, sort_keys=True))
        tmp.replace(path)

    def _record(self, name: str, popen: subprocess.Popen[bytes]) -> None:
        start_time = proc_start_time(popen.pid)
        if start_time is None:
            raise ClusterError(f"{name} exited at once; see {self.log_dir / (name + '.log')}")
        self._popens[name] = popen
        proc = Process(name, popen.pid, start_time, str(self.log_dir / f"{name}.log"))
        self._state.setdefault("processes", {})[name] = proc.to_json()
        self.save_state()

    def say(self, message: str) -> None:
        print(f"localcluster: {message}", file=self.log, flush=True)

    # -- lifecycle -----------------------------------------------------------------------

    @classmethod
    def up(
        cls,
        nodes: int = 3,
        *,
        state_dir: Path | str | None = None,
        with_kube_scheduler: bool = False,
        reuse: bool = True,
        log: TextIO | None = None,
        apiserver_args: Sequence[str] = (),
    ) -> LocalCluster:
        """Start a cluster with ``nodes`` fake nodes; build the binaries first if missing.

        With ``reuse`` (the default) a healthy cluster already recorded in the state
        directory is kept, and only missing nodes are added. ``apiserver_args`` are extra
        kube-apiserver flags for a new cluster (the fault suite's small watch cache); they are
        recorded, so :meth:`restart_apiserver` starts it the same way.
        """
        cluster = cls(state_dir, log=log)
        if cluster.is_running() and cluster.is_healthy():
            if not reuse:
                raise ClusterError(f"a cluster is already running in {cluster.state_dir}")
            cluster.say(f"reusing the running cluster in {cluster.state_dir}")
        else:
            if cluster._state:
                cluster.say("found a stale cluster; cleaning it up first")
                cluster.down()
            cluster._start(apiserver_args)
        cluster.ensure_nodes(nodes)
        if with_kube_scheduler and "kube-scheduler" not in cluster.running():
            cluster.start_kube_scheduler()
        return cluster

    def _start(self, apiserver_args: Sequence[str] = ()) -> None:
        started = time.monotonic()
        build.ensure_built(self.log)
        self.say(f"starting in {self.state_dir}")
        try:
            self._prepare(apiserver_args)
            self._start_etcd()
            self._start_apiserver()
            self._start_controller_manager()
            self._start_kwok()
        except BaseException:
            self.say(f"start failed; logs are in {self.log_dir}")
            self.down(keep_logs=True)
            raise
        self._state["started_seconds"] = round(time.monotonic() - started, 2)
        self.save_state()
        self.say(f"control plane ready in {time.monotonic() - started:.1f}s")

    def _prepare(self, apiserver_args: Sequence[str]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for sub in ("etcd", "pki", "logs"):
            (self.state_dir / sub).mkdir(exist_ok=True)
        names = ("etcd-client", "etcd-peer", "apiserver", "controller-manager", "kwok", "scheduler")
        tokens = {ADMIN_USER: secrets.token_hex(16), SCHEDULER_USER: secrets.token_hex(16)}
        self._state = {
            "versions": {
                "kubernetes": v.KUBERNETES_VERSION,
                "etcd": v.ETCD_VERSION,
                "kwok": v.KWOK_VERSION,
            },
            "ports": dict(zip(names, free_ports(len(names)), strict=True)),
            "tokens": tokens,
            "processes": {},
            "apiserver_args": list(apiserver_args),
        }
        self.save_state()
        (self.state_dir / "sa.key").unlink(missing_ok=True)
        subprocess.run(
            ["openssl", "genrsa", "-out", str(self.state_dir / "sa.key"), "2048"],
            check=True,
            capture_output=True,
        )
        (self.state_dir / "tokens.csv").write_text(
            f'{tokens[ADMIN_USER]},{ADMIN_USER},uid-admin,"system:masters"\n'
            f"{tokens[SCHEDULER_USER]},{SCHEDULER_USER},uid-{SCHEDULER_USER}\n"
        )
        self._write_kubeconfig(self.kubeconfig, ADMIN_USER, tokens[ADMIN_USER])
        self._write_kubeconfig(self.scheduler_kubeconfig, SCHEDULER_USER, tokens[SCHEDULER_USER])
        shutil.copyfile(STAGES_FILE, self.state_dir / "stages.yaml")

    def _write_kubeconfig(self, path: Path, user: str, token: str) -> None:
        cluster = {"server": self.server, "certificate-authority": str(self.ca_file)}
        write_token_kubeconfig(path, cluster, user, token, name="localcluster")

    def _launch(self, name: str, args: Sequence[str]) -> None:
        self._record(name, spawn_logged(args, self.log_dir / f"{name}.log", cwd=self.state_dir))

    def _start_etcd(self) -> None:
        p = self.ports
        client = f"http://127.0.0.1:{p['etcd-client']}"
        peer = f"http://127.0.0.1:{p['etcd-peer']}"
        self._launch(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=node0",
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=node0={peer}",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=8589934592",
                # Throwaway test data: skipping fsync makes writes much cheaper.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait("etcd /health", self._etcd_healthy, timeout=60, process="etcd")

    @property
    def apiserver_args(self) -> list[str]:
        """Extra kube-apiserver flags, recorded in the state file."""
        return list(self._state.get("apiserver_args", []))

    def _start_apiserver(self) -> None:
        p = self.ports
        args = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{p['etcd-client']}",
            "--etcd-prefix=/registry",
            "--bind-address=127.0.0.1",
            f"--secure-port={p['apiserver']}",
            f"--cert-dir={self.state_dir / 'pki'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={self.state_dir / 'sa.key'}",
            f"--service-account-signing-key-file={self.state_dir / 'sa.key'}",
            # RBAC on; every default admission plugin stays on (Priority among them).
            "--authorization-mode=Node,RBAC",
            f"--token-auth-file={self.state_dir / 'tokens.csv'}",
            "--allow-privileged=true",
            # The real node (realnode.py) is registered with an InternalIP on this machine, but
            # its Hostname address resolves nowhere: `kubectl logs` and `exec` go by the IP.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--profiling=false",
            "--v=1",
            *self.apiserver_args,
        ]
        address = _advertise_address()
        if address:
            args.append(f"--advertise-address={address}")
        self._launch("kube-apiserver", args)
        self._wait(
            "kube-apiserver /readyz", self.apiserver_ready, timeout=120, process="kube-apiserver"
        )
        self._wait(
            "namespaces default and kube-system",
            lambda: all(
                self.api_ok(f"/api/v1/namespaces/{ns}") for ns in ("default", "kube-system")
            ),
            timeout=60,
            process="kube-apiserver",
        )

    def _start_controller_manager(self) -> None:
        kubeconfig = str(self.kubeconfig)
        self._launch(
            "kube-controller-manager",
            [
                str(self.binaries.kube_controller_manager),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                f"--controllers={','.join(KCM_CONTROLLERS)}",
                # Published as kube-root-ca.crt: the serving certificate (and its CA), which
                # covers the `kubernetes` Service IP.
                f"--root-ca-file={self.ca_file}",
                "--node-monitor-period=5s",
                "--node-monitor-grace-period=40s",
                # The PV controller's periodic sync (default 15 s) is also its retry: a binding
                # that hits a write conflict between its own workers, which is common for a
                # claim pre-bound to a new PV, completes only at the next sync.
                "--pvclaimbinder-sync-period=1s",
                "--kube-api-qps=100",
                "--kube-api-burst=200",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['controller-manager']}",
                f"--cert-dir={self.state_dir / 'pki' / 'kcm'}",
                "--v=1",
            ],
        )
        self._wait(
            "kube-controller-manager /healthz",
            lambda: self._https_ok(self.ports["controller-manager"], "/healthz"),
            timeout=60,
            process="kube-controller-manager",
        )
        self._wait(
            "serviceaccount default/default (KCM is reconciling)",
            lambda: self.api_ok("/api/v1/namespaces/default/serviceaccounts/default"),
            timeout=60,
            process="kube-controller-manager",
        )

    def _start_kwok(self) -> None:
        port = self.ports["kwok"]
        self._launch(
            "kwok",
            [
                str(self.binaries.kwok),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--manage-nodes-with-label-selector=",
                "--manage-single-node=",
                f"--cidr={POD_CIDR}",
                "--node-ip=10.240.0.1",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{port}",
                f"--node-port={port}",
                f"--config={self.state_dir / 'stages.yaml'}",
                "--v=INFO",
            ],
        )
        self._wait(
            "kwok /healthz",
            lambda: self._http_ok(f"http://127.0.0.1:{port}/healthz"),
            timeout=60,
            process="kwok",
        )

    def start_kube_scheduler(self) -> None:
        """Start the upstream kube-scheduler (scheduler name ``default-scheduler``)."""
        if "kube-scheduler" in self.running():
            return
        kubeconfig = str(self.kubeconfig)
        self._launch(
            "kube-scheduler",
            [
                str(self.binaries.kube_scheduler),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['scheduler']}",
                f"--cert-dir={self.state_dir / 'pki' / 'scheduler'}",
                "--v=1",
            ],
        )
        self._wait(
            "kube-scheduler /readyz",
            lambda: self._https_ok(self.ports["scheduler"], "/readyz"),
            timeout=60,
            process="kube-scheduler",
        )

    def restart_apiserver(self) -> float:
        """SIGKILL kube-apiserver and start it again with the same flags, port and certificates
        (the fault suite's crash); return the seconds until ``/readyz`` answered again.

        A start that finds the port still taken is tried again, for up to
        :data:`RESTART_PORT_TIMEOUT` seconds, with what holds the port said in the log: on some
        kernels a port the killed server listened on is refused for a moment after it is gone.
        """
        proc = self.processes()["kube-apiserver"]
        self.signal("kube-apiserver", signal.SIGKILL)
        popen = self._popens.pop("kube-apiserver", None)
        while proc.alive():
            if popen is not None:
                popen.poll()
            time.sleep(0.05)
        started = time.monotonic()
        deadline = started + RESTART_PORT_TIMEOUT
        while True:
            try:
                self._start_apiserver()
            except ClusterError as error:
                if ADDRESS_IN_USE not in str(error) or time.monotonic() > deadline:
                    raise
                port = self.ports["apiserver"]
                self.say(
                    f"kube-apiserver: port {port} still taken ({port_holders(port)}); "
                    "starting it again"
                )
                time.sleep(0.5)
                continue
            return time.monotonic() - started

    def signal(self, name: str, signum: int) -> None:
        """Send ``signum`` to one recorded component (SIGSTOP and SIGCONT stall and resume it)."""
        proc = self.processes()[name]
        if not proc.alive():
            raise ClusterError(f"{name} (pid {proc.pid}) is not running")
        os.kill(proc.pid, signum)

    def stop_kube_scheduler(self, timeout: float = 10) -> None:
        self._stop("kube-scheduler", timeout)

    def _stop(self, name: str, timeout: float) -> None:
        proc = self.processes().get(name)
        if proc is None:
            return
        terminate(proc, timeout, self._popens.pop(name, None))
        if proc.alive():
            raise ClusterError(f"{name} (pid {proc.pid}) survived SIGKILL")
        self._state["processes"].pop(name, None)
        self.save_state()

    def down(self, timeout: float = 10, keep_logs: bool = False) -> None:
        """Stop what is attached (see :func:`register_teardown`), then every recorded process
        (SIGTERM, then SIGKILL), and remove the state."""
        for key, attached in list(self._state.get(ATTACHMENTS, {}).items()):
            if not attached:
                continue
            teardown = _TEARDOWNS.get(key)
            if teardown is None:
                raise ClusterError(
                    f"a {key} is attached to the cluster in {self.state_dir} and this program "
                    "cannot stop it: run `python -m e2e.localcluster down`"
                )
            teardown(self, timeout, keep_logs)
        rank = {name: index for index, name in enumerate(COMPONENTS)}
        for name in sorted(self.processes(), key=lambda n: rank.get(n, len(rank)), reverse=True):
            self._stop(name, timeout)
        for entry in _OWNED:
            if keep_logs and entry == "logs":
                continue
            path = self.state_dir / entry
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.state_dir.rmdir()  # only if nothing else lives there
        self._state = {}

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- status --------------------------------------------------------------------------

    def running(self) -> list[str]:
        return [name for name, proc in self.processes().items() if proc.alive()]

    def is_running(self) -> bool:
        procs = self.processes()
        return bool(procs) and all(proc.alive() for proc in procs.values())

    def is_healthy(self) -> bool:
        return self.is_running() and self._etcd_healthy() and self.apiserver_ready()

    def status(self) -> dict[str, Any]:
        procs = self.processes()
        return {
            "state_dir": str(self.state_dir),
            "kubeconfig": str(self.kubeconfig) if self._state else None,
            "server": self.server if self._state else None,
            "versions": self._state.get("versions"),
            "ports": self.ports,
            "processes": {
                name: {"pid": proc.pid, "alive": proc.alive(), "log": proc.log}
                for name, proc in procs.items()
            },
            "apiserver_ready": bool(procs) and self.apiserver_ready(),
            "real_node": self._state.get("real_node"),
        }

    # -- nodes ---------------------------------------------------------------------------

    def node_names(self) -> list[str]:
        items = self.api("GET", "/api/v1/nodes")["items"]
        return sorted(item["metadata"]["name"] for item in items)

    def ensure_nodes(self, count: int, timeout: float = 120, **resources: str) -> list[str]:
        """Make sure fake nodes ``kwok-node-0..count-1`` exist and are Ready and untainted."""
        wanted = [f"{NODE_NAME_PREFIX}{index}" for index in range(count)]
        existing = set(self.node_names())
        missing = [index for index in range(count) if wanted[index] not in existing]
        if missing:
            self.create_nodes(missing, **resources)
        self.wait_nodes_ready(wanted, timeout=timeout)
        return wanted

    def create_nodes(
        self, indices: Sequence[int], cpu: str = "4", memory: str = "32Gi", pods: str = "110"
    ) -> list[str]:
        names = []
        for index in indices:
            manifest = node_manifest(index, cpu=cpu, memory=memory, pods=pods)
            self.api("POST", "/api/v1/nodes", manifest)
            names.append(manifest["metadata"]["name"])
        return names

    def wait_nodes_ready(self, names: Sequence[str], timeout: float = 120) -> None:
        started = time.monotonic()

        def ready() -> bool:
            nodes = {n["metadata"]["name"]: n for n in self.api("GET", "/api/v1/nodes")["items"]}
            lease_list = self.api("GET", f"{LEASES_PATH}/namespaces/kube-node-lease/leases")
            leases = {item["metadata"]["name"] for item in lease_list["items"]}
            return all(n in nodes and n in leases and node_ready(nodes[n]) for n in names)

        what = f"{len(names)} nodes Ready and untainted"
        self._wait(what, ready, timeout=timeout, process="kwok")
        self.say(f"{len(names)} nodes ready in {time.monotonic() - started:.1f}s")

    # -- clients -------------------------------------------------------------------------

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the matching kubectl against this cluster as the admin."""
        proc = subprocess.run(
            [str(self.binaries.kubectl), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}"
            )
        return proc

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """One JSON request to the apiserver (admin token unless ``token`` is given)."""
        return json.loads(self.request(method, path, body, token) or b"null")

    def request(self, method: str, path: str, body: Any = None, token: str | None = None) -> bytes:
        """One raw request to the apiserver; raises ``urllib.error.HTTPError`` on 4xx/5xx."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token or self.admin_token}")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", "e2e-localcluster")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, context=self._ssl_context(), timeout=30) as response:
            return bytes(response.read())

    def _ssl_context(self) -> ssl.SSLContext:
        if self.ca_file.exists():
            return ssl.create_default_context(cafile=str(self.ca_file))
        return unverified_tls()

    # -- probes --------------------------------------------------------------------------

    def _etcd_healthy(self) -> bool:
        url = f"http://127.0.0.1:{self.ports.get('etcd-client', 0)}/health"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(json.loads(response.read()).get("health") == "true")
        except (OSError, ValueError):
            return False

    def apiserver_ready(self) -> bool:
        return self.api_ok("/readyz")

    def api_ok(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except (OSError, KeyError):
            return False
        return True

    def _https_ok(self, port: int, path: str) -> bool:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}{path}", context=unverified_tls(), timeout=2
            ) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _http_ok(self, url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _wait(self, what: str, check: Callable[[], bool], timeout: float, process: str) -> None:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if check():
                self.say(f"{what}: ok after {time.monotonic() - started:.1f}s")
                return
            proc = self.processes().get(process)
            if proc is not None and not proc.alive():
                popen = self._popens.get(process)
                code = popen.poll() if popen else None
                raise ClusterError(
                    f"{process} exited (code {code}) while waiting for {what}:\n"
                    + log_tail(Path(proc.log))
                )
            time.sleep(0.2)
        log = self.log_dir / f"{process}.log"
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}:\n" + log_tail(log))


# -- helpers ----------------------------------------------------------------------------


def kwok_node(name: str, resources: Mapping[str, str], labels: Mapping[str, str]) -> dict[str, Any]:
    """A Node kwok plays the kubelet of: no taints, ``resources`` as capacity and allocatable.

    ``labels`` adds to the labels every kubelet sets (hostname, OS, architecture).
    """
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **labels,
            },
        },
        "spec": {},
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def node_manifest(
    index: int, cpu: str = "4", memory: str = "32Gi", pods: str = "110"
) -> dict[str, Any]:
    """A fake node for kwok: zone-spread, no taints, capacity set at creation."""
    name = f"{NODE_NAME_PREFIX}{index}"
    zone = {"topology.kubernetes.io/zone": ZONES[index % len(ZONES)]}
    node = kwok_node(name, {"cpu": cpu, "memory": memory, "pods": pods}, zone)
    node["status"]["addresses"] = [
        {"type": "InternalIP", "address": f"10.240.{index // 250}.{index % 250 + 2}"},
        {"type": "Hostname", "address": name},
    ]
    return node


def node_ready(node: dict[str, Any]) -> bool:
    """Ready=True and none of the lifecycle taints (not-ready, unreachable) left."""
    conditions = node.get("status", {}).get("conditions") or []
    is_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    lifecycle = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    return is_ready and not any(t["key"] in lifecycle for t in taints)


def unverified_tls() -> ssl.SSLContext:
    """What kubelet's HTTPS probes and kube-scheduler scrapes do: encrypt, trust any certificate.

    Only for the health and metrics ports of KCM and the schedulers, which serve self-signed
    certificates that nothing else trusts.
    """
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@contextlib.contextmanager
def running_cluster(nodes: int = 3, **kwargs: Any) -> Iterator[LocalCluster]:
    """A cluster for the duration of a ``with`` block (for pytest session fixtures)."""
    cluster = LocalCluster.up(nodes, **kwargs)
    try:
        yield cluster
    finally:
        cluster.down()


__all__ = [
    "ClusterError",
    "LocalCluster",
    "default_state_dir",
    "kwok_node",
    "node_manifest",
    "node_ready",
    "running_cluster",
    "unverified_tls",
]
