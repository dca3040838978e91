"""Smoke test of the local control plane: ``python -m e2e.localcluster.smoke``.

Checks the behaviours the scheduler's end-to-end tests rely on, against a fresh cluster
in a temporary state directory (or ``--state-dir``), then tears it down and checks that
no process is left:

* pods bound to kwok nodes become Running;
* the disruption controller fills ``pdb.status.disruptionsAllowed``, and the Eviction
  API refuses an eviction that would violate the PDB;
* a bound pod deleted with a 5 s grace period disappears after the grace period, not at
  once;
* Priority admission fills ``spec.priority`` and rejects unknown classes;
* RBAC: the admin may do anything, the static ``kopf-scheduler`` user may not;
* with ``--with-kube-scheduler``, the upstream scheduler binds a pending pod.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cluster import LocalCluster

NAMESPACE = "localcluster-smoke"
PRIORITY_CLASS = "localcluster-smoke-high"

MANIFESTS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NAMESPACE}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {PRIORITY_CLASS}}}
value: 100000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: pdb-x, namespace: {NAMESPACE}}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: x}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: x-0, namespace: {NAMESPACE}, labels: {{app: x}}}}
spec:
  nodeName: kwok-node-0
  containers: [{{name: c, image: registry.invalid/pause:1}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: x-1, namespace: {NAMESPACE}, labels: {{app: x}}}}
spec:
  nodeName: kwok-node-1
  containers: [{{name: c, image: registry.invalid/pause:1}}]
"""


class SmokeError(AssertionError):
    pass


def _eventually(what: str, check: Callable[[], bool], timeout: float = 30) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.1)
    raise SmokeError(f"timed out after {timeout:.0f}s: {what}")


def _pod(cluster: LocalCluster, name: str) -> dict[str, object] | None:
    try:
        pod: dict[str, object] = cluster.api("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    return pod


def _phase(cluster: LocalCluster, name: str) -> str | None:
    pod = _pod(cluster, name)
    status = pod.get("status") if pod else None
    return status.get("phase") if isinstance(status, dict) else None


def run_checks(cluster: LocalCluster, with_kube_scheduler: bool) -> None:
    def ok(message: str) -> None:
        print(f"ok: {message}", flush=True)

    cluster.kubectl("apply", "-f", "-", input=MANIFESTS)

    took = _eventually(
        "pods x-0 and x-1 Running",
        lambda: all(_phase(cluster, name) == "Running" for name in ("x-0", "x-1")),
    )
    ok(f"bound pods Running after {took:.1f}s")

    def disruptions_allowed() -> int | None:
        pdb = cluster.api(
            "GET", f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets/pdb-x"
        )
        return pdb.get("status", {}).get("disruptionsAllowed")

    took = _eventually("pdb disruptionsAllowed == 1", lambda: disruptions_allowed() == 1)
    ok(f"pdb.status.disruptionsAllowed == 1 after {took:.1f}s")

    started = time.monotonic()
    cluster.kubectl("delete", "pod", "-n", NAMESPACE, "x-1", "--grace-period=5", "--wait=false")
    if _pod(cluster, "x-1") is None:
        raise SmokeError("x-1 vanished at once despite a 5 s grace period")
    _eventually("x-1 deleted", lambda: _pod(cluster, "x-1") is None, timeout=20)
    gone_after = time.monotonic() - started
    # deletionTimestamp has second precision, so a 5 s grace period ends after 4-5 s.
    if not 3.5 <= gone_after <= 8:
        raise SmokeError(f"x-1 with grace 5s disappeared after {gone_after:.1f}s")
    ok(f"pod deleted with gracePeriodSeconds=5 disappeared after {gone_after:.1f}s")

    took = _eventually("pdb disruptionsAllowed == 0", lambda: disruptions_allowed() == 0)
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "x-0", "namespace": NAMESPACE},
    }
    try:
        cluster.api("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/x-0/eviction", eviction)
    except urllib.error.HTTPError as error:
        if error.code != 429:
            raise
    else:
        raise SmokeError("eviction of x-0 was allowed although it violates pdb-x")
    ok("eviction violating the PDB refused with 429")

    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "prio", "namespace": NAMESPACE},
        "spec": {
            "priorityClassName": PRIORITY_CLASS,
            "schedulerName": "default-scheduler" if with_kube_scheduler else "nobody",
            "containers": [{"name": "c", "image": "registry.invalid/pause:1"}],
        },
    }
    created = cluster.api("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
    if created["spec"].get("priority") != 100000:
        raise SmokeError(f"spec.priority not filled: {created['spec'].get('priority')}")
    ok("Priority admission filled spec.priority=100000")
    bad = copy.deepcopy(pod)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["priorityClassName"] = "does-not-exist"
    try:
        cluster.api("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", bad)
    except urllib.error.HTTPError as error:
        if error.code != 403:
            raise
    else:
        raise SmokeError("a pod with an unknown priority class was admitted")
    ok("unknown priorityClassName rejected (403)")

    admin = cluster.kubectl("auth", "can-i", "*", "*", "--all-namespaces", check=False)
    user = cluster.kubectl(
        "auth", "can-i", "list", "pods", "-n", NAMESPACE, "--as=kopf-scheduler", check=False
    )
    if admin.stdout.strip() != "yes" or user.stdout.strip() != "no":
        raise SmokeError(f"auth can-i: admin={admin.stdout!r} kopf-scheduler={user.stdout!r}")
    ok("RBAC: admin can do everything, kopf-scheduler cannot list pods")

    if with_kube_scheduler:

        def bound() -> bool:
            found = _pod(cluster, "prio")
            spec = found.get("spec") if found else None
            return isinstance(spec, dict) and bool(spec.get("nodeName"))

        took = _eventually("kube-scheduler binds pod prio", bound)
        ok(f"kube-scheduler bound a pending pod after {took:.1f}s")

    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
    cluster.kubectl("delete", "priorityclass", PRIORITY_CLASS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.localcluster.smoke", description=__doc__)
    parser.add_argument("--state-dir", type=Path, help="default: a fresh temporary directory")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--with-kube-scheduler", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args(argv)

    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="localcluster-smoke-"))
    started = time.monotonic()
    cluster = LocalCluster.up(
        args.nodes, state_dir=state_dir, with_kube_scheduler=args.with_kube_scheduler
    )
    print(f"ok: cluster up in {time.monotonic() - started:.1f}s ({cluster.kubeconfig})")
    pids = [proc.pid for proc in cluster.processes().values()]
    try:
        run_checks(cluster, args.with_kube_scheduler)
    except (SmokeError, urllib.error.HTTPError) as error:
        print(f"FAILED: {error}", file=sys.stderr)
        print(json.dumps(cluster.status(), indent=2), file=sys.stderr)
        if not args.keep:
            cluster.down(keep_logs=True)
        return 1
    if args.keep:
        print(f"cluster left running: export KUBECONFIG={cluster.kubeconfig}")
        return 0
    cluster.down()
    left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    if left:
        print(f"FAILED: processes left after down: {left}", file=sys.stderr)
        return 1
    print(f"ok: down, no process left (pids {pids})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
