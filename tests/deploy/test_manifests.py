"""The kustomize manifests: structure, least-privilege RBAC, the Deployment and its config.

These read the YAML files directly. The tests at the end also render the kustomizations with
the locally built kubectl (``kubectl kustomize``), and skip that part when it is not built.
"""

from __future__ import annotations

import importlib.metadata
import posixpath
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS
from tests.deploy.manifest_files import (
    BASE,
    CLUSTER_SCOPED_KINDS,
    CRDS,
    DEMOS,
    IMAGE,
    KIND_OVERLAY,
    KUBE_SYSTEM,
    MANIFESTS,
    NAME,
    NAMESPACE,
    SERVICEMONITOR,
    Obj,
    base_objects,
    by_kind,
    config_path_from_args,
    deployment_container,
    generator_files,
    iter_rules,
    kustomization,
    kustomization_dirs,
    kustomize,
    load_documents,
    local_references,
    yaml_files,
)

POD_LABELS = {
    "app.kubernetes.io/name": NAME,
    "app.kubernetes.io/component": "scheduler",
    "component": "scheduler",
    "tier": "control-plane",
}
HEALTH_PORT = 10259

# The exact access the scheduler needs, and nothing else.
EXPECTED_CLUSTER_RULES = {
    ("", "pods", "get", ()),
    ("", "pods", "list", ()),
    ("", "pods", "watch", ()),
    ("", "pods", "delete", ()),
    ("", "pods/binding", "create", ()),
    ("", "bindings", "create", ()),
    ("", "pods/status", "patch", ()),
    ("", "pods/status", "update", ()),
    ("", "nodes", "get", ()),
    ("", "nodes", "list", ()),
    ("", "nodes", "watch", ()),
    ("", "namespaces", "list", ()),
    ("", "namespaces", "watch", ()),
    ("policy", "poddisruptionbudgets", "list", ()),
    ("policy", "poddisruptionbudgets", "watch", ()),
    ("scheduling.k8s.io", "priorityclasses", "list", ()),
    ("scheduling.k8s.io", "priorityclasses", "watch", ()),
    ("", "services", "list", ()),
    ("", "services", "watch", ()),
    ("", "replicationcontrollers", "list", ()),
    ("", "replicationcontrollers", "watch", ()),
    ("apps", "replicasets", "list", ()),
    ("apps", "replicasets", "watch", ()),
    ("apps", "statefulsets", "list", ()),
    ("apps", "statefulsets", "watch", ()),
    ("", "persistentvolumes", "get", ()),
    ("", "persistentvolumes", "list", ()),
    ("", "persistentvolumes", "watch", ()),
    ("", "persistentvolumes", "update", ()),
    ("", "persistentvolumes", "patch", ()),
    ("", "persistentvolumeclaims", "get", ()),
    ("", "persistentvolumeclaims", "list", ()),
    ("", "persistentvolumeclaims", "watch", ()),
    ("", "persistentvolumeclaims", "update", ()),
    ("", "persistentvolumeclaims", "patch", ()),
    ("storage.k8s.io", "storageclasses", "get", ()),
    ("storage.k8s.io", "storageclasses", "list", ()),
    ("storage.k8s.io", "storageclasses", "watch", ()),
    ("storage.k8s.io", "csinodes", "get", ()),
    ("storage.k8s.io", "csinodes", "list", ()),
    ("storage.k8s.io", "csinodes", "watch", ()),
    ("storage.k8s.io", "csidrivers", "get", ()),
    ("storage.k8s.io", "csidrivers", "list", ()),
    ("storage.k8s.io", "csidrivers", "watch", ()),
    ("storage.k8s.io", "csistoragecapacities", "get", ()),
    ("storage.k8s.io", "csistoragecapacities", "list", ()),
    ("storage.k8s.io", "csistoragecapacities", "watch", ()),
    ("storage.k8s.io", "volumeattachments", "get", ()),
    ("storage.k8s.io", "volumeattachments", "list", ()),
    ("storage.k8s.io", "volumeattachments", "watch", ()),
    ("resource.k8s.io", "deviceclasses", "get", ()),
    ("resource.k8s.io", "deviceclasses", "list", ()),
    ("resource.k8s.io", "deviceclasses", "watch", ()),
    ("resource.k8s.io", "resourceslices", "get", ()),
    ("resource.k8s.io", "resourceslices", "list", ()),
    ("resource.k8s.io", "resourceslices", "watch", ()),
    ("resource.k8s.io", "resourceclaims", "get", ()),
    ("resource.k8s.io", "resourceclaims", "list", ()),
    ("resource.k8s.io", "resourceclaims", "watch", ()),
    ("resource.k8s.io", "resourceclaims", "update", ()),
    ("resource.k8s.io", "resourceclaims", "patch", ()),
    ("resource.k8s.io", "resourceclaims/status", "get", ()),
    ("resource.k8s.io", "resourceclaims/status", "list", ()),
    ("resource.k8s.io", "resourceclaims/status", "watch", ()),
    ("resource.k8s.io", "resourceclaims/status", "update", ()),
    ("resource.k8s.io", "resourceclaims/status", "patch", ()),
    ("scheduling.x-k8s.io", "podgroups", "get", ()),
    ("scheduling.x-k8s.io", "podgroups", "list", ()),
    ("scheduling.x-k8s.io", "podgroups", "watch", ()),
    ("scheduling.x-k8s.io", "podgroups/status", "get", ()),
    ("scheduling.x-k8s.io", "podgroups/status", "update", ()),
    ("scheduling.x-k8s.io", "podgroups/status", "patch", ()),
    ("", "events", "create", ()),
    ("", "events", "patch", ()),
    ("events.k8s.io", "events", "create", ()),
    ("events.k8s.io", "events", "patch", ()),
}
EXPECTED_LEASE_RULES = {
    ("coordination.k8s.io", "leases", "create", ()),
    ("coordination.k8s.io", "leases", "get", (NAME,)),
    ("coordination.k8s.io", "leases", "update", (NAME,)),
}


