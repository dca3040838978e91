"""Deployments, ReplicaSets, StatefulSets and Jobs in a scenario, as their controllers expand them.

A cluster never schedules a workload, only the pods its controller creates, so a scenario's
workload becomes those pods, named, labelled and owned as kube-controller-manager (v1.34) makes
them, and they then go through the same admission as a scenario's own pods:

- a Deployment makes one ReplicaSet ``<deployment>-<pod-template-hash>`` whose selector and
  template carry the ``pod-template-hash`` label (none while the Deployment is paused);
- a ReplicaSet makes ``spec.replicas`` pods (1 if unset) named ``<replicaset>-<5 characters>``;
- a StatefulSet makes ``<set>-<ordinal>`` from ``spec.ordinals.start`` up, with the
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
  ``controller-revision-hash`` labels, hostname and subdomain, and for each volumeClaimTemplate
  the claim ``<template>-<set>-<ordinal>`` (unless the scenario already holds it, which the
  controller would take as it is), made just before its pod, which mounts it in place of a
  template volume of the same name. With ``podManagementPolicy: Parallel`` every pod is created
  at once; with ``OrderedReady`` (the default) each waits for the ones before it
  (``sim/ordered_pods.py``);
- a Job makes ``parallelism`` pods (1 if unset, at most ``completions``, none while suspended)
  named ``<job>-<5 characters>``, in Indexed completion mode ``<job>-<index>-<5 characters>``
  with the completion-index annotation and label, hostname ``<job>-<index>`` and the
  ``JOB_COMPLETION_INDEX`` variable; the API server's generated selector labels
  (``batch.kubernetes.io/controller-uid``, ``batch.kubernetes.io/job-name`` and the legacy
  ``controller-uid``, ``job-name``) and the job-tracking finalizer are there too.

Every pod names its controller in ``metadata.ownerReferences``. What the API server refuses is
refused here with the field and reason (no template, a selector that does not match the
template's labels, negative counts, a restart policy the kind does not allow).

Generated names are random in a cluster; here the five characters come from the API server's
alphabet for generated names, drawn by a generator seeded with the workload's namespace, kind and
name, so the same scenario always gives the same names. The pod-template-hash and the revision
hash have the controllers' form (a 32-bit FNV-1a value written in that alphabet) but are computed
over our own rendering of the template (JSON, keys sorted), so their values differ from those a
cluster would show. A workload's UID, unless it gives one, is derived from its identity the same
way.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.selectors import LabelSelector, parse_string_map
from kopf_scheduler.sim.cluster_objects import controller_reference

Raw = dict[str, Any]

WORKLOAD_KINDS = {
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
}
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The API server's characters for generated names (and the controllers' hashes)."""
MAX_GENERATED_BASE = 58
"""A generated name's base is cut to 63 characters less the five random ones."""
POD_TEMPLATE_HASH = "pod-template-hash"
STATEFUL_SET_POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
REVISION_HASH = "controller-revision-hash"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


@dataclass
class CreatedPod:
    """A pod a controller creates, with the claims it creates just before it."""

    pod: Raw
    claims: list[Raw] = field(default_factory=list)
    waits_for: tuple[str, ...] = ()
    """``namespace/name`` of the pods that must be running and ready before this one is
    created (a StatefulSet's earlier ordinals under OrderedReady); empty: created at once."""


@dataclass
class Expansion:
    """What a workload's controller creates."""

    controller: Raw | None
    """The ReplicaSet or StatefulSet that owns the pods (for a Deployment, the ReplicaSet it
    makes): the scheduler reads its selector to spread the pods by default, as kube-scheduler
    does. None for a Job (default spreading does not look at Jobs) and a paused Deployment."""
    pods: list[CreatedPod]


