"""Pinned component versions and cache locations for the local control plane.

Everything is pinned here so that the build cache key, the README and the running
cluster agree on one set of versions.

* Kubernetes v1.34.10 is the newest v1.34 patch that the Go module proxy serves *and* the
  checksum database verifies: v1.34.11 and v1.34.12 are on the proxy, but their
  sum.golang.org lookups answer 404, so ``go get`` refuses them. Staging modules are
  published as ``v0.<minor>.<patch>`` for ``k8s.io/kubernetes v1.<minor>.<patch>``.
* etcd v3.6.16 is the newest v3.6 patch on the proxy (k8s v1.34 is built against the
  etcd v3.6 client).
* kwok v0.7.0 installs with plain ``go install``; it always gets the explicit stages
  file next to this module, so the move to v0.8.0 (no built-in stages) is only a pin.
* helm v3.22.0 (for the chart's lint, template and server dry-run tests) is the newest v3
  release on the proxy; it has no ``replace`` directives, needs Go 1.26 and installs with
  plain ``go install``.

``KOPF_SCHEDULER_CACHE`` moves the whole cache (default ``~/.cache/kopf-scheduler``).
"""

from __future__ import annotations

import os
from pathlib import Path

KUBERNETES_VERSION = "1.34.10"
ETCD_VERSION = "3.6.16"
KWOK_VERSION = "0.7.0"
HELM_VERSION = "3.22.0"
# Prometheus 3.16.0: its Go module numbers release 3.x.y as v0.3xx.y. promtool checks and
# unit-tests the chart's alert rules and dashboard queries (`make promtool-test`); the server
# scrapes a running scheduler in `make e2e-prometheus`.
PROMETHEUS_MODULE_VERSION = "0.316.0"

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


def helm_bin_dir() -> Path:
    return cache_root() / "bin" / f"helm-v{HELM_VERSION}"


def prometheus_bin_dir() -> Path:
    return cache_root() / "bin" / f"prometheus-v{PROMETHEUS_MODULE_VERSION}"


def k8s_staging_version() -> str:
    _, minor, patch = KUBERNETES_VERSION.split(".")
    return f"0.{minor}.{patch}"
