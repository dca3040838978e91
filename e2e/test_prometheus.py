"""A real Prometheus scrapes the running scheduler, and every dashboard panel shows data.

The scheduler serves ``/metrics`` only to callers the API server authenticates (TokenReview) and
authorizes (SubjectAccessReview). Here Prometheus scrapes it as a cluster's Prometheus would:

- with the token of a ServiceAccount of its own, minted with ``kubectl create token``, bound to
  the metrics-reader ClusterRole that ``manifests/`` ships (the object applied from there, not a
  copy of it), and given to Prometheus as ``authorization.credentials_file``;
- over HTTPS, verifying the scheduler's serving certificate against the CA that issued it (the
  scheduler runs with ``--tls-cert-file``, as with the chart's ``tls.secretName``);
- every second, so that rates and quantiles over the dashboard's 5 minute windows have samples
  within seconds.

Then pods are scheduled, one stays unschedulable, one preempts a lower-priority pod and a second
wave follows once Prometheus has scraped the first (rates need an increase between samples), and
every query of every panel of the shipped Grafana dashboard, with its template variables set to
this job and instance, must return a number. Three more scrape jobs show the guard at work, as
kube-scheduler's answers: without a token the caller is ``system:anonymous`` (403), a token the
API server does not know is 401, and the token of a ServiceAccount not bound to the role is 403;
all three targets are down.

The scheduler is ``kopf-scheduler run`` as a local process beside the local control plane, with
the suite's usual configuration. The test runs only when selected with ``-m prometheus``
(``make e2e-prometheus``); Prometheus is built from its Go module into the cache when missing.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.localcluster import spawn_logged
from e2e.localcluster.build import ensure_prometheus
from e2e.localcluster.listen_ports import free_port
from e2e.support.clusters import Cluster, apply_rbac, service_account_kubeconfig
from e2e.support.env import TestEnv
from e2e.support.faultproxy import make_certificate
from e2e.support.kubectl import Kubectl, nominated_node
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers, SchedulerProcess

pytestmark = pytest.mark.prometheus

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "charts" / "kopf-scheduler" / "files" / "dashboard.json"
SERVICE_ACCOUNT = "kopf-scheduler"
JOB = "kopf-scheduler"
SCRAPE_INTERVAL = "1s"
READY_TIMEOUT = 60.0
DATA_TIMEOUT = 60.0
SECOND_WAVE = 30
"""Pods in the second wave: enough cycles to include several sampled for plugin durations."""


@pytest.fixture(scope="module", autouse=True)
def only_when_selected(request: pytest.FixtureRequest) -> None:
    """Skip before anything starts unless ``-m prometheus`` selected this module."""
    if "prometheus" not in (request.config.option.markexpr or ""):
        pytest.skip("runs only when selected with -m prometheus (make e2e-prometheus)")


# -- the scheduler and Prometheus --------------------------------------------------------------


@dataclass
class Scraped:
    """The scheduler under test and the Prometheus that scrapes it."""

    scheduler: SchedulerProcess
    api: str  # Prometheus's base URL

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.scheduler.port}"

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = f"{self.api}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def targets(self) -> dict[str, dict[str, Any]]:
        """The active targets by job name."""
        with urllib.request.urlopen(f"{self.api}/api/v1/targets", timeout=10) as response:
            body = json.loads(response.read())
        return {t["labels"]["job"]: t for t in body["data"]["activeTargets"]}


def prometheus_ready(api: str, popen: subprocess.Popen[bytes]) -> bool:
    """Whether Prometheus answers ``/-/ready``; it must not have exited."""
    assert popen.poll() is None, f"prometheus exited with {popen.returncode}"
    try:
        with urllib.request.urlopen(f"{api}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:  # not listening yet, or 503 while it starts
        return False


def metrics_reader_role(rbac: list[dict[str, Any]]) -> str:
    """The name of the shipped ClusterRole that grants ``get`` on ``/metrics``."""
    [name] = [
        o["metadata"]["name"]
        for o in rbac
        if o["kind"] == "ClusterRole"
        and any("/metrics" in rule.get("nonResourceURLs", []) for rule in o.get("rules", []))
    ]
    return str(name)


def scrape_token(kube: Kubectl, namespace: str, name: str, role: str | None) -> str:
    """A token of a new ServiceAccount ``name``, bound to ClusterRole ``role`` when given."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        }
    )
    if role is not None:
        kube.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}-{name}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        )
    return kube.run("create", "token", name, "-n", namespace, "--duration=1h").stdout.strip()


