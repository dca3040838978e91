"""One real node beside the kwok nodes: a kubelet with containerd, runc and CNI, run as root.

kwok's nodes only pretend to run pods, so the Deployment of the manifests and of the Helm chart
is only proven when a real kubelet pulls nothing, starts the image from containerd's store,
mounts the ServiceAccount token and ``kube-root-ca.crt``, probes the health port and kills the
container when its pod is deleted. This module adds such a node, ``real-node``, to a running
local control plane:

* the kubelet is built from the same wrapper module and flags as the other Kubernetes
  binaries (``build.ensure_kubelet``); containerd, runc, the CNI plugins, iptables and a C
  compiler come from Debian's archive and are installed when missing (``apt-get``, as root);
* a containerd of its own (root, state and socket in the state directory, never the one
  Docker runs), whose CRI settings this machine needs: ``restrict_oom_score_adj`` (without
  CAP_SYS_RESOURCE every sandbox fails with "can't get final child's PID from pipe"),
  cgroupfs (no systemd), and a sandbox image built here (no registry to pull from);
* the pod network is a bridge with host-local addresses, a route to the Service range only and
  no masquerading: pods reach this machine and nothing else;
* the pods reach the API server as in-cluster clients do, through the ``kubernetes`` Service
  IP: a DNAT rule (our stand-in for kube-proxy) sends it to a forwarder on the bridge's own
  address (``apiproxy.py``), which passes the bytes to the API server on loopback. The API
  server keeps binding 127.0.0.1 only, and its certificate already covers the Service IP;
* the upstream kube-scheduler schedules the Deployment's own pods (``default-scheduler``).

Everything started is recorded in the cluster's ``state.json`` (key ``real_node``): processes
with their start times, the bridge and the exact iptables rules, so that ``down`` stops,
unmounts and deletes only what ``up`` made. The bridge, the DNAT rule and the kubelet's
``/kubepods`` cgroups are machine-wide, so one real node runs per machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from . import build, procfs
from .cluster import SERVICE_CIDR, ClusterError, LocalCluster, node_ready, register_teardown
from .listen_ports import free_port
from .processes import Process, log_tail, proc_start_time, spawn_logged, terminate

NODE_NAME = "real-node"
NODE_LABELS = {"type": "real"}
BRIDGE = "kopfs-real0"
SUBNET = "10.89.0.0/24"
GATEWAY = "10.89.0.1"
CNI_NETWORK = "kopf-scheduler-real-node"
CNI_BIN_DIRS = (Path("/usr/lib/cni"), Path("/opt/cni/bin"))
CNI_RESULTS = Path("/var/lib/cni/results")
PAUSE_IMAGE = "localhost/kopf-scheduler/pause:1"
CONTAINERD_NAMESPACE = "k8s.io"
CGROUP_ROOT = Path("/sys/fs/cgroup")
STATE_KEY = "real_node"
# Start order; `down` stops in the reverse order.
PROCESSES = ("api-proxy", "containerd", "kubelet")
SHIM = "containerd-shim-runc-v2"
# uname -m to the architecture names of image configs.
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}

# The smallest sandbox process: it holds the pod's namespaces, reaps the zombies that land on
# it as PID 1 of the pod, and exits on SIGINT or SIGTERM.
PAUSE_SOURCE = r"""
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, 0, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction term = {0}, child = {0};
    term.sa_handler = stop;
    child.sa_handler = reap;
    child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    sigaction(SIGINT, &term, 0);
    sigaction(SIGTERM, &term, 0);
    sigaction(SIGCHLD, &child, 0);
    for (;;) {
        pause();
    }
}
"""


def _command_available(name: str) -> bool:
    return shutil.which(name) is not None


def _cni_bin_dir() -> Path | None:
    for directory in CNI_BIN_DIRS:
        if all((directory / plugin).is_file() for plugin in ("bridge", "host-local", "loopback")):
            return directory
    return None


def missing_packages() -> list[str]:
    """Debian packages the real node needs that are not installed."""
    wanted = {
        "containerd": _command_available("containerd") and _command_available("ctr"),
        "runc": _command_available("runc"),
        "containernetworking-plugins": _cni_bin_dir() is not None,
        "iptables": _command_available("iptables"),
        "gcc": _command_available("gcc"),
        "libc6-dev": Path("/usr/include/signal.h").is_file(),
    }
    return [package for package, present in wanted.items() if not present]


def cannot_run() -> str | None:
    """Why this machine cannot run a real node, or None when it can."""
    if os.geteuid() != 0:
        return "a real node needs root (containerd, the kubelet, mounts, a bridge, iptables)"
    if not Path("/proc/self/mountinfo").is_file() or not CGROUP_ROOT.is_dir():
        return f"no cgroup filesystem at {CGROUP_ROOT}"
    if missing_packages() and shutil.which("apt-get") is None:
        return f"missing {', '.join(missing_packages())} and no apt-get to install them"
    return None


def ensure_packages(log: Any) -> None:
    """Install what is missing from Debian's archive (``apt-get update`` once, then install)."""
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ClusterError(f"the real node needs the Debian packages {' '.join(missing)}")
    print(f"localcluster: installing {' '.join(missing)} (apt-get)", file=log, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for args in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
    ):
        proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ClusterError(f"{' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    still = missing_packages()
    if still:
        raise ClusterError(f"still missing after apt-get install: {' '.join(still)}")


def project_image() -> str:
    """The reference ``make image`` tags: ``kopf-scheduler:<version of pyproject.toml>``."""
    with (Path(__file__).resolve().parents[2] / "pyproject.toml").open("rb") as stream:
        return f"kopf-scheduler:{tomllib.load(stream)['project']['version']}"


def docker_has(image: str) -> bool:
    proc = subprocess.run(
        [docker_binary(), "image", "inspect", image], capture_output=True, timeout=60, check=False
    )
    return proc.returncode == 0


def docker_binary() -> str:
    """``$DOCKER``, else ``docker`` on PATH, else Debian's client."""
    return os.environ.get("DOCKER") or shutil.which("docker") or "/usr/bin/docker"


def _run(args: Sequence[str], *, input: bytes | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(
        list(args), input=input, capture_output=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise ClusterError(
            f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode(errors="replace")


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root``, deepest first (the order to unmount them)."""
    prefix = str(root).rstrip("/")
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: (p.count("/"), p), reverse=True)


def _process_table() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) for every process that can be read."""
    table = {}
    for pid in procfs.process_ids():
        fields = procfs.stat_fields(pid)
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if fields is None:
            continue
        parent = int(fields[procfs.PARENT_PID])
        table[pid] = (parent, [arg.decode(errors="replace") for arg in argv if arg])
    return table


def _descendants(table: dict[int, tuple[int, list[str]]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class RealNode:
    """The real node of one local cluster; its state lives in the cluster's state file."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.dir = cluster.state_dir / "real-node"

    # -- paths and state -----------------------------------------------------------------

    @property
    def containerd_socket(self) -> Path:
        return self.dir / "containerd" / "containerd.sock"

    @property
    def _state(self) -> dict[str, Any]:
        return self.cluster.attachment(STATE_KEY)

    def _save(self) -> None:
        self.cluster.save_state()

    def processes(self) -> dict[str, Process]:
        return {
            name: Process(name=name, **info)
            for name, info in self._state.get("processes", {}).items()
        }

    def recorded(self) -> bool:
        return self.cluster.is_attached(STATE_KEY)

    def is_running(self) -> bool:
        procs = self.processes()
        return set(procs) == set(PROCESSES) and all(p.alive() for p in procs.values())

    def status(self) -> dict[str, Any]:
        return {
            "node": NODE_NAME,
            "dir": str(self.dir),
            "ports": self._state.get("ports", {}),
            "processes": {
                name: {"pid": proc.pid, "alive": proc.alive(), "log": proc.log}
                for name, proc in self.processes().items()
            },
            "bridge": self._state.get("bridge"),
            "iptables": self._state.get("iptables", []),
        }

    def say(self, message: str) -> None:
        self.cluster.say(f"real node: {message}")

    # -- up ------------------------------------------------------------------------------

    def up(self, images: Sequence[str] = ()) -> None:
        """Start the node (or keep a healthy one), import ``images`` and wait until it is Ready.

        Also starts the upstream kube-scheduler, which places the pods of Deployments, unless
        it runs already (``down`` stops it again only when ``up`` started it).
        """
        reason = cannot_run()
        if reason is not None:
            raise ClusterError(reason)
        if self.recorded() and self.is_running() and self._node_ready():
            self.say("already running")
        else:
            if self.recorded():
                self.say("found a stale real node; cleaning it up first")
                self.down()
            self._start()
        self.import_images(images)
        if "kube-scheduler" not in self.cluster.running():
            self.cluster.start_kube_scheduler()
            self._state["started_kube_scheduler"] = True
            self._save()

    def _start(self) -> None:
        started = time.monotonic()
        ensure_packages(self.cluster.log)
        kubelet = build.ensure_kubelet(self.cluster.log)
        self._check_control_plane()
        self.say(f"starting in {self.dir}")
        self._state.update({"processes": {}, "iptables": [], "bridge": None})
        self._save()
        try:
            for sub in ("containerd", "kubelet", "cni/net.d", "cni/ipam", "pods", "pause"):
                (self.dir / sub).mkdir(parents=True, exist_ok=True)
            self._bridge()
            self._api_route()
            self._start_containerd()
            self._pause_image()
            self._start_kubelet(kubelet)
        except BaseException:
            self.say(f"start failed; logs are in {self.cluster.log_dir}")
            self.down(keep_logs=True)
            raise
        took = time.monotonic() - started
        self._state["started_seconds"] = round(took, 2)
        self._save()
        self.say(f"{NODE_NAME} Ready in {took:.1f}s")

    def _check_control_plane(self) -> None:
        if not self.cluster.is_healthy():
            raise ClusterError(f"no healthy cluster in {self.cluster.state_dir}: run `up` first")

        def published() -> bool:
            return self.cluster.api_ok("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")

        deadline = time.monotonic() + 30
        while not published():
            if time.monotonic() > deadline:
                raise ClusterError(
                    "the ConfigMap kube-root-ca.crt is missing: this control plane runs without "
                    "the root-ca-cert-publisher controller; restart it (`down`, then `up`)"
                )
            time.sleep(0.5)

    def _bridge(self) -> None:
        links = json.loads(_run(["ip", "-j", "link", "show"]))
        if any(link.get("ifname") == BRIDGE for link in links):
            raise ClusterError(
                f"the bridge {BRIDGE} exists already: another real node runs on this machine "
                "(one per machine), or one was not cleaned up (`ip link del {BRIDGE}`)"
            )
        _run(["ip", "link", "add", "name", BRIDGE, "type", "bridge"])
        self._state["bridge"] = BRIDGE
        self._save()
        prefix = SUBNET.split("/")[1]
        _run(["ip", "addr", "add", f"{GATEWAY}/{prefix}", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])

    def _api_route(self) -> None:
        """The forwarder on the bridge address, and the DNAT rule of the Service IP to it."""
        service = self.cluster.api("GET", "/api/v1/namespaces/default/services/kubernetes")
        cluster_ip = service["spec"]["clusterIP"]
        service_port = service["spec"]["ports"][0]["port"]
        port = free_port(GATEWAY)
        self._state["ports"] = {"api-proxy": port}
        self._launch(
            "api-proxy",
            [
                # The interpreter running this module: apiproxy.py needs only the stdlib.
                sys.executable,
                str(Path(__file__).with_name("apiproxy.py")),
                GATEWAY,
                str(port),
                "127.0.0.1",
                str(self.cluster.ports["apiserver"]),
            ],
        )
        self._wait("the API forwarder", lambda: _connects(GATEWAY, port), 30, "api-proxy")
        rule = [
            "PREROUTING",
            "-i",
            BRIDGE,
            "-d",
            f"{cluster_ip}/32",
            "-p",
            "tcp",
            "--dport",
            str(service_port),
            "-m",
            "comment",
            "--comment",
            f"kopf-scheduler real node: {self.cluster.state_dir}",
            "-j",
            "DNAT",
            "--to-destination",
            f"{GATEWAY}:{port}",
        ]
        _run(["iptables", "-w", "-t", "nat", "-A", *rule])
        self._state["iptables"] = [["-t", "nat", *rule]]
        self._save()

    def _containerd_config(self) -> str:
        root = self.dir / "containerd"
        cni = _cni_bin_dir()
        runc = shutil.which("runc") or "runc"
        return f"""\
version = 2
root = "{root / "root"}"
state = "{root / "state"}"
# The opt plugin would install into /opt/containerd, shared with every other containerd.
disabled_plugins = ["io.containerd.internal.v1.opt"]

[grpc]
  address = "{self.containerd_socket}"

[ttrpc]
  address = "{self.containerd_socket}.ttrpc"

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # No CAP_SYS_RESOURCE here: without this every sandbox fails with
  # "can't get final child's PID from pipe" when runc lowers oom_score_adj.
  restrict_oom_score_adj = true
  # Network namespaces under the state directory, so that down finds and unmounts them.
  netns_mounts_under_state_dir = true
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni}"
    conf_dir = "{self.dir / "cni" / "net.d"}"
    max_conf_num = 1
"""

    def _cni_config(self) -> dict[str, Any]:
        return {
            "cniVersion": "0.4.0",
            "name": CNI_NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    # No masquerading: pods talk to this machine only.
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY}]],
                        # The Service range only, through the bridge (where the DNAT rule is):
                        # no default route, so nothing leaves for another address.
                        "routes": [{"dst": SERVICE_CIDR, "gw": GATEWAY}],
                        "dataDir": str(self.dir / "cni" / "ipam"),
                    },
                }
            ],
        }

    def _start_containerd(self) -> None:
        config = self.dir / "containerd" / "config.toml"
        config.write_text(self._containerd_config())
        conflist = self.dir / "cni" / "net.d" / "10-kopf-scheduler.conflist"
        conflist.write_text(json.dumps(self._cni_config(), indent=2))
        self._launch("containerd", ["containerd", f"--config={config}", "--log-level=warn"])
        self._wait(
            "containerd",
            lambda: self._ctr("version", check=False) is not None,
            60,
            "containerd",
        )

    def _ctr(self, *args: str, input: bytes | None = None, check: bool = True) -> str | None:
        command = ["ctr", f"--address={self.containerd_socket}", "-n", CONTAINERD_NAMESPACE]
        try:
            return _run([*command, *args], input=input, timeout=600)
        except ClusterError:
            if check:
                raise
            return None

    def _pause_image(self) -> None:
        """Compile the pause program statically and import it as an image of one file."""
        work = self.dir / "pause"
        (work / "pause.c").write_text(PAUSE_SOURCE)
        _run(["gcc", "-static", "-Os", "-s", "-o", str(work / "pause"), str(work / "pause.c")])
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as tar:
            info = tar.gettarinfo(str(work / "pause"), arcname="pause")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with (work / "pause").open("rb") as binary:
                tar.addfile(info, binary)
        self._import_archive(_single_layer_archive(PAUSE_IMAGE, layer.getvalue(), ["/pause"]))

    def _import_archive(self, archive: bytes) -> None:
        self._ctr("images", "import", "-", input=archive)

    def import_images(self, images: Sequence[str]) -> None:
        """Copy images from the Docker engine into the node's containerd (``docker save``)."""
        for image in images:
            started = time.monotonic()
            saved = subprocess.run(
                [docker_binary(), "save", image], capture_output=True, timeout=600, check=False
            )
            if saved.returncode != 0:
                raise ClusterError(
                    f"docker save {image} failed: {saved.stderr.decode(errors='replace')}"
                )
            self._import_archive(saved.stdout)
            self.say(f"imported {image} in {time.monotonic() - started:.1f}s")

    def images(self) -> list[str]:
        listed = self._ctr("images", "list", "--quiet") or ""
        return [line for line in listed.splitlines() if line and not line.startswith("sha256:")]

    def _kubelet_config(self) -> dict[str, Any]:
        ports = self._state["ports"]
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": GATEWAY,
            "port": ports["kubelet"],
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": ports["kubelet-healthz"],
            # The API server calls the kubelet (logs, exec) without a client certificate; the
            # kubelet listens on the bridge address only.
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "failCgroupV1": False,
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "podLogsDir": str(self.dir / "pods"),
            "clusterDomain": "cluster.local",
            "resolvConf": "/etc/resolv.conf",
            "maxPods": 30,
            "serializeImagePulls": False,
            # The images come from `import`, never from a registry: never collect them, and do
            # not evict pods over a full disk shared with everything else on the machine.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
        }

    def _start_kubelet(self, kubelet: Path) -> None:
        self._state["ports"].update(
            kubelet=free_port(GATEWAY), **{"kubelet-healthz": free_port("127.0.0.1")}
        )
        self._save()
        config = self.dir / "kubelet" / "config.yaml"
        config.write_text(yaml.safe_dump(self._kubelet_config(), sort_keys=False))
        labels = ",".join(f"{key}={value}" for key, value in NODE_LABELS.items())
        self._launch(
            "kubelet",
            [
                str(kubelet),
                f"--config={config}",
                # The admin identity: the static token file cannot grow a node user without a
                # restart of the API server, and no admission plugin restricts nodes here.
                f"--kubeconfig={self.cluster.kubeconfig}",
                f"--root-dir={self.dir / 'kubelet' / 'root'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={GATEWAY}",
                f"--node-labels={labels}",
                "--v=1",
            ],
        )
        self._wait(f"node {NODE_NAME} Ready", self._node_ready, 180, "kubelet")

    def _node_ready(self) -> bool:
        try:
            node = self.cluster.api("GET", f"/api/v1/nodes/{NODE_NAME}")
        except OSError:
            return False
        return node_ready(node)

    # -- processes -----------------------------------------------------------------------

    def _launch(self, name: str, args: Sequence[str]) -> None:
        log = self.cluster.log_dir / f"{name}.log"
        popen = spawn_logged(args, log, cwd=self.dir)
        start_time = proc_start_time(popen.pid)
        if start_time is None:
            raise ClusterError(f"{name} exited at once; see {log}")
        self.cluster.adopt(name, popen)
        proc = Process(name, popen.pid, start_time, str(log))
        self._state.setdefault("processes", {})[name] = proc.to_json()
        self._save()

    def _wait(self, what: str, check: Callable[[], bool], timeout: float, process: str) -> None:
        started = time.monotonic()
        while time.monotonic() < started + timeout:
            if check():
                self.say(f"{what}: ok after {time.monotonic() - started:.1f}s")
                return
            proc = self.processes().get(process)
            if proc is not None and not proc.alive():
                raise ClusterError(
                    f"{process} exited while waiting for {what}:\n" + log_tail(Path(proc.log))
                )
            time.sleep(0.5)
        log = self.cluster.log_dir / f"{process}.log"
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}:\n" + log_tail(log))

    def _shims(self) -> list[int]:
        """PIDs of the runc shims that our containerd started (they outlive it)."""
        socket_path = str(self.containerd_socket)
        shims = []
        for pid, (_, argv) in _process_table().items():
            if argv and Path(argv[0]).name == SHIM and socket_path in argv:
                shims.append(pid)
        return shims

    # -- down ----------------------------------------------------------------------------

    def down(self, timeout: float = 10, keep_logs: bool = True) -> None:
        """Stop and remove everything ``up`` started or made; safe to call more than once."""
        procs = self.processes()
        if self._state.get("started_kube_scheduler"):
            self.cluster.stop_kube_scheduler(timeout)
        if "kubelet" in procs:
            self._stop(procs["kubelet"], timeout)
        self._kill_containers()
        for name in ("containerd", "api-proxy"):
            if name in procs:
                self._stop(procs[name], timeout)
        for point in _mounts_under(self.dir):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        for args in self._state.get("iptables", []):
            subprocess.run(["iptables", "-w", *_deleting(args)], capture_output=True, check=False)
        if self._state.get("bridge"):
            subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
        # libcni caches each sandbox's results under /var/lib/cni (not configurable in
        # containerd 1.6); the sandboxes were killed without a CNI DEL, so remove them here.
        for sandbox in self._sandboxes():
            for network in (CNI_NETWORK, "cni-loopback"):
                for result in CNI_RESULTS.glob(f"{network}-{sandbox}-*"):
                    result.unlink(missing_ok=True)
        _remove_cgroups("kubepods")
        self._forget_node()
        shutil.rmtree(self.dir, ignore_errors=True)
        if not keep_logs:
            for name in PROCESSES:
                (self.cluster.log_dir / f"{name}.log").unlink(missing_ok=True)
        self.cluster.detach(STATE_KEY)

    def _sandboxes(self) -> set[str]:
        """IDs of the pod sandboxes our containerd has made (from its own directories)."""
        found: set[str] = set()
        for base in ("root", "state"):
            cri = self.dir / "containerd" / base / "io.containerd.grpc.v1.cri" / "sandboxes"
            if cri.is_dir():
                found.update(entry.name for entry in cri.iterdir())
        return found

    def _stop(self, proc: Process, timeout: float) -> None:
        terminate(proc, timeout, self.cluster.release(proc.name))
        if proc.alive():
            raise ClusterError(f"{proc.name} (pid {proc.pid}) survived SIGKILL")

    def _kill_containers(self) -> None:
        """SIGKILL each shim of our containerd and everything below it (the pods' processes)."""
        for _ in range(3):
            shims = self._shims()
            if not shims:
                return
            table = _process_table()
            for shim in shims:
                for pid in [*reversed(_descendants(table, shim)), shim]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while any(Path(f"/proc/{pid}").exists() for pid in shims):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)

    def _forget_node(self) -> None:
        """Delete the Node object and the pods bound to it, when the API server still runs."""
        if not self.cluster.is_running() or not self.cluster.apiserver_ready():
            return
        self.cluster.kubectl(
            "delete",
            "pods",
            "--all-namespaces",
            f"--field-selector=spec.nodeName={NODE_NAME}",
            "--force",
            "--grace-period=0",
            "--ignore-not-found",
            check=False,
        )
        self.cluster.kubectl("delete", "node", NODE_NAME, "--ignore-not-found", check=False)


# -- helpers ----------------------------------------------------------------------------


def _connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _deleting(args: Sequence[str]) -> list[str]:
    """The same rule with ``-D`` in place of the append."""
    table, rest = list(args[:2]), list(args[2:])
    return [*table, "-D", *rest]


def _remove_cgroups(name: str) -> None:
    """Remove the kubelet's cgroup tree ``name`` in every v1 hierarchy, deepest first.

    Only empty cgroups can be removed, and the processes in them are gone by now.
    """
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        top = hierarchy / name
        if not top.is_dir():
            continue
        for directory in sorted(
            (path for path in top.rglob("*") if path.is_dir()),
            key=lambda path: len(path.parts),
            reverse=True,
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def _single_layer_archive(reference: str, layer: bytes, entrypoint: list[str]) -> bytes:
    """A ``docker save``-style archive of one image made of one uncompressed layer."""
    layer_digest = hashlib.sha256(layer).hexdigest()
    config = json.dumps(
        {
            "architecture": _GOARCH.get(platform.machine(), platform.machine()),
            "os": "linux",
            "config": {"Entrypoint": entrypoint},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
            "history": [{"created_by": "kopf-scheduler real node: static pause"}],
        },
        sort_keys=True,
    ).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": [reference], "Layers": [f"{layer_digest}/layer.tar"]}]
    ).encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in (
            (f"{layer_digest}/layer.tar", layer),
            (config_name, config),
            ("manifest.json", manifest),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return archive.getvalue()


@contextlib.contextmanager
def running_real_node(cluster: LocalCluster, images: Sequence[str] = ()) -> Iterator[RealNode]:
    """A real node for the duration of a ``with`` block."""
    node = RealNode(cluster)
    node.up(images)
    try:
        yield node
    finally:
        node.down()


__all__ = [
    "NODE_NAME",
    "RealNode",
    "cannot_run",
    "docker_has",
    "ensure_packages",
    "missing_packages",
    "project_image",
    "running_real_node",
]


def _tear_down(cluster: LocalCluster, timeout: float, keep_logs: bool) -> None:
    RealNode(cluster).down(timeout=timeout, keep_logs=keep_logs)


register_teardown(STATE_KEY, _tear_down)
