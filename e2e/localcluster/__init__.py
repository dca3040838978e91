"""A local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kwok).

Used by the end-to-end tests and benchmarks to run the scheduler against real API
semantics without Docker. See README.md in this folder.

    from e2e.localcluster import LocalCluster

    cluster = LocalCluster.up(nodes=3)
    cluster.kubectl("get", "nodes")
    cluster.down()
"""

from .build import Binaries, BuildError, binaries, ensure_built
from .cluster import (
    ClusterError,
    LocalCluster,
    default_state_dir,
    kwok_node,
    node_manifest,
    node_ready,
    running_cluster,
    unverified_tls,
)
from .processes import spawn_logged
from .versions import ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION

__all__ = [
    "ETCD_VERSION",
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "Binaries",
    "BuildError",
    "ClusterError",
    "LocalCluster",
    "binaries",
    "default_state_dir",
    "ensure_built",
    "kwok_node",
    "node_manifest",
    "node_ready",
    "running_cluster",
    "spawn_logged",
    "unverified_tls",
]