METRICS_RBAC = ("kopf-scheduler-auth-delegator", "kopf-scheduler-metrics-reader")
"""The secure /metrics port's RBAC (metrics-rbac.yaml), apart from the scheduler's own roles."""


def one(objects: dict[tuple[str, str], Obj], kind: str) -> Obj:
    """The one object of ``kind`` among the scheduler's own (the /metrics RBAC left aside)."""
    matches = [o for (k, n), o in objects.items() if k == kind and n not in METRICS_RBAC]
    assert len(matches) == 1, f"expected one {kind}, found {len(matches)}"
    return matches[0]


CONFIGMAP = "kopf-scheduler-config"


def scheduler_config(configmap: Obj) -> tuple[dict[str, Any], SchedulerConfig]:
    raw = yaml.safe_load(configmap["data"]["config.yaml"])
    return raw, parse_config(raw)


def config_file(directory: Path) -> tuple[dict[str, Any], SchedulerConfig]:
    """The configuration that a kustomization's configMapGenerator puts in kopf-scheduler-config."""
    raw = yaml.safe_load(generator_files(directory)[(CONFIGMAP, "config.yaml")].read_text())
    return raw, parse_config(raw)


def all_generator_files() -> set[Path]:
    return {path for d in kustomization_dirs() for path in generator_files(d).values()}


# --- files and kustomizations ----------------------------------------------------------------


