"""Reading the deployment files: YAML documents, kustomizations, and ``kubectl kustomize``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.localcluster.versions import k8s_bin_dir

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
CRDS = MANIFESTS / "crds"
OVERLAYS = MANIFESTS / "overlays"
KUBE_SYSTEM = OVERLAYS / "kube-system"
SERVICEMONITOR = OVERLAYS / "servicemonitor"
DEMOS = MANIFESTS / "demos"
KIND = ROOT / "e2e" / "kind"
KIND_OVERLAY = KIND / "overlay"
DOCKERFILE = ROOT / "Dockerfile"

NAMESPACE = "kopf-scheduler"
NAME = "kopf-scheduler"
IMAGE = "ghcr.io/kopf-scheduler/kopf-scheduler"
KUBECTL = k8s_bin_dir() / "kubectl"

Obj = dict[str, Any]

CLUSTER_SCOPED_KINDS = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "CustomResourceDefinition",
    "FlowSchema",
}


def load_documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def parse_documents(text: str) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def yaml_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml"))


def kustomization_dirs() -> list[Path]:
    found = [p.parent for p in MANIFESTS.rglob("kustomization.yaml")]
    found += [p.parent for p in KIND.rglob("kustomization.yaml")]
    return sorted(found)


def kustomization(directory: Path) -> Obj:
    (doc,) = load_documents(directory / "kustomization.yaml")
    assert isinstance(doc, dict)
    return doc


def local_references(directory: Path) -> tuple[set[Path], set[Path]]:
    """(files, directories) that a kustomization names, resolved against its directory."""
    spec = kustomization(directory)
    files: set[Path] = set()
    dirs: set[Path] = set()
    for entry in spec.get("resources") or []:
        target = (directory / entry).resolve()
        (dirs if target.is_dir() else files).add(target)
    for entry in spec.get("patches") or []:
        if "path" in entry:
            files.add((directory / entry["path"]).resolve())
    for key in ("patchesStrategicMerge", "components", "crds"):
        for entry in spec.get(key) or []:
            target = (directory / entry).resolve()
            (dirs if target.is_dir() else files).add(target)
    files |= set(generator_files(directory).values())
    return files, dirs


def generator_files(directory: Path) -> dict[tuple[str, str], Path]:
    """{(ConfigMap name, key): file} for every file a kustomization's configMapGenerator reads."""
    found: dict[tuple[str, str], Path] = {}
    for generator in kustomization(directory).get("configMapGenerator") or []:
        for entry in generator.get("files") or []:
            key, _, source = entry.rpartition("=")
            path = (directory / source).resolve()
            found[(generator["name"], key or path.name)] = path
    return found


def by_kind(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def resource_objects(directory: Path) -> list[Obj]:
    """The objects of a kustomization's own resource files (not its bases, not patched)."""
    files, _ = local_references(directory)
    resources = {(directory / r).resolve() for r in kustomization(directory).get("resources", [])}
    objects: list[Obj] = []
    for path in sorted(files & resources):
        objects.extend(load_documents(path))
    return objects


def base_objects() -> dict[tuple[str, str], Obj]:
    """The base's objects: its own files and the CustomResourceDefinitions it includes."""
    return by_kind(resource_objects(BASE) + resource_objects(CRDS))


def iter_rules(role: Obj) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """Flatten RBAC rules into (apiGroup, resource, verb, resourceNames)."""
    for rule in role.get("rules") or []:
        names = tuple(sorted(rule.get("resourceNames") or ()))
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    yield group, resource, verb, names


def deployment_container(deployment: Obj) -> Obj:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def config_path_from_args(args: list[str]) -> str:
    index = args.index("--config")
    return args[index + 1]


def kustomize(directory: Path) -> list[Obj]:
    """Render a kustomization with the locally built kubectl; skip when it is absent."""
    if not KUBECTL.is_file():
        pytest.skip(f"no kubectl at {KUBECTL} (built by `make cluster-up`)")
    result = subprocess.run(
        [str(KUBECTL), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return parse_documents(result.stdout)
