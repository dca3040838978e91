"""``kubectl kopf-scheduler``: the installed plugin, run through a real kubectl as an admin runs it.

kubectl finds ``kubectl-kopf_scheduler`` on the PATH; the API server is a kmock one, so that what
the plugin asks for (which namespace, which context's server) is checked, not only what it shows.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

from kopf_scheduler.kubectl.pending import top_reason
from kopf_scheduler.service.explanations import ANNOTATION
from kopf_scheduler.version import VERSION
from tests.cli.support import Outcome, environment

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
BIN = Path(sys.executable).parent
UNSCHEDULABLE = (
    "0/5 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, "
    "4 Insufficient cpu. preemption: 0/5 nodes are available: 5 No preemption victims found for "
    "incoming pod."
)


def kubeconfig(path: Path, server: str) -> Path:
    """Two contexts on the same server: ``team`` (current, namespace team) and ``other``."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "team", "context": {"cluster": "c", "user": "u", "namespace": "team"}},
                    {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "ops"}},
                ],
                "current-context": "team",
            }
        )
    )
    return path


async def kubectl(home: Path, *args: str) -> Outcome:
    assert KUBECTL is not None
    env = environment(home, {"PATH": f"{BIN}:/usr/bin:/bin"})
    process = await asyncio.create_subprocess_exec(
        KUBECTL, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return Outcome(process.returncode, stdout.decode(), stderr.decode())


def pod(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    # Two days, five and a half hours ago: shown as 2d5h however long the test takes.
    created = (datetime.now(UTC) - timedelta(days=2, hours=5, minutes=30)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": {"schedulerName": "kopf-scheduler", **spec},
        "status": {"phase": "Pending"},
    }


def failed(raw: dict[str, Any], message: str) -> dict[str, Any]:
    raw["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    ]
    return raw


@pytest.fixture
def config(tmp_path: Path, kmock: kmock.RawHandler) -> Path:
    return kubeconfig(tmp_path / "kubeconfig", str(kmock.url).rstrip("/"))


async def test_kubectl_runs_the_installed_plugin(tmp_path: Path) -> None:
    outcome = await kubectl(tmp_path, "kopf-scheduler", "version")
    assert (outcome.code, outcome.stdout) == (0, f"kopf-scheduler {VERSION}\n")


async def test_pending_lists_this_schedulers_pods_of_the_contexts_namespace(
    tmp_path: Path, kmock: kmock.RawHandler, config: Path
) -> None:
    pods = [
        failed(pod("web", "team"), UNSCHEDULABLE),
        pod("fresh", "team"),
        pod("theirs", "team", schedulerName="default-scheduler"),
    ]
    kmock["get /api/v1/namespaces/team/pods"] << {"kind": "PodList", "metadata": {}, "items": pods}
    outcome = await kubectl(tmp_path, "kopf-scheduler", "pending", "--kubeconfig", str(config))
    assert outcome.code == 0, outcome.stderr
    header, *rows = outcome.stdout.splitlines()
    assert header.split() == ["NAME", "WAITING", "REASON", "TOP", "REASON"]
    assert [row.split()[:3] for row in rows] == [
        ["fresh", "2d5h", "-"],
        ["web", "2d5h", "Unschedulable"],
    ]
    assert rows[0].endswith("not tried yet")
    assert rows[1].endswith("4 Insufficient cpu")
    [request] = list(kmock["get /api/v1/namespaces/team/pods"])
    assert request.params["fieldSelector"] == "spec.nodeName="


async def test_pending_takes_namespace_and_context_flags(
    tmp_path: Path, kmock: kmock.RawHandler, config: Path
) -> None:
    empty = {"kind": "PodList", "metadata": {}, "items": []}
    kmock["get /api/v1/namespaces/ops/pods"] << empty
    kmock["get /api/v1/namespaces/apps/pods"] << empty
    kmock["get /api/v1/pods"] << {"kind": "PodList", "metadata": {}, "items": [pod("a", "x")]}
    base = ("kopf-scheduler", "pending", "--kubeconfig", str(config))
    by_context = await kubectl(tmp_path, *base, "--context", "other")
    assert by_context.stderr == "No pending pods in namespace ops.\n"
    by_flag = await kubectl(tmp_path, *base, "-n", "apps", "-o", "json")
    assert json.loads(by_flag.stdout) == {"items": []}
    everywhere = await kubectl(tmp_path, *base, "-A", "-o", "yaml")
    [item] = yaml.safe_load(everywhere.stdout)["items"]
    assert (item["namespace"], item["name"], item["topReason"]) == ("x", "a", "not tried yet")
    for path in ("/api/v1/namespaces/ops/pods", "/api/v1/namespaces/apps/pods", "/api/v1/pods"):
        assert len(kmock[f"get {path}"]) == 1


async def test_explain_finds_a_pod_by_name_in_the_contexts_namespace(
    tmp_path: Path, kmock: kmock.RawHandler, config: Path
) -> None:
    record = {"pod": "team/web", "attempt": 1, "result": "unschedulable", "node": None, "nodes": []}
    raw = pod("web", "team")
    raw["metadata"]["annotations"] = {ANNOTATION: json.dumps(record)}
    kmock["get /api/v1/namespaces/team/pods/web"] << raw
    kmock["get /api/v1/namespaces/ops/pods/web"] << raw
    base = ("kopf-scheduler", "explain", "web", "--kubeconfig", str(config), "-o", "yaml")
    outcome = await kubectl(tmp_path, *base)
    assert outcome.code == 0, outcome.stderr
    assert yaml.safe_load(outcome.stdout) == record
    assert (await kubectl(tmp_path, *base, "--context", "other")).code == 0
    assert (await kubectl(tmp_path, *base, "-n", "ops")).code == 0
    assert len(kmock["get /api/v1/namespaces/team/pods/web"]) == 1
    assert len(kmock["get /api/v1/namespaces/ops/pods/web"]) == 2


async def test_an_unknown_context_is_one_line_and_exit_2(tmp_path: Path, config: Path) -> None:
    outcome = await kubectl(
        tmp_path, "kopf-scheduler", "pending", "--kubeconfig", str(config), "--context", "nope"
    )
    assert outcome.code == 2
    assert outcome.stderr == (
        f"error: kubeconfig {config}: context 'nope' is not among the contexts "
        "(defined: other, team)\n"
    )


@pytest.mark.parametrize(
    ("message", "top"),
    [
        (UNSCHEDULABLE, "4 Insufficient cpu"),
        (
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
            "3 node(s) didn't match Pod's node affinity/selector",
        ),
        ("waiting for the pod group's other members", "waiting for the pod group's other members"),
    ],
)
def test_the_top_reason_is_the_one_that_turned_away_the_most_nodes(message: str, top: str) -> None:
    assert top_reason(message) == top