@pytest.mark.parametrize("path", yaml_files(MANIFESTS), ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_yaml_file_parses_into_kubernetes_objects(path: Path) -> None:
    documents = load_documents(path)
    assert documents, "empty file"
    if path.resolve() in all_generator_files():  # a KubeSchedulerConfiguration for a ConfigMap
        (document,) = documents
        parse_config(document)
        return
    if path.name == "kustomization.yaml":
        assert documents[0]["kind"] == "Kustomization"
        return
    if isinstance(documents[0], list):  # a JSON 6902 patch
        assert all({"op", "path"} <= set(op) for op in documents[0])
        return
    for doc in documents:
        assert isinstance(doc, dict)
        assert doc.get("apiVersion"), doc
        assert doc.get("kind"), doc
        assert doc.get("metadata", {}).get("name"), doc


@pytest.mark.parametrize("directory", kustomization_dirs(), ids=lambda p: p.name)
def test_kustomization_names_every_file_beside_it_and_no_missing_one(directory: Path) -> None:
    files, dirs = local_references(directory)
    for path in files:
        assert path.is_file(), f"{directory.name}/kustomization.yaml names a missing {path}"
    for path in dirs:
        assert (path / "kustomization.yaml").is_file(), f"{path} is no kustomization"
    beside = {
        p.resolve()
        for p in directory.iterdir()
        if p.suffix in (".yaml", ".yml") and p.name != "kustomization.yaml"
    }
    assert beside == {p for p in files if p.parent == directory.resolve()}


def test_top_level_kustomization_is_the_base() -> None:
    assert kustomization(MANIFESTS)["resources"] == ["base"]
    assert {p.name for p in MANIFESTS.iterdir() if p.is_file() and p.suffix == ".yaml"} == {
        "kustomization.yaml"
    }


def test_base_image_is_overridable_through_kustomize_images() -> None:
    (entry,) = kustomization(BASE)["images"]
    deployment = base_objects()[("Deployment", NAME)]
    assert entry["name"] == IMAGE
    assert deployment_container(deployment)["image"] == f"{IMAGE}:{entry['newTag']}"
    assert entry["newTag"] == importlib.metadata.version("kopf-scheduler")


def test_config_map_is_generated_from_config_yaml_in_the_scheduler_namespace() -> None:
    (generator,) = kustomization(BASE)["configMapGenerator"]
    assert generator["name"] == CONFIGMAP
    assert generator["namespace"] == NAMESPACE
    assert generator["files"] == ["config.yaml"]
    # No disableNameSuffixHash: the hash in the name is what rolls the Deployment.
    assert "disableNameSuffixHash" not in generator.get("options", {})
    assert generator["options"]["labels"]["app.kubernetes.io/name"] == NAME
    assert ("ConfigMap", CONFIGMAP) not in base_objects()


# --- namespace and identity ------------------------------------------------------------------


def test_base_objects_live_in_the_scheduler_namespace() -> None:
    objects = base_objects()
    namespace = objects[("Namespace", NAMESPACE)]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for (kind, name), obj in objects.items():
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == NAME, (kind, name)
        if kind in CLUSTER_SCOPED_KINDS:
            assert "namespace" not in obj["metadata"], (kind, name)
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE, (kind, name)


def test_bindings_give_the_service_account_the_roles() -> None:
    objects = base_objects()
    account = objects[("ServiceAccount", NAME)]
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    cluster_binding = one(objects, "ClusterRoleBinding")
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": one(objects, "ClusterRole")["metadata"]["name"],
    }
    assert cluster_binding["subjects"] == [subject]
    binding = one(objects, "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": one(objects, "Role")["metadata"]["name"],
    }
    assert binding["subjects"] == [subject]
    assert binding["metadata"]["namespace"] == one(objects, "Role")["metadata"]["namespace"]
    pod_spec = objects[("Deployment", NAME)]["spec"]["template"]["spec"]
    assert pod_spec["serviceAccountName"] == account["metadata"]["name"]


# --- API Priority and Fairness -----------------------------------------------------------------


