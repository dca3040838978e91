"""The cluster the suite runs against, and the identity the scheduler under test uses.

``E2E_CLUSTER=kind``: ``$KUBECONFIG`` (or kubectl's default) with the Deployment from
manifests/ already running in it. Otherwise the local control plane of ``e2e/localcluster``:
the one running in ``$LOCALCLUSTER_DIR`` (or the default state directory) when it is healthy,
else a new one that the session also takes down again.

For the local processes the suite applies only the RBAC objects from ``manifests/`` (Namespace,
ServiceAccount, ClusterRole, ClusterRoleBinding, Role, RoleBinding), mints a token for the
ServiceAccount with ``kubectl create token`` and writes a kubeconfig with it: every request the
scheduler makes is then checked against exactly the permissions the manifests grant.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.localcluster.kubeconfig import write_token_kubeconfig

from . import SYSTEM_NAMESPACE
from .kubectl import Kubectl

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = REPO_ROOT / "manifests"
RBAC_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
)
TOKEN_DURATION = "2h"


@dataclass
class Cluster:
    mode: str  # "local" or "kind"
    kubectl: Kubectl  # as the admin
    local: Any = None  # e2e.localcluster.LocalCluster in local mode
    started_here: bool = False

    @property
    def is_kind(self) -> bool:
        return self.mode == "kind"

    def serves_default_scheduler(self) -> bool:
        """Whether something binds pods with ``schedulerName: default-scheduler``."""
        if self.local is not None:
            return "kube-scheduler" in self.local.running()
        return True


def cluster_mode() -> str:
    mode = os.environ.get("E2E_CLUSTER", "local").strip().lower() or "local"
    if mode not in ("local", "kind"):
        raise RuntimeError(f"E2E_CLUSTER must be 'local' or 'kind', not {mode!r}")
    return mode


@contextlib.contextmanager
def open_cluster() -> Iterator[Cluster]:
    if cluster_mode() == "kind":
        kubectl = Kubectl(os.environ.get("KUBECTL", "kubectl"), os.environ.get("KUBECONFIG"))
        yield Cluster("kind", kubectl)
        return

    from e2e.localcluster import LocalCluster

    existing = LocalCluster()
    if existing.is_running() and existing.is_healthy():
        cluster, started = existing, False
    else:
        cluster, started = LocalCluster.up(nodes=3), True
    try:
        yield Cluster(
            "local",
            Kubectl(cluster.binaries.kubectl, cluster.kubeconfig),
            local=cluster,
            started_here=started,
        )
    finally:
        if started and os.environ.get("E2E_KEEP_CLUSTER") != "1":
            cluster.down()


def rbac_objects(kubectl: Kubectl, path: Path = MANIFESTS) -> list[dict[str, Any]]:
    """The RBAC objects (and their Namespace) that ``kubectl kustomize`` renders from ``path``."""
    rendered = kubectl.run("kustomize", str(path)).stdout
    return [doc for doc in yaml.safe_load_all(rendered) if doc and doc.get("kind") in RBAC_KINDS]


def apply_rbac(kubectl: Kubectl) -> list[dict[str, Any]]:
    objects = rbac_objects(kubectl)
    namespaces = [o for o in objects if o["kind"] == "Namespace"]
    rest = [o for o in objects if o["kind"] != "Namespace"]
    if namespaces:
        kubectl.apply(*namespaces)
    kubectl.apply(*rest)
    return objects


def service_account_kubeconfig(
    kubectl: Kubectl, path: Path, service_account: str, namespace: str = SYSTEM_NAMESPACE
) -> Path:
    """A kubeconfig for ``service_account`` with a freshly minted token, same server and CA."""
    token = kubectl.run(
        "create", "token", service_account, "-n", namespace, f"--duration={TOKEN_DURATION}"
    ).stdout.strip()
    view = json.loads(kubectl.run("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = dict(view["clusters"][0]["cluster"])
    ca_file = cluster.pop("certificate-authority", None)
    if ca_file and "certificate-authority-data" not in cluster:
        cluster["certificate-authority-data"] = base64.b64encode(
            Path(ca_file).read_bytes()
        ).decode()
    return write_token_kubeconfig(path, cluster, service_account, token, name="e2e")