def hash_text(text: str) -> str:
    """A controller's hash of ``text``: 32-bit FNV-1a, its decimal digits in the name alphabet."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(ALPHABET[ord(digit) % len(ALPHABET)] for digit in str(value))


def _rendered(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def expand(workload: Mapping[str, Any], taken: Container[str]) -> Expansion:
    """The pods (and claims) the controller of ``workload`` creates, in creation order.

    ``taken`` holds the ``namespace/name`` keys already in use; a generated name that is taken
    is drawn again, as a controller retries after the API server refuses a duplicate.
    InvalidObjectError (field and reason) for what the API server would refuse.
    """
    kind = str(workload.get("kind"))
    metadata = workload.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise InvalidObjectError("metadata.name", "must be a non-empty string")
    namespace = str(metadata.get("namespace") or "default")
    spec = workload.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidObjectError("spec", "Required value")
    names = _Names(f"{namespace}/{kind}/{metadata['name']}", taken)
    expanders: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any], _Names], Expansion]]
    expanders = {
        "Deployment": _deployment,
        "ReplicaSet": _replica_set,
        "StatefulSet": _stateful_set,
        "Job": _job,
    }
    return expanders[kind](workload, spec, names)


class _Names:
    """Generated names of one workload, reproducible and unused."""

    def __init__(self, identity: str, taken: Container[str]) -> None:
        self._random = random.Random(identity)
        self._taken = taken
        self._given: set[str] = set()

    def generate(self, namespace: str, base: str) -> str:
        base = base[:MAX_GENERATED_BASE]
        while True:
            name = base + "".join(self._random.choice(ALPHABET) for _ in range(5))
            key = f"{namespace}/{name}"
            if key not in self._taken and key not in self._given:
                self._given.add(key)
                return name


def _uid(workload: Mapping[str, Any], kind: str, namespace: str) -> str:
    given = workload["metadata"].get("uid")
    if isinstance(given, str) and given:
        return given
    identity = f"{kind}/{namespace}/{workload['metadata']['name']}"
    return str(uuid.uuid5(uuid.NAMESPACE_OID, identity))


def _count(
    spec: Mapping[str, Any], name: str, default: int | None, path: str = "spec"
) -> int | None:
    value = spec.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidObjectError(f"{path}.{name}", f"Invalid value: {value!r}: must be an integer")
    if value < 0:
        raise InvalidObjectError(
            f"{path}.{name}", f"Invalid value: {value}: must be greater than or equal to 0"
        )
    return value


def _template(spec: Mapping[str, Any]) -> tuple[Raw, Raw, dict[str, str], dict[str, str]]:
    """The pod template's metadata and spec (copies), labels and annotations; checked."""
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise InvalidObjectError("spec.template", "Required value")
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, Mapping):
        raise InvalidObjectError("spec.template.spec", "Required value")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise InvalidObjectError("spec.template.spec.containers", "Required value")
    metadata = template.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidObjectError("spec.template.metadata", "must be an object")
    labels = parse_string_map(metadata.get("labels"), "spec.template.metadata.labels")
    annotations = parse_string_map(
        metadata.get("annotations"), "spec.template.metadata.annotations"
    )
    return copy.deepcopy(dict(metadata)), copy.deepcopy(dict(pod_spec)), labels, annotations


def _checked_selector(spec: Mapping[str, Any], kind: str, labels: Mapping[str, str]) -> None:
    """The apps/v1 rules: a selector is required, not empty, and matches the template."""
    raw = spec.get("selector")
    if raw is None:
        raise InvalidObjectError("spec.selector", "Required value")
    selector = LabelSelector.parse(raw, "spec.selector")
    if selector.is_empty():
        raise InvalidObjectError(
            "spec.selector",
            f"Invalid value: {_rendered(raw)}: empty selector is invalid for {kind.lower()}",
        )
    if not selector.matches(labels):
        raise InvalidObjectError(
            "spec.template.metadata.labels",
            f"Invalid value: {_rendered(dict(labels))}: `selector` does not match template "
            "`labels`",
        )


def _apps_template(
    spec: Mapping[str, Any], kind: str
) -> tuple[Raw, Raw, dict[str, str], dict[str, str]]:
    """:func:`_template` of an apps/v1 controller, whose selector must match it and whose pods
    always restart."""
    template_metadata, pod_spec, labels, annotations = _template(spec)
    _checked_selector(spec, kind, labels)
    policy = pod_spec.get("restartPolicy") or "Always"
    if policy != "Always":
        raise InvalidObjectError(
            "spec.template.spec.restartPolicy",
            f'Unsupported value: "{policy}": supported values: "Always"',
        )
    return template_metadata, pod_spec, labels, annotations


def _pod(
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    template_metadata: Mapping[str, Any],
    pod_spec: Mapping[str, Any],
    owner: Raw,
) -> Raw:
    """A pod from a template as every controller makes it: the template's labels, annotations,
    finalizers and spec, the controller as owner."""
    metadata: Raw = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    finalizers = template_metadata.get("finalizers")
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(pod_spec),
    }


def _controller(
    kind: str, name: str, namespace: str, uid: str, replicas: int, spec: Mapping[str, Any]
) -> Raw:
    """The owning controller as the scheduler sees it: identity, replicas and selector."""
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"replicas": replicas, "selector": copy.deepcopy(spec["selector"])},
    }