def test_flow_schemas_give_the_account_kube_schedulers_priority_levels() -> None:
    schemas = {n: o["spec"] for (k, n), o in base_objects().items() if k == "FlowSchema"}
    account = {"kind": "ServiceAccount", "serviceAccount": {"name": NAME, "namespace": NAMESPACE}}
    everything = schemas[NAME]
    assert everything["priorityLevelConfiguration"] == {"name": "workload-high"}
    # kube-scheduler's bootstrap schema: precedence 800, flows by namespace.
    assert (everything["matchingPrecedence"], everything["distinguisherMethod"]) == (
        800,
        {"type": "ByNamespace"},
    )
    (rule,) = everything["rules"]
    assert rule["subjects"] == [account]
    assert rule["resourceRules"] == [
        {
            "verbs": ["*"],
            "apiGroups": ["*"],
            "resources": ["*"],
            "namespaces": ["*"],
            "clusterScope": True,
        }
    ]
    assert rule["nonResourceRules"] == [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
    election = schemas[f"{NAME}-leader-election"]
    assert election["priorityLevelConfiguration"] == {"name": "leader-election"}
    # Before the schema above, so that the Lease's requests are not taken by it.
    assert election["matchingPrecedence"] < everything["matchingPrecedence"]
    (rule,) = election["rules"]
    assert rule["subjects"] == [account]
    _, config = config_file(BASE)
    assert rule["resourceRules"] == [
        {
            "verbs": ["get", "create", "update"],
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "namespaces": [config.leader_election.resource_namespace],
        }
    ]


# --- RBAC --------------------------------------------------------------------------------------


def test_cluster_role_grants_exactly_what_the_scheduler_uses() -> None:
    role = one(base_objects(), "ClusterRole")
    assert "aggregationRule" not in role
    rules = list(iter_rules(role))
    assert len(rules) == len(set(rules)), "a permission is granted twice"
    assert set(rules) == EXPECTED_CLUSTER_RULES


def test_every_watched_collection_may_be_listed_and_watched() -> None:
    rules = set(iter_rules(one(base_objects(), "ClusterRole")))
    for watched in WATCHED_KINDS:
        assert (watched.group, watched.plural, "list", ()) in rules, watched.plural
        assert (watched.group, watched.plural, "watch", ()) in rules, watched.plural


def test_no_wildcards_and_no_non_resource_urls_in_any_role() -> None:
    objects = base_objects()
    for kind in ("ClusterRole", "Role"):
        for rule in one(objects, kind)["rules"]:
            assert "nonResourceURLs" not in rule
            for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in value for value in rule.get(key, [])), (kind, rule)


def test_nothing_touches_secrets_configmaps_or_crds() -> None:
    objects = base_objects()
    granted = {
        r for kind in ("ClusterRole", "Role") for _, r, _, _ in iter_rules(one(objects, kind))
    }
    assert not granted & {"secrets", "configmaps", "customresourcedefinitions", "pods/eviction"}