def prometheus_config(target: str, ca: Path, tokens: Path) -> str:
    """Scrape ``target`` as four jobs, each with the token file of its name in ``tokens``."""
    tls = {"ca_file": str(ca)}
    static = [{"targets": [target]}]
    jobs: list[dict[str, Any]] = [
        {"job_name": JOB, "authorization": {"credentials_file": str(tokens / JOB)}},
        {"job_name": "without-token"},
        {
            "job_name": "unknown-token",
            "authorization": {"credentials_file": str(tokens / "unknown-token")},
        },
        {
            "job_name": "without-role",
            "authorization": {"credentials_file": str(tokens / "without-role")},
        },
    ]
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [
            job | {"scheme": "https", "tls_config": tls, "static_configs": static} for job in jobs
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


@pytest.fixture
def scraped(
    cluster: Cluster,
    kube: Kubectl,
    env: TestEnv,
    tmp_path: Path,
) -> Iterator[Scraped]:
    if cluster.is_kind:
        pytest.skip("the scheduler runs as a local process, next to the local control plane")
    prometheus = ensure_prometheus()
    role = metrics_reader_role(apply_rbac(kube))
    certificate = make_certificate(tmp_path / "pki")
    ca, cert, key = certificate.ca, certificate.cert, certificate.key
    kubeconfig = service_account_kubeconfig(
        kube, tmp_path / "scheduler.kubeconfig", SERVICE_ACCOUNT
    )
    pool = LocalSchedulers(
        kube,
        kubeconfig,
        tmp_path,
        extra_args=[f"--tls-cert-file={cert}", f"--tls-private-key-file={key}"],
    )
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    (tokens / JOB).write_text(scrape_token(kube, env.namespace, "prometheus", role))
    (tokens / "without-role").write_text(scrape_token(kube, env.namespace, "stranger", None))
    (tokens / "unknown-token").write_text("not-a-token-the-api-server-issued")
    popen: subprocess.Popen[bytes] | None = None
    try:
        scheduler = pool.start(identity="e2e-prometheus-target")
        pool.wait_leader()
        config = tmp_path / "prometheus.yml"
        config.write_text(prometheus_config(f"127.0.0.1:{scheduler.port}", ca, tokens))
        port = free_port()
        popen = spawn_logged(
            [
                str(prometheus),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            tmp_path / "prometheus.log",
        )
        scraped = Scraped(scheduler, f"http://127.0.0.1:{port}")
        wait_until(
            lambda: prometheus_ready(scraped.api, popen),
            timeout=READY_TIMEOUT,
            what="Prometheus ready",
        )
        yield scraped
    finally:
        if popen is not None:
            popen.terminate()
            popen.wait(30)
        pool.close()
        kube.delete("clusterrolebinding", f"{env.namespace}-prometheus")


# -- the dashboard -----------------------------------------------------------------------------


def dashboard_queries(job: str, instance: str) -> list[tuple[str, str]]:
    """(panel title, query) of every panel, the variables set as Grafana sets one value."""
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {"$job": job, "$instance": instance}
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in variables.items():
                expr = expr.replace(variable, value)
            queries.append((panel["title"], expr))
    return queries


def has_a_number(result: list[dict[str, Any]]) -> bool:
    return any(sample["value"][1] != "NaN" for sample in result)


# -- the scenario ------------------------------------------------------------------------------


def test_prometheus_scrapes_through_the_guard_and_every_panel_has_data(
    scraped: Scraped, env: TestEnv
) -> None:
    def scraping() -> dict[str, dict[str, Any]] | None:
        targets = scraped.targets()
        return targets if targets.get(JOB, {}).get("health") == "up" else None

    wait_until(scraping, timeout=READY_TIMEOUT, what=f"job {JOB} scraped", describe=scraped.targets)

    # Drive every path the panels show: pods scheduled, one that fits nowhere, one preemption.
    [node] = env.create_nodes(1, cpu="4")
    env.create(*(env.pod(f"low-{index}", cpu="1500m", grace=1) for index in range(2)))
    for index in range(2):
        assert env.wait_bound(f"low-{index}") == node
    env.create(env.pod("too-big", cpu="64"))
    env.wait_unschedulable("too-big", contains="Insufficient cpu")
    env.create(env.pod("high", cpu="2", priority_class="e2e-p100"))
    env.watch.wait_first(
        lambda e: nominated_node(e.pod) == node, name="high", timeout=30, what="high nominated"
    )
    assert env.wait_bound("high", timeout=60) == node

    # A rate counts increases between samples: a series whose only change came before its first
    # scrape has a rate of 0, and quantiles over it are NaN. A second wave, once Prometheus has
    # scraped the first, moves every series again, and its cycles include some of the sampled
    # ones that record per-plugin durations.
    wait_until(
        lambda: scraped.query(
            f'scheduler_schedule_attempts_total{{job="{JOB}", result="scheduled"}}'
        ),
        timeout=READY_TIMEOUT,
        what="the first wave's attempts scraped",
    )
    env.create_nodes(1, cpu="4")
    wave = [f"wave-{index}" for index in range(SECOND_WAVE)]
    env.create(*(env.pod(name, cpu="100m") for name in wave))
    wait_until(
        lambda: all(env.watch.bound(name) for name in wave),
        timeout=READY_TIMEOUT,
        what=f"the {SECOND_WAVE} pods of the second wave bound",
        describe=lambda: [name for name in wave if not env.watch.bound(name)],
    )

    queries = dashboard_queries(JOB, scraped.instance)
    assert len(queries) >= 20, queries

    def without_data() -> list[tuple[str, str]]:
        return [(title, expr) for title, expr in queries if not has_a_number(scraped.query(expr))]

    # Rates need two samples after a change and the gauges are sampled periodically.
    wait_until(
        lambda: not without_data(),
        timeout=DATA_TIMEOUT,
        what="every dashboard query to return a number",
        interval=1.0,
        describe=without_data,
    )

    # The guard: anonymous and unbound callers are 403, an unknown token 401; no target is up.
    targets = scraped.targets()
    for job, code in (("without-token", "403"), ("unknown-token", "401"), ("without-role", "403")):
        assert targets[job]["health"] == "down", targets[job]
        assert code in targets[job]["lastError"], targets[job]
        [up] = scraped.query(f'up{{job="{job}"}}')
        assert up["value"][1] == "0", up
