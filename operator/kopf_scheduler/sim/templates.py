"""Pod templates for ``capacity``: what one more copy of a workload looks like.

A ``--podspec`` file holds a Pod, or a workload whose pod template is what its controller would
create (a Deployment, ReplicaSet, StatefulSet or Job), and optionally the PodGroup its pods
belong to: then a copy is a whole gang, a new PodGroup with ``minMember`` pods. The template is
checked as a scenario's pending pod is (``sim/scenario.py``), so a file that the simulator would
refuse is refused here too, with the file and the object named.
"""

from __future__ import annotations

import copy
from collections.abc import Container, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopf_scheduler.config.documents import copy_document
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL
from kopf_scheduler.sim.scenario import ScenarioError, check_object, read_documents

WORKLOAD_KINDS = {
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
}
"""The workload kinds whose ``spec.template`` is taken as the pod to copy."""

KEPT_METADATA = ("name", "namespace", "labels", "annotations")
"""What a copy keeps of the template's metadata: a pod saved from a cluster also carries its
identity (uid, resourceVersion, owners), which no two copies may share."""

POD_GROUP_API = ("scheduling.x-k8s.io/v1alpha1", "PodGroup")
ACCEPTED = "a Pod, or a Deployment, ReplicaSet, StatefulSet or Job (and at most one PodGroup)"


@dataclass(frozen=True)
class PodTemplate:
    """One ``--podspec``: the pod each copy is made from, and its gang if it has one."""

    name: str
    """The pod's (or the workload's) name; copies are named after it."""
    namespace: str
    pod: Mapping[str, Any]
    """A pending Pod object (no ``nodeName``), checked."""
    pod_group: Mapping[str, Any] | None = None
    """The PodGroup a copy recreates under a new name, for a gang template."""
    source: str = ""

    @property
    def members(self) -> int:
        """Pods per copy: the PodGroup's ``minMember``, else one."""
        if self.pod_group is None:
            return 1
        return int((self.pod_group.get("spec") or {}).get("minMember") or 0)

    def copy_objects(
        self, index: int, taken: Container[str]
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The objects of copy ``index`` (a PodGroup first, for a gang, then the pods) and the
        ``namespace/name`` keys of its pods; names in ``taken`` (pod keys) are skipped."""
        suffix = f"{index}"
        group_name = ""
        objects: list[dict[str, Any]] = []
        if self.pod_group is not None:
            group = copy.deepcopy(dict(self.pod_group))
            group_name = f"{group['metadata']['name']}-{suffix}"
            group["metadata"] = {"name": group_name, "namespace": self.namespace}
            group.pop("status", None)
            objects.append(group)
        keys = []
        for member in range(self.members):
            name = f"{self.name}-{suffix}" if group_name == "" else f"{self.name}-{suffix}-{member}"
            while f"{self.namespace}/{name}" in taken:
                name += "-x"
            pod = copy_document(self.pod)
            metadata = dict(pod.get("metadata") or {})
            metadata["name"] = name
            metadata["namespace"] = self.namespace
            if group_name:
                metadata["labels"] = {**(metadata.get("labels") or {}), POD_GROUP_LABEL: group_name}
            pod["metadata"] = metadata
            objects.append(pod)
            keys.append(f"{self.namespace}/{name}")
        return objects, keys


def _name_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    return str(metadata.get("name") or "")


def _describe(obj: Any, index: int) -> str:
    if not isinstance(obj, Mapping):
        return f"document #{index + 1}"
    name = _name_of(obj)
    return f"{obj.get('kind') or 'object'} {name}" if name else f"document #{index + 1}"


def _pod_of_workload(workload: Mapping[str, Any], source: str, described: str) -> dict[str, Any]:
    """The pod a workload's controller would create from ``spec.template``."""
    spec = workload.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise ScenarioError(source, described, "spec.template.spec is missing")
    if isinstance(spec, Mapping) and spec.get("volumeClaimTemplates"):
        raise ScenarioError(
            source,
            described,
            "spec.volumeClaimTemplates: copies would need claims of their own, which capacity "
            "does not create; give the pod with the claims it should use",
        )
    metadata = workload.get("metadata") if isinstance(workload.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    pod_metadata = dict(template.get("metadata") or {})
    pod_metadata["name"] = metadata.get("name")
    if metadata.get("namespace"):
        pod_metadata["namespace"] = metadata["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_metadata,
        "spec": copy.deepcopy(dict(template["spec"])),
    }


def load_template(path: str | Path) -> PodTemplate:
    """The template in ``path``; ScenarioError naming the file and object when it is not one."""
    source = str(path)
    pods: list[tuple[str, dict[str, Any]]] = []
    groups: list[dict[str, Any]] = []
    for index, document in enumerate(read_documents(path)):
        described = _describe(document, index)
        if not isinstance(document, Mapping):
            raise ScenarioError(source, described, "must be a Kubernetes object (a mapping)")
        api_kind = (document.get("apiVersion"), document.get("kind"))
        if api_kind == ("v1", "Pod"):
            pod = copy.deepcopy(dict(document))
        elif api_kind in WORKLOAD_KINDS:
            pod = _pod_of_workload(document, source, described)
        elif api_kind == POD_GROUP_API:
            check_object(document, index, source, set())
            groups.append(dict(document))
            continue
        else:
            raise ScenarioError(
                source,
                described,
                f"not a pod template (apiVersion/kind {api_kind[0]}/{api_kind[1]}); "
                f"--podspec takes {ACCEPTED}",
            )
        spec = dict(pod.get("spec") or {})
        spec.pop("nodeName", None)
        pod["spec"] = spec
        pod.pop("status", None)
        metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        pod["metadata"] = {key: metadata[key] for key in KEPT_METADATA if key in metadata}
        check_object(pod, index, source, set())
        pods.append((described, pod))
    if len(pods) != 1 or len(groups) > 1:
        raise ScenarioError(
            source,
            "file",
            f"holds {len(pods)} pod templates and {len(groups)} PodGroups; "
            f"--podspec takes {ACCEPTED}",
        )
    described, pod = pods[0]
    metadata = pod.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "default")
    group_label = (metadata.get("labels") or {}).get(POD_GROUP_LABEL)
    group = groups[0] if groups else None
    if group is not None:
        group_namespace = (group.get("metadata") or {}).get("namespace") or "default"
        if group_label != _name_of(group) or group_namespace != namespace:
            raise ScenarioError(
                source,
                described,
                f"a gang template's pod carries the label {POD_GROUP_LABEL}: "
                f"{_name_of(group)} in the PodGroup's namespace {group_namespace}",
            )
        if int((group.get("spec") or {}).get("minMember") or 0) < 1:
            raise ScenarioError(
                source, f"PodGroup {_name_of(group)}", "spec.minMember must be at least 1"
            )
    elif group_label:
        raise ScenarioError(
            source,
            described,
            f"belongs to PodGroup {group_label} ({POD_GROUP_LABEL}), which the file does not "
            "hold: a gang template carries its PodGroup",
        )
    return PodTemplate(str(metadata["name"]), namespace, pod, group, source)
