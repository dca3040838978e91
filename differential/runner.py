"""Play a scenario on the local control plane for one scheduler at a time, and record it.

The control plane is one of ``e2e/localcluster`` in a state directory of its own, without any
node but the scenario's: ``FailedScheduling`` messages count every node of the cluster, and
the pods carry no selector that would keep them off other nodes. kube-scheduler v1.34.10 runs
with its default configuration as ``default-scheduler``; ours runs as a local process like in
the end-to-end suite (``e2e/support/schedulers.py``), authenticated with the RBAC of
``manifests/``, with upstream's default back-off (1 s to 10 s).

One run, in order:

1. create a namespace; the PVs and their VolumeAttachments; the setup claims, and wait until
   they are bound; the running
   pods (already bound), wait until kwok started them, then give them start times one second
   apart in the scenario's order (kwok stamps the second it started them, which would tie);
   the PDBs, and wait until the disruption controller has counted them;
2. start watching the namespace's pods; create the backlog wave, if there is one;
3. start the scheduler under test (a fresh process per run, so nothing carries over), then
   create the other waves at their offsets from the next moment :data:`WAVE_PHASE` past a
   whole second of the wall clock (see below); with a backlog, the scheduler is started so
   that its first decision on it falls near that point of a second, and the waves begin at
   the phase at least :data:`BACKLOG_HEAD_START` after that decision;
4. wait until the run settles: no pod terminating, no claim waiting for its volume, nothing in
   the scheduler's active or backoff queue (``scheduler_pending_pods``) and no pod change for
   :data:`QUIET_SECONDS`, on two probes in a row;
5. stop the scheduler (ours writes its pending Event series on the way out), collect pods,
   Events, volume claims and resource claims, and remove everything the run created (the
   resource claims first, and wait until they are gone, so that the next run finds every
   device free).

The nodes, their ResourceSlices and their CSINodes are created once per scenario
(:meth:`Lab.stage`) and are identical for every run.

Why the waves keep time with the wall clock's seconds: the API server stores a deletion's
``deletionTimestamp`` and a pod's ``startTime`` to the second, and kwok removes a terminating
pod when its deletion time comes, so a victim with a one-second grace period is gone anywhere
from 0 to 1 s after its deletion, depending on where in the second it was deleted. Whether a
later pod still sees that victim, and which of two victims started first (preemption breaks
ties on start time), then depends on where in the second a run happened to begin. Starting
every run's waves at the same point within the second gives both schedulers the same clock to
race against; the runs of one side would otherwise agree with each other and disagree with the
other side's for no reason of scheduling.

A backlog is decided as soon as the scheduler starts, so there the point in the second is set
by how long the scheduler takes to start, which is its own: kube-scheduler decides about 0.3 s
after it is launched, a Python process one and a half to two and a half seconds after, and the
readiness each reports comes at a different moment relative to its first decision. Timing the
waves from readiness left one side's backlog victims a second less before the next wave than
the other's. So the runner measures, per side, the time from starting the scheduler to its
first decision on the backlog as the pod watch shows it, starts the next run of that side that
much ahead of the phase, and times the waves from the decision itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, TextIO

from bench.promtext import by_label, parse
from e2e.localcluster import ClusterError, LocalCluster, default_state_dir, spawn_logged
from e2e.support import SCHEDULER_NAME
from e2e.support.clusters import apply_rbac, service_account_kubeconfig
from e2e.support.kubectl import Kubectl, KubectlError, condition, node_name, nominated_node
from e2e.support.schedulers import UPSTREAM_SCHEDULER_NAME, free_port
from e2e.support.watch import PodWatch

from .record import OURS, UPSTREAM, RunRecord
from .scenario import OWNER_LABEL, Raw, Rendered, Scenario, Wave, name_of, render, start_time

SETTLE_TIMEOUT = 150.0
QUIET_SECONDS = 3.0
PROBE_INTERVAL = 0.5
SETUP_TIMEOUT = 60.0
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
SERVICE_ACCOUNT = "kopf-scheduler"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
MERGE_PATCH = "application/merge-patch+json"
RESOURCE_PATH = "/apis/resource.k8s.io/v1"
SLICES_PATH = f"{RESOURCE_PATH}/resourceslices"
CSI_NODES_PATH = "/apis/storage.k8s.io/v1/csinodes"
ATTACHMENTS_PATH = "/apis/storage.k8s.io/v1/volumeattachments"
WAVE_PHASE = 0.2
"""Where within a wall-clock second the first wave of every run starts."""
BACKLOG_HEAD_START = 0.5
"""Seconds at least from the scheduler's first decision on a backlog to the next wave's phase."""
BACKLOG_DECISION_TIMEOUT = 15.0

OUR_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
  - schedulerName: {SCHEDULER_NAME}
leaderElection:
  leaderElect: true
  resourceName: kopf-scheduler
  resourceNamespace: kopf-scheduler
kopfScheduler:
  nominationHygiene: false
"""
"""Ours with kube-scheduler's defaults where they differ from the end-to-end suite's, and
without what we add on purpose where it shows in a compared aspect: nomination hygiene clears a
bound pod's ``nominatedNodeName``, which kube-scheduler v1.34 leaves in place."""