def _replica_set(workload: Mapping[str, Any], spec: Mapping[str, Any], names: _Names) -> Expansion:
    name = str(workload["metadata"]["name"])
    namespace = str(workload["metadata"].get("namespace") or "default")
    replicas = _count(spec, "replicas", 1) or 0
    template_metadata, pod_spec, labels, annotations = _apps_template(spec, "ReplicaSet")
    uid = _uid(workload, "ReplicaSet", namespace)
    owner = controller_reference("apps/v1", "ReplicaSet", name, uid)
    pods = [
        CreatedPod(
            _pod(
                names.generate(namespace, f"{name}-"),
                namespace,
                labels,
                annotations,
                template_metadata,
                pod_spec,
                owner,
            )
        )
        for _ in range(replicas)
    ]
    return Expansion(_controller("ReplicaSet", name, namespace, uid, replicas, spec), pods)


def _deployment(workload: Mapping[str, Any], spec: Mapping[str, Any], names: _Names) -> Expansion:
    name = str(workload["metadata"]["name"])
    namespace = str(workload["metadata"].get("namespace") or "default")
    replicas = _count(spec, "replicas", 1)
    template_metadata, _, labels, _ = _apps_template(spec, "Deployment")
    if spec.get("paused"):
        return Expansion(None, [])  # a paused Deployment makes no ReplicaSet until resumed
    template_hash = hash_text(_rendered(spec["template"]))
    selector = copy.deepcopy(dict(spec["selector"]))
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        POD_TEMPLATE_HASH: template_hash,
    }
    template = copy.deepcopy(dict(spec["template"]))
    template["metadata"] = {
        **template_metadata,
        "labels": {**labels, POD_TEMPLATE_HASH: template_hash},
    }
    replica_set_name = f"{name}-{template_hash}"
    replica_set: Raw = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replica_set_name,
            "namespace": namespace,
            "uid": _uid({"metadata": {"name": replica_set_name}}, "ReplicaSet", namespace),
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    }
    return _replica_set(replica_set, replica_set["spec"], names)


