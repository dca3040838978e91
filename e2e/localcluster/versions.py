"""Pinned component versions and cache locations for the local control plane.

Everything is pinned here so that the build cache key, the README and the running
cluster agree on one set of versions. The Kubernetes patch is the newest v1.34 patch
served by the Go module proxy at the time of pinning; staging modules are published as
``v0.<minor>.<patch>`` for ``k8s.io/kubernetes v1.<minor>.<patch>``.
"""

from __future__ import annotations

import os
from pathlib import Path

KUBERNETES_VERSION = "1.34.10"
ETCD_VERSION = "3.6.16"
KWOK_VERSION = "0.7.0"

# The 31 staging modules that k8s.io/kubernetes replaces with ./staging/src/k8s.io/<name>.
# The wrapper module maps each of them to the published v0.<minor>.<patch> instead.
STAGING_MODULES: tuple[str, ...] = (
    "api",
    "apiextensions-apiserver",
    "apimachinery",
    "apiserver",
    "cli-runtime",
    "client-go",
    "cloud-provider",
    "cluster-bootstrap",
    "code-generator",
    "component-base",
    "component-helpers",
    "controller-manager",
    "cri-api",
    "cri-client",
    "csi-translation-lib",
    "dynamic-resource-allocation",
    "endpointslice",
    "externaljwt",
    "kms",
    "kube-aggregator",
    "kube-controller-manager",
    "kube-proxy",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "metrics",
    "mount-utils",
    "pod-security-admission",
    "sample-apiserver",
    "sample-cli-plugin",
    "sample-controller",
)

KUBE_BINARIES: tuple[str, ...] = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
)


def cache_root() -> Path:
    """Root of everything cached outside the repository (binaries, Go caches, cluster state)."""
    override = os.environ.get("KOPF_SCHEDULER_CACHE")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "kopf-scheduler"


def k8s_bin_dir() -> Path:
    return cache_root() / "bin" / f"k8s-v{KUBERNETES_VERSION}"


def etcd_bin_dir() -> Path:
    return cache_root() / "bin" / f"etcd-v{ETCD_VERSION}"


def kwok_bin_dir() -> Path:
    return cache_root() / "bin" / f"kwok-v{KWOK_VERSION}"


def k8s_staging_version() -> str:
    _, minor, patch = KUBERNETES_VERSION.split(".")
    return f"0.{minor}.{patch}"
