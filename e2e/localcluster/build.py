"""Build the control-plane binaries from the Go module proxy, cached outside the repository.

No Kubernetes, etcd or kwok binaries are packaged for PyPI, npm or Debian at usable
versions, so they are compiled from their Go modules:

* kube-apiserver, kube-controller-manager, kube-scheduler and kubectl come from
  ``k8s.io/kubernetes``. That module ``require``s its staging modules at ``v0.0.0`` and
  ``replace``s them with local paths, so ``go install pkg@version`` refuses it. A generated
  wrapper module (in the cache, never in the repository) replaces each staging module with
  its published ``v0.<minor>.<patch>`` instead.
* etcd's ``server`` module also carries ``replace`` directives, so a tiny wrapper ``main``
  calls ``etcdmain.Main`` from the published module.
* kwok has no ``replace`` directives and installs with plain ``go install``.
* helm (not part of the cluster: the chart tests use it) installs the same way, with the
  version ldflags of helm's own Makefile. ``ensure_helm`` builds it on its own.
* promtool (not part of the cluster either: ``make promtool-test`` checks the chart's alert rules
  and dashboard queries with it) installs with plain ``go install`` from Prometheus's module.
  ``prometheus`` itself, from the same module, scrapes the scheduler in ``make e2e-prometheus``;
  without the ``builtinassets`` build tag it has no web UI, which the HTTP API does not need.
* the kubelet (only for the optional real node, see ``realnode.py``) comes from the same
  wrapper module and flags as the other Kubernetes commands, so it matches them exactly;
  ``ensure_kubelet`` builds it on its own, because most runs never need it.

Binaries land in ``<cache>/bin/<component>-v<version>/``; GOMODCACHE and GOCACHE live in
``<cache>/go/`` and are shared by all versions (both are content-addressed). Each binary is
built only when it is missing; a file lock serialises concurrent builds.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from . import versions as v


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of every binary the local cluster runs."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path

    def all(self) -> tuple[Path, ...]:
        return (
            self.etcd,
            self.kube_apiserver,
            self.kube_controller_manager,
            self.kube_scheduler,
            self.kubectl,
            self.kwok,
        )

    def missing(self) -> list[Path]:
        return [path for path in self.all() if not os.access(path, os.X_OK)]


def binaries() -> Binaries:
    k8s = v.k8s_bin_dir()
    return Binaries(
        etcd=v.etcd_bin_dir() / "etcd",
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kubectl=k8s / "kubectl",
        kwok=v.kwok_bin_dir() / "kwok",
    )


def go_env() -> dict[str, str]:
    """Environment for every ``go`` call: isolated caches, static binaries, no workspace."""
    root = v.cache_root()
    env = dict(os.environ)
    env.update(
        GOPATH=str(root / "go"),
        GOMODCACHE=str(root / "go" / "mod"),
        GOCACHE=str(root / "go" / "build"),
        # -modcacherw keeps the module cache deletable with a plain `rm -rf`.
        GOFLAGS="-modcacherw",
        GOWORK="off",
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
    )
    env.pop("GOBIN", None)
    return env


class BuildError(RuntimeError):
    pass


class _Builder:
    def __init__(self, log: TextIO) -> None:
        self.log = log
        self.env = go_env()
        jobs = os.environ.get("LOCALCLUSTER_BUILD_JOBS")
        self.jobs = ["-p", jobs] if jobs else []

    def say(self, message: str) -> None:
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        print(f"[{stamp}] {message}", file=self.log, flush=True)

    def go(self, args: Sequence[str], cwd: Path, extra_env: dict[str, str] | None = None) -> str:
        env = dict(self.env, **(extra_env or {}))
        self.say(f"$ (cd {cwd} && go {' '.join(args)})")
        proc = subprocess.run(
            ["go", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if proc.stdout:
            self.log.write(proc.stdout)
            self.log.flush()
        if proc.returncode != 0:
            raise BuildError(f"go {' '.join(args)} failed with exit code {proc.returncode}")
        return proc.stdout

    def timed(self, what: str) -> _Timer:
        return _Timer(self, what)

    # -- etcd ----------------------------------------------------------------------------

    def etcd(self, target: Path) -> None:
        src = v.cache_root() / "src" / f"etcd-v{v.ETCD_VERSION}"
        src.mkdir(parents=True, exist_ok=True)
        (src / "go.mod").write_text("module local.test/etcdbin\n\ngo 1.25.0\n")
        (src / "main.go").write_text(
            "// Command etcd runs the published etcd server module.\n"
            "package main\n\n"
            'import (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
            "func main() { etcdmain.Main(os.Args) }\n"
        )
        with self.timed(f"etcd v{v.ETCD_VERSION}"):
            self.go(["get", f"go.etcd.io/etcd/server/v3@v{v.ETCD_VERSION}"], src)
            self.go(["mod", "tidy"], src)
            tmp = target.parent / f".{target.name}.tmp"
            self.go(["build", *self.jobs, "-trimpath", "-ldflags=-s -w", "-o", str(tmp), "."], src)
            tmp.replace(target)

    # -- kwok ----------------------------------------------------------------------------

    def kwok(self, target: Path) -> None:
        with self.timed(f"kwok v{v.KWOK_VERSION}"):
            self._install(f"sigs.k8s.io/kwok/cmd/kwok@v{v.KWOK_VERSION}", target, ["-s", "-w"])

    # -- helm ----------------------------------------------------------------------------

    def helm(self, target: Path) -> None:
        version = f"v{v.HELM_VERSION}"
        module = f"helm.sh/helm/v3@{version}"
        package = "helm.sh/helm/v3/internal/version"
        ldflags = [
            "-s",
            "-w",
            f"-X {package}.version={version}",
            f"-X {package}.gitTreeState=clean",
        ]
        with self.timed(f"helm {version}"):
            # As helm's Makefile: the Kubernetes version that `helm template` and `helm lint`
            # assume (default v1.20) follows the client-go module helm is built with.
            major, minor = self._helm_kube_version(module, target.parent)
            for assumer in ("helm.sh/helm/v3/pkg/chartutil", "helm.sh/helm/v3/pkg/lint/rules"):
                ldflags += [f"-X {assumer}.k8sVersionMajor={major}"]
                ldflags += [f"-X {assumer}.k8sVersionMinor={minor}"]
            self._install(f"helm.sh/helm/v3/cmd/helm@{version}", target, ldflags)

    def promtool(self, target: Path) -> None:
        version = f"v{v.PROMETHEUS_MODULE_VERSION}"
        with self.timed(f"promtool {version}"):
            package = f"github.com/prometheus/prometheus/cmd/promtool@{version}"
            self._install(package, target, ["-s", "-w"])

    def prometheus(self, target: Path) -> None:
        version = f"v{v.PROMETHEUS_MODULE_VERSION}"
        with self.timed(f"prometheus {version}"):
            package = f"github.com/prometheus/prometheus/cmd/prometheus@{version}"
            self._install(package, target, ["-s", "-w"])

    def _helm_kube_version(self, module: str, cwd: Path) -> tuple[str, str]:
        """(major, minor) of Kubernetes for the k8s.io/client-go v0.<minor> that helm requires."""
        info = json.loads(self.go(["mod", "download", "-json", module], cwd))
        for line in Path(info["GoMod"]).read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "k8s.io/client-go":
                _, minor, _ = words[1].removeprefix("v").split(".", 2)
                return "1", minor
        raise BuildError(f"{module} requires no k8s.io/client-go")

    def _install(self, package_at_version: str, target: Path, ldflags: list[str]) -> None:
        """``go install`` one command into a scratch GOBIN, then move it to ``target``."""
        gobin = target.parent / ".gobin"
        shutil.rmtree(gobin, ignore_errors=True)
        self.go(
            [
                "install",
                *self.jobs,
                "-trimpath",
                f"-ldflags={' '.join(ldflags)}",
                package_at_version,
            ],
            target.parent,
            {"GOBIN": str(gobin)},
        )
        (gobin / target.name).replace(target)
        shutil.rmtree(gobin, ignore_errors=True)

    # -- kubernetes ----------------------------------------------------------------------

    def kubernetes(self, out_dir: Path, names: Sequence[str] = v.KUBE_BINARIES) -> None:
        """Build the commands ``names`` of ``k8s.io/kubernetes/cmd`` into ``out_dir``.

        ``go get -tool`` writes the wrapper's go.sum for exactly these commands, so each build
        regenerates the wrapper module first (the downloads come from the module cache).
        """
        version = v.KUBERNETES_VERSION
        staging = v.k8s_staging_version()
        src = v.cache_root() / "src" / f"k8s-v{version}"
        src.mkdir(parents=True, exist_ok=True)
        replaces = "\n".join(
            f"\tk8s.io/{name} => k8s.io/{name} v{staging}" for name in v.STAGING_MODULES
        )
        (src / "go.mod").write_text(
            "module local.test/k8sbins\n\n"
            "go 1.24.0\n\n"
            "godebug default=go1.24\n\n"
            f"replace (\n{replaces}\n)\n"
        )
        (src / "go.sum").unlink(missing_ok=True)
        packages = [f"k8s.io/kubernetes/cmd/{name}" for name in names]
        with self.timed(f"{', '.join(names)} v{version}"):
            self.go(["get", "-tool", *(f"{pkg}@v{version}" for pkg in packages)], src)
            commit = self._k8s_commit(src)
            build_date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            major, minor, _ = version.split(".")
            ldflags = ["-s", "-w"]
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
                ldflags += [
                    f"-X {pkg}.gitVersion=v{version}",
                    f"-X {pkg}.gitMajor={major}",
                    f"-X {pkg}.gitMinor={minor}",
                    f"-X {pkg}.gitTreeState=clean",
                    f"-X {pkg}.buildDate={build_date}",
                ]
                if commit:
                    ldflags.append(f"-X {pkg}.gitCommit={commit}")
            tmp = out_dir / ".build"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            self.go(
                [
                    "build",
                    *self.jobs,
                    "-trimpath",
                    "-tags=selinux,notest",
                    f"-ldflags={' '.join(ldflags)}",
                    "-o",
                    f"{tmp}/",
                    *packages,
                ],
                src,
            )
            for name in names:
                (tmp / name).replace(out_dir / name)
            shutil.rmtree(tmp, ignore_errors=True)

    def _k8s_commit(self, src: Path) -> str:
        try:
            out = self.go(["list", "-m", "-json", "k8s.io/kubernetes"], src)
            origin = json.loads(out).get("Origin") or {}
            return str(origin.get("Hash", ""))
        except (BuildError, ValueError):
            return ""


class _Timer:
    def __init__(self, builder: _Builder, what: str) -> None:
        self.builder = builder
        self.what = what
        self.started = 0.0

    def __enter__(self) -> None:
        self.started = time.monotonic()
        self.builder.say(f"building {self.what}")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        took = time.monotonic() - self.started
        state = "failed" if exc_type else "built"
        self.builder.say(f"{state} {self.what} in {took:.0f}s")


@contextmanager
def _build_lock() -> Iterator[None]:
    root = v.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_built(log: TextIO | None = None) -> Binaries:
    """Build whatever binary is missing and return the paths of all of them."""
    bins = binaries()
    if not bins.missing():
        return bins
    if shutil.which("go") is None:
        raise BuildError("`go` is not on PATH; it is needed to build the control plane")
    builder = _Builder(log or sys.stderr)
    with _build_lock():
        if not os.access(bins.etcd, os.X_OK):
            bins.etcd.parent.mkdir(parents=True, exist_ok=True)
            builder.etcd(bins.etcd)
        if not os.access(bins.kwok, os.X_OK):
            bins.kwok.parent.mkdir(parents=True, exist_ok=True)
            builder.kwok(bins.kwok)
        k8s = (bins.kube_apiserver, bins.kube_controller_manager, bins.kube_scheduler, bins.kubectl)
        if any(not os.access(path, os.X_OK) for path in k8s):
            bins.kube_apiserver.parent.mkdir(parents=True, exist_ok=True)
            builder.kubernetes(bins.kube_apiserver.parent)
    still_missing = bins.missing()
    if still_missing:
        raise BuildError(f"build finished but binaries are missing: {still_missing}")
    return bins


def helm_binary() -> Path:
    return v.helm_bin_dir() / "helm"


def ensure_helm(log: TextIO | None = None) -> Path:
    """Build helm when it is missing and return its path."""
    return _ensure_tool(helm_binary(), "helm", _Builder.helm, log)


def _ensure_tool(
    target: Path, name: str, build: Callable[[_Builder, Path], None], log: TextIO | None
) -> Path:
    """``target`` once it exists: built with ``build`` (under the build lock) when missing."""
    if os.access(target, os.X_OK):
        return target
    if shutil.which("go") is None:
        raise BuildError(f"`go` is not on PATH; it is needed to build {name}")
    with _build_lock():
        if not os.access(target, os.X_OK):
            target.parent.mkdir(parents=True, exist_ok=True)
            build(_Builder(log or sys.stderr), target)
    return target


def promtool_binary() -> Path:
    return v.prometheus_bin_dir() / "promtool"


def ensure_promtool(log: TextIO | None = None) -> Path:
    """Build promtool when it is missing and return its path."""
    return _ensure_tool(promtool_binary(), "promtool", _Builder.promtool, log)


def prometheus_binary() -> Path:
    return v.prometheus_bin_dir() / "prometheus"


def ensure_prometheus(log: TextIO | None = None) -> Path:
    """Build the Prometheus server when it is missing and return its path."""
    return _ensure_tool(prometheus_binary(), "prometheus", _Builder.prometheus, log)


def kubelet_binary() -> Path:
    return v.k8s_bin_dir() / "kubelet"


def ensure_kubelet(log: TextIO | None = None) -> Path:
    """Build the kubelet (same version, module and flags as the cluster) when it is missing."""
    return _ensure_tool(
        kubelet_binary(),
        "the kubelet",
        lambda builder, target: builder.kubernetes(target.parent, ("kubelet",)),
        log,
    )