def _stateful_set(workload: Mapping[str, Any], spec: Mapping[str, Any], names: _Names) -> Expansion:
    name = str(workload["metadata"]["name"])
    namespace = str(workload["metadata"].get("namespace") or "default")
    replicas = _count(spec, "replicas", 1) or 0
    template_metadata, pod_spec, labels, annotations = _apps_template(spec, "StatefulSet")
    policy = spec.get("podManagementPolicy") or "OrderedReady"
    if policy not in ("OrderedReady", "Parallel"):
        raise InvalidObjectError(
            "spec.podManagementPolicy",
            f'Unsupported value: "{policy}": supported values: "OrderedReady", "Parallel"',
        )
    ordinals = spec.get("ordinals") or {}
    if not isinstance(ordinals, Mapping):
        raise InvalidObjectError("spec.ordinals", "must be an object")
    start = _count(ordinals, "start", 0, "spec.ordinals") or 0
    claim_templates = spec.get("volumeClaimTemplates") or []
    if not isinstance(claim_templates, list):
        raise InvalidObjectError("spec.volumeClaimTemplates", "must be a list")
    for index, claim_template in enumerate(claim_templates):
        claim_metadata = (
            claim_template.get("metadata") if isinstance(claim_template, Mapping) else None
        )
        if not isinstance(claim_metadata, Mapping) or not claim_metadata.get("name"):
            raise InvalidObjectError(
                f"spec.volumeClaimTemplates[{index}].metadata.name", "Required value"
            )
    match_labels = parse_string_map(
        (spec.get("selector") or {}).get("matchLabels"), "spec.selector.matchLabels"
    )
    revision = f"{name}-{hash_text(_rendered({'spec': {'template': spec['template']}}))}"
    uid = _uid(workload, "StatefulSet", namespace)
    owner = controller_reference("apps/v1", "StatefulSet", name, uid)
    created: list[CreatedPod] = []
    for ordinal in range(start, start + replicas):
        pod_name = f"{name}-{ordinal}"
        claims = []
        claim_volumes = []
        for claim_template in claim_templates:
            claim = copy.deepcopy(dict(claim_template))
            template_name = claim["metadata"]["name"]
            claim_name = f"{template_name}-{name}-{ordinal}"
            claim["apiVersion"] = "v1"
            claim["kind"] = "PersistentVolumeClaim"
            claim["metadata"] = {
                **claim["metadata"],
                "name": claim_name,
                "namespace": namespace,
                "labels": {**(claim["metadata"].get("labels") or {}), **match_labels},
            }
            claim.pop("status", None)
            claims.append(claim)
            claim_volumes.append(
                {"name": template_name, "persistentVolumeClaim": {"claimName": claim_name}}
            )
        pod_labels = {
            **labels,
            STATEFUL_SET_POD_NAME: pod_name,
            POD_INDEX: str(ordinal),
            REVISION_HASH: revision,
        }
        pod = _pod(pod_name, namespace, pod_labels, annotations, template_metadata, pod_spec, owner)
        pod_spec_out = pod["spec"]
        replaced = {volume["name"] for volume in claim_volumes}
        kept = [v for v in pod_spec_out.get("volumes") or [] if v.get("name") not in replaced]
        if claim_volumes or kept:
            pod_spec_out["volumes"] = claim_volumes + kept
        pod_spec_out["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec_out["subdomain"] = spec["serviceName"]
        waits_for: tuple[str, ...] = ()
        if policy == "OrderedReady":
            waits_for = tuple(f"{namespace}/{name}-{earlier}" for earlier in range(start, ordinal))
        created.append(CreatedPod(pod, claims, waits_for))
    return Expansion(_controller("StatefulSet", name, namespace, uid, replicas, spec), created)


def _job(workload: Mapping[str, Any], spec: Mapping[str, Any], names: _Names) -> Expansion:
    name = str(workload["metadata"]["name"])
    namespace = str(workload["metadata"].get("namespace") or "default")
    parallelism = _count(spec, "parallelism", 1) or 0
    completions = _count(spec, "completions", None)
    if completions is None and spec.get("parallelism") is None:
        completions = 1
    template_metadata, pod_spec, labels, annotations = _template(spec)
    policy = pod_spec.get("restartPolicy") or ""
    if policy in ("", "Always"):
        raise InvalidObjectError(
            "spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"'
        )
    if policy not in ("OnFailure", "Never"):
        raise InvalidObjectError(
            "spec.template.spec.restartPolicy",
            f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
        )
    mode = spec.get("completionMode") or "NonIndexed"
    if mode not in ("NonIndexed", "Indexed"):
        raise InvalidObjectError(
            "spec.completionMode",
            f'Unsupported value: "{mode}": supported values: "NonIndexed", "Indexed"',
        )
    if mode == "Indexed" and completions is None:
        raise InvalidObjectError(
            "spec.completions", "Required value: when completion mode is Indexed"
        )
    uid = _uid(workload, "Job", namespace)
    for label in JOB_NAME_LABELS:
        labels.setdefault(label, name)
    for label in CONTROLLER_UID_LABELS:
        labels.setdefault(label, uid)
    if spec.get("manualSelector"):
        _checked_selector(spec, "Job", labels)
    else:
        generated = copy.deepcopy(dict(spec.get("selector") or {}))
        generated["matchLabels"] = {
            CONTROLLER_UID_LABELS[1]: uid,
            **(generated.get("matchLabels") or {}),
        }
        expected = {
            **{label: name for label in JOB_NAME_LABELS},
            **{label: uid for label in CONTROLLER_UID_LABELS},
        }
        if not LabelSelector.parse(generated, "spec.selector").matches(expected):
            raise InvalidObjectError(
                "spec.selector",
                f"Invalid value: {_rendered(generated)}: `selector` not auto-generated",
            )
    if spec.get("suspend"):
        return Expansion(None, [])
    active = parallelism if completions is None else min(parallelism, completions)
    template_metadata = {
        **template_metadata,
        "finalizers": [
            *(f for f in template_metadata.get("finalizers") or [] if f != JOB_TRACKING_FINALIZER),
            JOB_TRACKING_FINALIZER,
        ],
    }
    owner = controller_reference("batch/v1", "Job", name, uid)
    created: list[CreatedPod] = []
    for index in range(active):
        if mode != "Indexed":
            pod_name = names.generate(namespace, f"{name}-")
            created.append(
                CreatedPod(
                    _pod(
                        pod_name, namespace, labels, annotations, template_metadata, pod_spec, owner
                    )
                )
            )
            continue
        suffix = f"-{index}-"
        base = f"{name}{suffix}"
        if len(base) > MAX_GENERATED_BASE:
            base = base[: MAX_GENERATED_BASE - len(suffix)] + suffix
        indexed_spec = copy.deepcopy(pod_spec)
        _add_completion_index_env(indexed_spec)
        indexed_spec["hostname"] = f"{name}-{index}"
        pod = _pod(
            names.generate(namespace, base),
            namespace,
            {**labels, COMPLETION_INDEX: str(index)},
            {**annotations, COMPLETION_INDEX: str(index)},
            template_metadata,
            indexed_spec,
            owner,
        )
        created.append(CreatedPod(pod))
    return Expansion(None, created)


def _add_completion_index_env(pod_spec: Raw) -> None:
    for group in ("initContainers", "containers"):
        for container in pod_spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            env = container.setdefault("env", [])
            if any(isinstance(v, Mapping) and v.get("name") == COMPLETION_INDEX_ENV for v in env):
                continue
            env.append(
                {
                    "name": COMPLETION_INDEX_ENV,
                    "valueFrom": {
                        "fieldRef": {
                            "apiVersion": "v1",
                            "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']",
                        }
                    },
                }
            )