def test_lease_role_limits_get_and_update_to_the_scheduler_lease() -> None:
    objects = base_objects()
    role = one(objects, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert set(iter_rules(role)) == EXPECTED_LEASE_RULES
    for rule in role["rules"]:
        if {"get", "update"} & set(rule["verbs"]):
            assert rule["resourceNames"] == [NAME]
        else:
            assert rule["verbs"] == ["create"]
    _, config = config_file(BASE)
    assert config.leader_election.resource_name == NAME
    assert config.leader_election.resource_namespace == role["metadata"]["namespace"]


# --- the Deployment -----------------------------------------------------------------------------


def test_deployment_runs_two_replicas_at_cluster_critical_priority() -> None:
    deployment = base_objects()[("Deployment", NAME)]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert spec["template"]["metadata"]["labels"] == POD_LABELS
    assert deployment["metadata"]["labels"] == POD_LABELS
    selector = spec["selector"]["matchLabels"]
    assert selector.items() <= POD_LABELS.items()
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_replicas_prefer_different_nodes() -> None:
    deployment = base_objects()[("Deployment", NAME)]
    affinity = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in affinity
    (term,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    labels = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert labels.items() <= POD_LABELS.items()
    assert labels == deployment["spec"]["selector"]["matchLabels"]


def test_replicas_spread_over_zones_without_blocking_a_single_zone() -> None:
    deployment = base_objects()[("Deployment", NAME)]
    (constraint,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert constraint["topologyKey"] == "topology.kubernetes.io/zone"
    assert constraint["maxSkew"] == 1
    assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
    assert (
        constraint["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    )


def test_disruption_budget_keeps_a_replica_through_a_drain() -> None:
    objects = base_objects()
    deployment = objects[("Deployment", NAME)]
    budget = objects[("PodDisruptionBudget", NAME)]
    assert budget["apiVersion"] == "policy/v1"
    assert budget["spec"]["maxUnavailable"] == 1
    assert "minAvailable" not in budget["spec"]
    assert (
        budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    )
    assert deployment["spec"]["replicas"] > budget["spec"]["maxUnavailable"]


def test_pod_and_container_security_context_are_restricted() -> None:
    deployment = base_objects()[("Deployment", NAME)]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = deployment_container(deployment)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == 65532
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context.get("privileged", False) is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "hostNetwork" not in pod
    assert "hostPID" not in pod


def test_container_command_probes_ports_and_resources() -> None:
    container = deployment_container(base_objects()[("Deployment", NAME)])
    assert "command" not in container, "the image's ENTRYPOINT runs kopf-scheduler"
    assert container["args"] == ["run", "--config", "/etc/kopf-scheduler/config.yaml"]
    assert container["ports"] == [
        {"name": "https-metrics", "containerPort": HEALTH_PORT, "protocol": "TCP"}
    ]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] == HEALTH_PORT
        assert get.get("scheme") == "HTTPS"
    # Guaranteed QoS (requests equal to limits) with the one CPU the deciding thread can use;
    # memory 1.5 times the highest peak RSS of any benchmark run (631 MiB), rounded up.
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }


def test_config_is_mounted_where_the_args_point_and_tmp_is_writable() -> None:
    objects = base_objects()
    deployment = objects[("Deployment", NAME)]
    container = deployment_container(deployment)
    config_path = config_path_from_args(container["args"])
    directory, filename = posixpath.split(config_path)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    (config_mount,) = [m for m in mounts.values() if m["mountPath"] == directory]
    assert config_mount.get("readOnly") is True
    config_volume = volumes[config_mount["name"]]
    configmap_name = config_volume["configMap"]["name"]
    assert (configmap_name, filename) in generator_files(BASE)
    (tmp_mount,) = [m for m in mounts.values() if m["mountPath"] == "/tmp"]
    assert "emptyDir" in volumes[tmp_mount["name"]]
    assert set(mounts) == set(volumes)


def test_metrics_service_selects_the_pods_on_the_health_port() -> None:
    objects = base_objects()
    service = one(objects, "Service")
    deployment = objects[("Deployment", NAME)]
    assert service["spec"]["selector"].items() <= POD_LABELS.items()
    (port,) = service["spec"]["ports"]
    assert port["name"] == "https-metrics"
    assert port["port"] == HEALTH_PORT
    container_ports = {
        p["name"]: p["containerPort"] for p in deployment_container(deployment)["ports"]
    }
    assert container_ports[port["targetPort"]] == HEALTH_PORT


# --- the configuration ------------------------------------------------------------------------


def test_config_passes_the_project_loader() -> None:
    raw, config = config_file(BASE)
    assert [p.scheduler_name for p in config.profiles] == [NAME]
    election = config.leader_election
    assert election.leader_elect is True
    assert election.resource_name == NAME
    assert election.resource_namespace == NAMESPACE
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15, 10, 2)
    assert config.extensions.explanations.annotate == "failures"
    assert config.extensions.explanations.max_bytes == 16384
    assert config.extensions.nomination_hygiene is True
    assert raw["apiVersion"] == "kubescheduler.config.k8s.io/v1"


COSCHEDULING = [{"name": "Coscheduling"}]
EXPECTED_GANG_PLUGINS = {
    "queueSort": {"enabled": COSCHEDULING, "disabled": [{"name": "*"}]},
    "preFilter": {"enabled": COSCHEDULING},
    "postFilter": {"enabled": COSCHEDULING},
    "permit": {"enabled": COSCHEDULING},
    "reserve": {"enabled": COSCHEDULING},
}
"""Where scheduler-plugins' manifests/coscheduling/scheduler-config.yaml enables Coscheduling."""


def test_config_enables_gang_scheduling_as_scheduler_plugins_does() -> None:
    raw, config = config_file(BASE)
    (profile,) = raw["profiles"]
    assert profile["plugins"] == EXPECTED_GANG_PLUGINS
    assert profile["pluginConfig"] == [
        {
            "name": "Coscheduling",
            "args": {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 0},
        }
    ]
    # The loader resolved every name and validated the arguments.
    assert [p.name for p in config.profiles[0].plugins["queueSort"].enabled] == ["Coscheduling"]


# --- the PodGroup CustomResourceDefinition -----------------------------------------------------

POD_GROUP_CRD = "podgroups.scheduling.x-k8s.io"


def test_base_installs_the_pod_group_crd() -> None:
    assert "../crds" in kustomization(BASE)["resources"]
    assert kustomization(CRDS)["resources"] == ["scheduling.x-k8s.io_podgroups.yaml"]
    assert ("CustomResourceDefinition", POD_GROUP_CRD) in base_objects()


def test_pod_group_crd_is_the_coscheduling_api() -> None:
    crd = base_objects()[("CustomResourceDefinition", POD_GROUP_CRD)]
    spec = crd["spec"]
    assert spec["group"] == "scheduling.x-k8s.io"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "PodGroup",
        "listKind": "PodGroupList",
        "plural": "podgroups",
        "singular": "podgroup",
        "shortNames": ["pg", "pgs"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Phase", "string", ".status.phase"),
        ("MinMember", "integer", ".spec.minMember"),
        ("Running", "string", ".status.running"),
        ("Succeeded", "string", ".status.succeeded"),
        ("Failed", "string", ".status.failed"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    fields = {
        section: {
            name: (f["type"], f.get("format"))
            for name, f in properties[section]["properties"].items()
        }
        for section in ("spec", "status")
    }
    assert fields == {
        "spec": {
            "minMember": ("integer", "int32"),
            "minResources": ("object", None),
            "scheduleTimeoutSeconds": ("integer", "int32"),
        },
        "status": {
            "phase": ("string", None),
            "occupiedBy": ("string", None),
            "running": ("integer", "int32"),
            "succeeded": ("integer", "int32"),
            "failed": ("integer", "int32"),
            "scheduleStartTime": ("string", "date-time"),
        },
    }
    quantity = properties["spec"]["properties"]["minResources"]["additionalProperties"]
    assert quantity["x-kubernetes-int-or-string"] is True
    assert quantity["anyOf"] == [{"type": "integer"}, {"type": "string"}]


# --- overlays -----------------------------------------------------------------------------------


def test_kube_system_overlay_moves_everything_to_kube_system() -> None:
    spec = kustomization(KUBE_SYSTEM)
    assert spec["namespace"] == "kube-system"
    assert spec["resources"] == ["../../base"]
    patches = {p["path"]: p for p in spec["patches"]}
    (generator,) = spec["configMapGenerator"]
    (base_generator,) = kustomization(BASE)["configMapGenerator"]
    assert generator["behavior"] == "replace"
    # A replacing generator finds the base's ConfigMap by name and namespace.
    assert (generator["name"], generator["namespace"]) == (
        base_generator["name"],
        base_generator["namespace"],
    )

    (delete,) = load_documents(KUBE_SYSTEM / "namespace-delete.yaml")
    assert delete["$patch"] == "delete"
    assert (delete["kind"], delete["metadata"]["name"]) == ("Namespace", NAMESPACE)

    (ops,) = load_documents(KUBE_SYSTEM / "role-patch.yaml")
    assert ops == [{"op": "replace", "path": "/metadata/namespace", "value": "kube-system"}]
    target = patches["role-patch.yaml"]["target"]
    role_name = one(base_objects(), "Role")["metadata"]["name"]
    assert target["name"] == role_name
    assert "Role" in target["kind"]


def test_kube_system_overlay_config_differs_from_the_base_only_in_the_lease_namespace() -> None:
    raw, config = config_file(KUBE_SYSTEM)
    assert config.leader_election.resource_namespace == "kube-system"
    base_raw, _ = config_file(BASE)
    base_raw["leaderElection"]["resourceNamespace"] = "kube-system"
    assert raw == base_raw


def test_servicemonitor_overlay_scrapes_the_metrics_service() -> None:
    spec = kustomization(SERVICEMONITOR)
    assert spec["resources"][0] == "../../base"
    (monitor,) = load_documents(SERVICEMONITOR / "servicemonitor.yaml")
    service = one(base_objects(), "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["kind"] == "ServiceMonitor"
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "https"


def test_kind_overlay_uses_the_locally_loaded_image() -> None:
    spec = kustomization(KIND_OVERLAY)
    assert spec["resources"] == ["../../../manifests"]
    (entry,) = spec["images"]
    assert entry == {"name": IMAGE, "newName": "kopf-scheduler", "newTag": "e2e"}
    (patch,) = load_documents(KIND_OVERLAY / "deployment-patch.yaml")
    (container,) = patch["spec"]["template"]["spec"]["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"


# --- demos ----------------------------------------------------------------------------------


def example_pods(objects: list[Obj]) -> list[tuple[Obj, Obj, int]]:
    """(object, pod spec, replicas) for every Pod and Deployment of the demo."""
    pods = []
    for obj in objects:
        if obj["kind"] == "Pod":
            pods.append((obj, obj["spec"], 1))
        elif obj["kind"] == "Deployment":
            pods.append((obj, obj["spec"]["template"]["spec"], obj["spec"]["replicas"]))
    return pods


def millicpu(quantity: str | int) -> int:
    text = str(quantity)
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def test_priority_classes_of_the_demo() -> None:
    classes = by_kind(load_documents(DEMOS / "priorityclasses.yaml"))
    assert classes[("PriorityClass", "high")]["value"] == 1000
    assert classes[("PriorityClass", "low")]["value"] == 10
    polite = classes[("PriorityClass", "high-no-preempt")]
    assert polite["value"] == 1000
    assert polite["preemptionPolicy"] == "Never"
    assert not any(c.get("globalDefault") for c in classes.values())


def test_preemption_demo_targets_kopf_scheduler_and_needs_preemption_on_4_cpu_nodes() -> None:
    objects = load_documents(DEMOS / "preemption-demo.yaml")
    classes = {c["metadata"]["name"] for c in load_documents(DEMOS / "priorityclasses.yaml")}
    step = "demo.kopf-scheduler.io/step"
    for obj in objects:
        assert obj["metadata"].get("namespace", "demo") == "demo"
        assert obj["metadata"]["labels"][step] in ("1", "2"), obj["metadata"]["name"]
    node = 4000
    low: list[int] = []
    high: list[int] = []
    for obj, spec, replicas in example_pods(objects):
        assert spec["schedulerName"] == NAME
        assert spec["priorityClassName"] in classes
        (container,) = spec["containers"]
        cpu = millicpu(container["resources"]["requests"]["cpu"])
        if spec["priorityClassName"] == "low":
            assert obj["metadata"]["labels"][step] == "1"
            low += [cpu] * replicas
        else:
            assert obj["metadata"]["labels"][step] == "2"
            high += [cpu] * replicas
    # Step 1 fills 5 kwok nodes exactly: two low pods per node, a third does not fit.
    assert len(low) == 10
    assert len(set(low)) == 1
    per_node = node // low[0]
    assert per_node == 2
    free = node - per_node * low[0]
    for cpu in high:
        assert cpu > free, "a high-priority pod would fit without preemption"
        assert cpu <= free + low[0], "one victim per preemptor is not enough"
    pdbs = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    assert len(pdbs) == 1
    assert pdbs[0]["metadata"]["labels"][step] == "1"


def test_gang_demo_fits_either_gang_on_5_nodes_of_4_cpus_but_not_both() -> None:
    objects = load_documents(DEMOS / "gang-demo.yaml")
    groups = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PodGroup"}
    jobs = [o for o in objects if o["kind"] == "Job"]
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"} == {
        "gangs"
    }
    capacity = 5 * 4000
    sizes = []
    for job in jobs:
        template = job["spec"]["template"]
        group = groups[template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"]]
        spec = template["spec"]
        assert spec["schedulerName"] == NAME
        (container,) = spec["containers"]
        cpu = millicpu(container["resources"]["requests"]["cpu"])
        assert 4000 % cpu == 0, "pods would leave CPU unused on every node"
        members = job["spec"]["parallelism"]
        assert members == job["spec"]["completions"] == group["spec"]["minMember"]
        sizes.append(members * cpu)
    assert len(sizes) == 2
    assert all(size <= capacity for size in sizes)
    assert sum(sizes) > capacity


# --- rendered with kubectl kustomize ------------------------------------------------------------


def generated_config(rendered: dict[tuple[str, str], Obj]) -> tuple[str, SchedulerConfig]:
    """(name, configuration) of the one generated ConfigMap; the Deployment must mount it."""
    configmap = one(rendered, "ConfigMap")
    name = configmap["metadata"]["name"]
    assert name.startswith(f"{CONFIGMAP}-"), "no content hash in the ConfigMap's name"
    volumes = rendered[("Deployment", NAME)]["spec"]["template"]["spec"]["volumes"]
    assert name in [v["configMap"]["name"] for v in volumes if "configMap" in v]
    return name, scheduler_config(configmap)[1]


def without_configmaps(keys: Any) -> set[tuple[str, str]]:
    return {key for key in keys if key[0] != "ConfigMap"}


def test_rendered_base_matches_the_files() -> None:
    rendered = by_kind(kustomize(MANIFESTS))
    assert without_configmaps(rendered) == set(base_objects())
    _, config = generated_config(rendered)
    assert config.leader_election.resource_namespace == NAMESPACE
    container = deployment_container(rendered[("Deployment", NAME)])
    assert container["image"] == f"{IMAGE}:{importlib.metadata.version('kopf-scheduler')}"


def test_a_config_change_renames_the_configmap_and_so_rolls_the_deployment(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    name, _ = generated_config(by_kind(kustomize(copy)))
    config = copy / "base" / "config.yaml"
    config.write_text(
        config.read_text().replace("maxBytes: 16384", "maxBytes: 8192"), encoding="utf-8"
    )
    changed = by_kind(kustomize(copy))
    changed_name, changed_config = generated_config(changed)
    assert changed_config.extensions.explanations.max_bytes == 8192
    assert changed_name != name


def test_rendered_kube_system_overlay_is_all_in_kube_system() -> None:
    rendered = by_kind(kustomize(KUBE_SYSTEM))
    assert ("Namespace", NAMESPACE) not in rendered
    # The bootstrap FlowSchemas classify kube-system's ServiceAccounts as the base's would.
    left_out = {"Namespace", "FlowSchema"}
    assert without_configmaps(rendered) == {k for k in base_objects() if k[0] not in left_out}
    for (kind, name), obj in rendered.items():
        if kind not in CLUSTER_SCOPED_KINDS:
            assert obj["metadata"]["namespace"] == "kube-system", (kind, name)
        for subject in obj.get("subjects", []):
            assert subject["namespace"] == "kube-system", (kind, name)
    _, config = generated_config(rendered)
    assert config.leader_election.resource_namespace == "kube-system"
    role = one(rendered, "Role")
    assert role["metadata"]["namespace"] == config.leader_election.resource_namespace
    assert set(iter_rules(role)) == EXPECTED_LEASE_RULES
    assert set(iter_rules(one(rendered, "ClusterRole"))) == EXPECTED_CLUSTER_RULES


def test_rendered_servicemonitor_overlay_adds_only_the_monitor() -> None:
    rendered = by_kind(kustomize(SERVICEMONITOR))
    assert without_configmaps(rendered) - set(base_objects()) == {("ServiceMonitor", NAME)}


def test_rendered_kind_overlay_points_at_the_e2e_image() -> None:
    rendered = by_kind(kustomize(KIND_OVERLAY))
    container = deployment_container(rendered[("Deployment", NAME)])
    assert container["image"] == "kopf-scheduler:e2e"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert rendered[("Deployment", NAME)]["metadata"]["namespace"] == NAMESPACE


def test_secure_metrics_rbac_delegates_auth_and_offers_a_reader_role() -> None:
    objects = base_objects()
    delegator = objects[("ClusterRoleBinding", "kopf-scheduler-auth-delegator")]
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": "kopf-scheduler"}
    ]
    reader = objects[("ClusterRole", "kopf-scheduler-metrics-reader")]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