class RunnerError(RuntimeError):
    """The cluster could not play the scenario; the message says why in one line."""


# -- the API ----------------------------------------------------------------------------------


def _kind_path(obj: Mapping[str, Any], namespace: str | None = None) -> str:
    kind = obj.get("kind")
    paths = {
        "Node": "/api/v1/nodes",
        "PersistentVolume": "/api/v1/persistentvolumes",
        "Namespace": "/api/v1/namespaces",
        "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
        "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
        "DeviceClass": f"{RESOURCE_PATH}/deviceclasses",
        "ResourceSlice": f"{RESOURCE_PATH}/resourceslices",
        "CSINode": CSI_NODES_PATH,
        "VolumeAttachment": ATTACHMENTS_PATH,
        "ResourceClaimTemplate": f"{RESOURCE_PATH}/namespaces/{{ns}}/resourceclaimtemplates",
        "ResourceClaim": f"{RESOURCE_PATH}/namespaces/{{ns}}/resourceclaims",
        "Pod": "/api/v1/namespaces/{ns}/pods",
        "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
        "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    }
    if kind not in paths:
        raise RunnerError(f"cannot create a {kind}")
    ns = namespace or (obj.get("metadata") or {}).get("namespace") or "default"
    return paths[str(kind)].format(ns=ns)


def _resource_claims_path(namespace: str) -> str:
    return f"{RESOURCE_PATH}/namespaces/{namespace}/resourceclaims"


class Api:
    """JSON requests to the API server as the admin; errors become one-line RunnerErrors."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.server = cluster.server
        self.token = cluster.admin_token
        self.context = ssl.create_default_context(cafile=str(cluster.ca_file))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        missing_ok: bool = False,
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", "differential-runner")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            if missing_ok and error.code == 404:
                return None
            detail = error.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("message", detail)
            raise RunnerError(f"{method} {path}: HTTP {error.code}: {detail}") from None
        except OSError as error:
            raise RunnerError(f"{method} {path}: {error}") from None
        return json.loads(payload) if payload else None

    def create(self, obj: Raw) -> Raw:
        created: Raw = self.request("POST", _kind_path(obj), obj)
        return created

    def items(self, path: str) -> list[Raw]:
        listed: list[Raw] = self.request("GET", path)["items"]
        return listed


# -- the schedulers ---------------------------------------------------------------------------


def _insecure() -> ssl.SSLContext:
    # Only for kube-scheduler's /metrics, served with a self-signed certificate.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _scrape(url: str, context: ssl.SSLContext | None) -> dict[str, float]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:
            text = response.read().decode()
    except OSError as error:
        raise RunnerError(f"cannot read {url}: {error}") from None
    return by_label(parse(text), "scheduler_pending_pods", "queue")


class Side(Protocol):
    name: str
    scheduler_name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def queued(self) -> dict[str, float]:
        """``scheduler_pending_pods`` by queue."""
        ...


class UpstreamSide:
    """kube-scheduler v1.34.10 of the local control plane, default configuration."""

    name = UPSTREAM
    scheduler_name = UPSTREAM_SCHEDULER_NAME

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def start(self) -> None:
        self.cluster.start_kube_scheduler()

    def stop(self) -> None:
        self.cluster.stop_kube_scheduler()

    def queued(self) -> dict[str, float]:
        port = self.cluster.ports["scheduler"]
        return _scrape(f"https://127.0.0.1:{port}/metrics", _insecure())


class OurSide:
    """kopf-scheduler as a local process, authenticated as its ServiceAccount.

    A fresh process per run, like ``e2e/support/schedulers.py`` starts them; its metrics are
    opened to anonymous readers (``--authorization-always-allow-paths``), which is enough on
    loopback.
    """

    name = OURS
    scheduler_name = SCHEDULER_NAME

    def __init__(self, kubectl: Kubectl, work_dir: Path) -> None:
        self.kubectl = kubectl
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = work_dir / "scheduler.kubeconfig"
        self.config = work_dir / "scheduler-config.yaml"
        self.config.write_text(OUR_CONFIG)
        self.log = work_dir / "kopf-scheduler.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def _probe(self, path: str) -> Any:
        url = f"https://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, context=_insecure(), timeout=5) as response:
                return response.read().decode()
        except urllib.error.HTTPError as error:
            return error.read().decode(errors="replace") if error.code == 503 else None
        except OSError:
            return None

    def _leading(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise RunnerError(f"kopf-scheduler exited during start-up:\n{_tail(self.log)}")
        body = self._probe("/readyz")
        with contextlib.suppress(ValueError, TypeError):
            state = json.loads(body)
            return bool(state.get("synced") and state.get("leader"))
        return False

    def start(self) -> None:
        # A fresh token each time: a campaign can outlast one.
        service_account_kubeconfig(self.kubectl, self.kubeconfig, SERVICE_ACCOUNT)
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["PYTHONUNBUFFERED"] = "1"
        self.process = spawn_logged(
            [
                sys.executable,
                "-m",
                "kopf_scheduler",
                "run",
                f"--kubeconfig={self.kubeconfig}",
                f"--config={self.config}",
                "--health-host=127.0.0.1",
                f"--health-port={self.port}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                "--identity=differential",
                "--log-format=console",
            ],
            self.log,
            env=env,
        )
        _wait("kopf-scheduler to lead", self._leading, timeout=START_TIMEOUT, interval=0.3)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            raise RunnerError(
                f"kopf-scheduler did not stop within {STOP_TIMEOUT:.0f}s:\n{_tail(self.log)}"
            ) from None
        if code != 0:
            raise RunnerError(f"kopf-scheduler exited with {code}:\n{_tail(self.log)}")

    def queued(self) -> dict[str, float]:
        if self.process is None or self.process.poll() is not None:
            raise RunnerError(f"kopf-scheduler is not running:\n{_tail(self.log)}")
        return _scrape(f"https://127.0.0.1:{self.port}/metrics", _insecure())


def _decided(pod: Mapping[str, Any]) -> bool:
    """Whether a scheduler has decided on ``pod``: bound, nominated, or told unschedulable
    (the API server's own ``SchedulingGated`` condition is no decision)."""
    scheduled = condition(pod, "PodScheduled") or {}
    attempted = bool(scheduled) and scheduled.get("reason") != "SchedulingGated"
    return attempted or node_name(pod) is not None or nominated_node(pod) is not None


def seconds_to_phase(wall: float, phase: float = WAVE_PHASE) -> float:
    """Seconds from the wall-clock time ``wall`` to the next moment ``phase`` past a whole
    second (0 when ``wall`` is exactly there)."""
    return (phase - wall) % 1.0


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


# -- the lab ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _runner_errors() -> Iterator[None]:
    """The helpers' own errors (the local cluster's, kubectl's) as RunnerErrors."""
    try:
        yield
    except (ClusterError, KubectlError) as error:
        raise RunnerError(str(error)) from None


def _wait(what: str, probe: Any, timeout: float = SETUP_TIMEOUT, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise RunnerError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def namespace_for(scenario: Scenario, side: str, attempt: int) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", scenario.name.lower()).strip("-")[:36]
    return f"diff-{slug}-{side}{attempt}-{secrets.token_hex(2)}"


class Lab:
    """The control plane the runs share, and the two schedulers."""

    def __init__(
        self,
        state_dir: Path | None,
        work_dir: Path,
        *,
        keep_cluster: bool = False,
        log: TextIO | None = None,
    ) -> None:
        self.log = log or sys.stderr
        self.state_dir = state_dir or default_state_dir()
        self.keep_cluster = keep_cluster
        self.work_dir = work_dir
        existing = LocalCluster(self.state_dir, log=self.log)
        self.started_cluster = not (existing.is_running() and existing.is_healthy())
        with _runner_errors():
            self.cluster = LocalCluster.up(0, state_dir=self.state_dir, log=self.log)
        try:
            with _runner_errors():
                self.api = Api(self.cluster)
                self.kubectl = Kubectl(self.cluster.binaries.kubectl, self.cluster.kubeconfig)
                self._check_nodes()
                self._remove_leftovers()
                if "kube-scheduler" in self.cluster.running():
                    self.cluster.stop_kube_scheduler()
                apply_rbac(self.kubectl)
                self._start_latency: dict[str, float] = {}
                """Per side: seconds from starting it to its first decision on a backlog,
                as last measured."""
                self.sides: dict[str, Side] = {
                    UPSTREAM: UpstreamSide(self.cluster),
                    OURS: OurSide(self.kubectl, work_dir / "kopf-scheduler"),
                }
        except RunnerError:
            if self.started_cluster and not keep_cluster:
                self.cluster.down()
            raise

    def say(self, message: str) -> None:
        print(f"differential: {message}", file=self.log, flush=True)

    def close(self) -> None:
        for side in self.sides.values():
            with contextlib.suppress(RunnerError):
                side.stop()
        if self.started_cluster and not self.keep_cluster:
            self.cluster.down()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_nodes(self) -> None:
        foreign = [
            name_of(node)
            for node in self.api.items("/api/v1/nodes")
            if OWNER_LABEL not in (node["metadata"].get("labels") or {})
        ]
        if foreign:
            raise RunnerError(
                f"the control plane in {self.state_dir} has nodes the differential suite did "
                f"not create ({', '.join(sorted(foreign))}); give it one of its own with "
                "--cluster-dir or DIFFERENTIAL_CLUSTER_DIR"
            )

    def _remove_leftovers(self) -> None:
        for namespace in self.api.items("/api/v1/namespaces"):
            name = name_of(namespace)
            if name.startswith("diff-") and not namespace["metadata"].get("deletionTimestamp"):
                self._delete_namespace(name)
        for path in (
            SLICES_PATH,
            CSI_NODES_PATH,
            "/api/v1/nodes",
            ATTACHMENTS_PATH,
            "/api/v1/persistentvolumes",
        ):
            owned = self.api.items(f"{path}?labelSelector={OWNER_LABEL}%3Dtrue")
            for obj in owned:
                self.api.request("DELETE", f"{path}/{name_of(obj)}", missing_ok=True)
            self._wait_gone(path, [name_of(obj) for obj in owned])

    # -- one scenario ---------------------------------------------------------------------

    @contextlib.contextmanager
    def stage(self, scenario: Scenario) -> Iterator[None]:
        """The scenario's nodes, their devices, CSI drivers and cluster-wide classes, for all
        its runs."""
        rendered = render(scenario, "unused", "unused")
        names = [name_of(node) for node in rendered.nodes]
        published = [*rendered.resource_slices, *rendered.csi_nodes]
        try:
            with _runner_errors():
                for obj in rendered.cluster_objects:
                    self._ensure_cluster_object(obj)
                for node in rendered.nodes:
                    self.api.create(node)
                self.cluster.wait_nodes_ready(names, timeout=SETUP_TIMEOUT)
                for obj in published:
                    self.api.create(obj)
            yield
        finally:
            with _runner_errors():
                self._delete_all([*published, *rendered.nodes])

    def _ensure_cluster_object(self, obj: Raw) -> None:
        path = _kind_path(obj)
        existing = self.api.request("GET", f"{path}/{name_of(obj)}", missing_ok=True)
        if existing is None:
            self.api.create(obj)
            return
        fields = ("value", "preemptionPolicy", "provisioner", "volumeBindingMode", "spec")
        different = [f for f in fields if existing.get(f) != obj.get(f)]
        if different:
            raise RunnerError(
                f"{obj['kind']} {name_of(obj)} exists with other {', '.join(different)}; "
                "scenarios must give a name the same meaning"
            )

    def run(self, scenario: Scenario, side_name: str, attempt: int) -> RunRecord:
        """One run of ``scenario`` with one scheduler; see the module's docstring."""
        with _runner_errors():
            return self._run(scenario, side_name, attempt)

    def _run(self, scenario: Scenario, side_name: str, attempt: int) -> RunRecord:
        side = self.sides[side_name]
        namespace = namespace_for(scenario, side_name, attempt)
        rendered = render(scenario, namespace, side.scheduler_name)
        self.say(f"{scenario.name}: {side_name} run {attempt} in {namespace}")
        started = time.monotonic()
        try:
            self._create_namespace(namespace)
            self._setup(rendered)
            watch = PodWatch(self.kubectl, namespace)
            try:
                _wait(
                    "the pod watch to list the running pods",
                    lambda: len(watch.events()) >= len(rendered.running),
                )
                time.sleep(1.0)  # kubectl has listed; let it settle into the watch
                waves = list(rendered.waves)
                if waves and waves[0].backlog:
                    backlog = waves.pop(0)
                    self._create_wave(backlog)
                    decided = self._start_on_phase(side, watch, backlog)
                    self._create_waves(waves, not_before=decided + BACKLOG_HEAD_START)
                else:
                    side.start()
                    self._create_waves(waves)
                settled = self._settle(rendered, side, watch)
                side.stop()
            finally:
                watch.stop()
            record = RunRecord(
                scenario=scenario.name,
                side=side_name,
                scheduler_name=side.scheduler_name,
                namespace=namespace,
                settled=settled,
                seconds=round(time.monotonic() - started, 1),
                pods=self.api.items(f"/api/v1/namespaces/{namespace}/pods"),
                history=[{"type": e.type, "object": dict(e.object)} for e in watch.events()],
                events=self.api.items(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"),
                claims=self.api.items(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"),
                resource_claims=self.api.items(_resource_claims_path(namespace)),
            )
        finally:
            with contextlib.suppress(RunnerError):
                side.stop()
            self._cleanup(rendered)
        state = "settled" if record.settled else "did NOT settle"
        self.say(f"{scenario.name}: {side_name} run {attempt} {state} in {record.seconds}s")
        return record

    def _create_namespace(self, namespace: str) -> None:
        self.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        _wait(
            f"serviceaccount {namespace}/default",
            lambda: self.api.request(
                "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default", missing_ok=True
            ),
        )

    def _setup(self, rendered: Rendered) -> None:
        ns = rendered.namespace
        for obj in [*rendered.volumes, *rendered.attachments]:
            self.api.create(obj)
        for claim in rendered.claims:
            self.api.create(claim)
        if rendered.claims:
            names = {name_of(claim) for claim in rendered.claims}
            _wait(
                f"claims {sorted(names)} bound",
                lambda: all(
                    (c.get("status") or {}).get("phase") == "Bound"
                    for c in self.api.items(f"/api/v1/namespaces/{ns}/persistentvolumeclaims")
                    if name_of(c) in names
                ),
            )
        for obj in [*rendered.claim_templates, *rendered.resource_claims]:
            self.api.create(obj)
        for pod in rendered.running:
            self.api.create(pod)
        pods_path = f"/api/v1/namespaces/{ns}/pods"
        if rendered.running:
            _wait(
                "kwok to start the running pods",
                lambda: all(
                    (p.get("status") or {}).get("podIP") for p in self.api.items(pods_path)
                ),
            )
        for index, pod in enumerate(rendered.running):
            self.api.request(
                "PATCH",
                f"{pods_path}/{name_of(pod)}/status",
                {"status": {"startTime": start_time(index)}},
                content_type=MERGE_PATCH,
            )
        for pdb in rendered.pdbs:
            self.api.create(pdb)
        if rendered.pdbs:
            _wait(
                "the disruption controller to count the PDBs",
                lambda: all(
                    (b.get("status") or {}).get("observedGeneration")
                    == b["metadata"].get("generation")
                    for b in self.api.items(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
                ),
            )

    def _start_on_phase(self, side: Side, watch: PodWatch, backlog: Wave) -> float:
        """Start ``side`` so that its first decision on the backlog falls near
        :data:`WAVE_PHASE` of a second; the monotonic time that decision was seen.

        How long a scheduler takes from being started to its first decision is its own (a Go
        binary, a Python process); it is measured on each run and the next run of the same side
        starts that much ahead of the phase. A backlog nothing decides on (every pod gated, say)
        leaves the waves timed from the scheduler's start.
        """
        latency = self._start_latency.get(side.name)
        if latency is not None:
            time.sleep(seconds_to_phase(time.time() + latency))
        called = time.monotonic()
        side.start()
        names = {name_of(pod) for pod in backlog.pods}

        def first_decision() -> float | None:
            seen = [
                event.received
                for event in watch.events()
                if event.received >= called and event.name in names and _decided(event.pod)
            ]
            return min(seen) if seen else None

        with contextlib.suppress(RunnerError):
            decided: float = _wait(
                "the scheduler's first decision on the backlog",
                first_decision,
                timeout=BACKLOG_DECISION_TIMEOUT,
                interval=0.05,
            )
            self._start_latency[side.name] = decided - called
            return decided
        return time.monotonic()

    def _create_waves(self, waves: list[Wave], not_before: float | None = None) -> None:
        """Each wave at its offset from the next :data:`WAVE_PHASE` of the wall clock after
        the scheduler started (and after the monotonic time ``not_before``, if given)."""
        now = time.monotonic()
        wait = max(0.0, not_before - now) if not_before is not None else 0.0
        origin = now + wait + seconds_to_phase(time.time() + wait)
        offset = 0.0
        for wave in waves:
            offset += wave.after_seconds
            delay = origin + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._create_wave(wave)

    def _create_wave(self, wave: Wave) -> None:
        for claim in wave.claims:
            self.api.create(claim)
        for index, pod in enumerate(wave.pods):
            if index and wave.gap_seconds:
                time.sleep(wave.gap_seconds)
            self.api.create(pod)

    def _settle(self, rendered: Rendered, side: Side, watch: PodWatch) -> bool:
        ns = rendered.namespace
        started = time.monotonic()
        calm_since: float | None = None
        while time.monotonic() - started < SETTLE_TIMEOUT:
            time.sleep(PROBE_INTERVAL)
            events = watch.events()
            last_change = events[-1].received if events else started
            pods = self.api.items(f"/api/v1/namespaces/{ns}/pods")
            claims = self.api.items(f"/api/v1/namespaces/{ns}/persistentvolumeclaims")
            queued = side.queued()
            calm = (
                time.monotonic() - last_change >= QUIET_SECONDS
                and not any(p["metadata"].get("deletionTimestamp") for p in pods)
                and not any(
                    SELECTED_NODE in (c["metadata"].get("annotations") or {})
                    and (c.get("status") or {}).get("phase") != "Bound"
                    for c in claims
                )
                and queued.get("active", 0) == 0
                and queued.get("backoff", 0) == 0
            )
            if not calm:
                calm_since = None
            elif calm_since is None:
                calm_since = time.monotonic()
            elif time.monotonic() - calm_since >= 1.0:
                return True
        return False

    def _cleanup(self, rendered: Rendered) -> None:
        ns = rendered.namespace
        self.api.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods",
            {"gracePeriodSeconds": 0},
            missing_ok=True,
        )
        _wait(
            f"the pods of {ns} to go",
            lambda: not self.api.items(f"/api/v1/namespaces/{ns}/pods"),
        )
        # The next run allocates the same devices: its claims must find them free, so the
        # claims of this one are gone (their allocation with them) before it starts. The
        # resource-claim controller removes the finalizer of a claim that no pod uses.
        self.api.request("DELETE", _resource_claims_path(ns), missing_ok=True)
        _wait(
            f"the resource claims of {ns} to go",
            lambda: not self.api.items(_resource_claims_path(ns)),
        )
        self._delete_namespace(ns)
        self._delete_all([*rendered.attachments, *rendered.volumes])

    def _delete_all(self, objects: list[Raw]) -> None:
        """Delete cluster-wide objects, and wait until each kind of them is gone."""
        by_path: dict[str, list[str]] = {}
        for obj in objects:
            by_path.setdefault(_kind_path(obj), []).append(name_of(obj))
        for path, names in by_path.items():
            for name in names:
                self.api.request("DELETE", f"{path}/{name}", missing_ok=True)
            self._wait_gone(path, names)

    def _delete_namespace(self, namespace: str) -> None:
        self.api.request(
            "DELETE",
            f"/api/v1/namespaces/{namespace}/pods",
            {"gracePeriodSeconds": 0},
            missing_ok=True,
        )
        self.api.request("DELETE", f"/api/v1/namespaces/{namespace}", missing_ok=True)

    def _wait_gone(self, path: str, names: list[str]) -> None:
        if not names:
            return
        wanted = set(names)
        _wait(
            f"{path} {sorted(wanted)} to go",
            lambda: not wanted & {name_of(o) for o in self.api.items(path)},
            timeout=90,
        )
