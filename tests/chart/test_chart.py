"""The chart's objects: what each value combination must produce, beyond the goldens.

The chart and the kustomize manifests deploy the same scheduler, so the RBAC and the
Deployment's essentials are compared with ``manifests/base``. helm runs from the cache and the
tests skip when it is not built (``make helm``).
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.config.types import SchedulerConfig
from tests.chart.helm import (
    CASES,
    CHART,
    Case,
    Obj,
    case_params,
    one,
    render,
    run_helm,
    template_result,
)
from tests.deploy.manifest_files import (
    BASE,
    CRDS,
    base_objects,
    deployment_container,
    iter_rules,
)

DEFAULT = Case("default")
SELECTOR = {
    "app.kubernetes.io/name": "kopf-scheduler",
    "app.kubernetes.io/instance": "kopf-scheduler",
    "app.kubernetes.io/component": "scheduler",
}


def chart_metadata() -> Obj:
    loaded = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def configuration(objects: dict[tuple[str, str], Obj]) -> SchedulerConfig:
    (configmap,) = [
        o for (k, n), o in objects.items() if k == "ConfigMap" and n.endswith("-config")
    ]
    return parse_config(yaml.safe_load(configmap["data"]["config.yaml"]))


def pod_spec(objects: dict[tuple[str, str], Obj]) -> Obj:
    spec: Obj = one(objects, "Deployment")["spec"]["template"]["spec"]
    return spec


def checksum(overrides: dict[str, Any]) -> str:
    deployment = one(render(DEFAULT, overrides), "Deployment")
    value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    return value


# --- the chart itself -------------------------------------------------------------------------


def test_app_version_is_the_package_version() -> None:
    assert chart_metadata()["appVersion"] == importlib.metadata.version("kopf-scheduler")


def test_chart_is_a_helm_3_application_chart() -> None:
    metadata = chart_metadata()
    assert metadata["apiVersion"] == "v2"
    assert metadata["type"] == "application"
    assert metadata["name"] == CHART.name
    json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", case_params())
def test_lint_is_clean(case: Case) -> None:
    result = run_helm(
        "lint", "--strict", CHART, "--namespace", case.namespace, "--values", case.values_file
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout
    assert "[ERROR]" not in result.stdout


# --- every combination --------------------------------------------------------------------------


@pytest.mark.parametrize("case", case_params())
def test_configuration_passes_the_project_loader_and_names_the_lease_after_the_scheduler(
    case: Case,
) -> None:
    objects = render(case)
    config = configuration(objects)
    name = case.values().get("scheduler", {}).get("name", "kopf-scheduler")
    assert config.profiles[0].scheduler_name == name
    election = config.leader_election
    assert (election.resource_name, election.resource_namespace) == (name, case.namespace)
    container = deployment_container(one(objects, "Deployment"))
    assert container["args"][:3] == ["run", "--config", "/etc/kopf-scheduler/config.yaml"]


@pytest.mark.parametrize("case", case_params())
def test_every_object_is_labelled_and_in_the_release_namespace(case: Case) -> None:
    for (kind, name), obj in render(case).items():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == case.release, (kind, name)
        assert labels["app.kubernetes.io/managed-by"] == "Helm", (kind, name)
        assert labels["app.kubernetes.io/version"] == chart_metadata()["appVersion"]
        if kind in ("ClusterRole", "ClusterRoleBinding", "FlowSchema"):
            assert "namespace" not in obj["metadata"]
        elif not (kind == "ConfigMap" and name.endswith("-dashboard")):
            assert obj["metadata"]["namespace"] == case.namespace, (kind, name)


@pytest.mark.parametrize("case", case_params())
def test_selectors_agree_and_never_carry_the_version(case: Case) -> None:
    objects = render(case)
    deployment = one(objects, "Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert set(selector) == set(SELECTOR)
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert one(objects, "Service")["spec"]["selector"] == selector
    for kind, path in (
        ("PodDisruptionBudget", ("spec", "selector", "matchLabels")),
        ("NetworkPolicy", ("spec", "podSelector", "matchLabels")),
        ("ServiceMonitor", ("spec", "selector", "matchLabels")),
    ):
        for (found, _), obj in objects.items():
            if found == kind:
                for key in path:
                    obj = obj[key]
                assert obj == selector, kind


# --- the same scheduler as manifests/base ------------------------------------------------------


@pytest.mark.parametrize("case", case_params())
def test_cluster_role_is_the_manifests_cluster_role(case: Case) -> None:
    manifests = base_objects()[("ClusterRole", "kopf-scheduler")]
    assert one(render(case), "ClusterRole")["rules"] == manifests["rules"]


@pytest.mark.parametrize("case", case_params())
def test_secure_metrics_rbac_is_the_manifests_one(case: Case) -> None:
    objects = render(case)
    account = one(objects, "ServiceAccount")["metadata"]
    (delegator,) = [o for (k, n), o in objects.items() if n.endswith("-auth-delegator")]
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    (reader,) = [o for (k, n), o in objects.items() if n.endswith("-metrics-reader")]
    manifests = base_objects()[("ClusterRole", "kopf-scheduler-metrics-reader")]
    assert reader["rules"] == manifests["rules"]


@pytest.mark.parametrize("case", case_params())
def test_lease_role_is_the_manifests_one_for_the_scheduler_name(case: Case) -> None:
    objects = render(case)
    if not case.values().get("scheduler", {}).get("leaderElect", True):
        assert not [k for k in objects if k[0] in ("Role", "RoleBinding")]
        return
    name = configuration(objects).leader_election.resource_name
    (manifests,) = [o for (k, _), o in base_objects().items() if k == "Role"]
    expected = {(g, r, v, (name,) if n else ()) for g, r, v, n in iter_rules(manifests)}
    role = one(objects, "Role")
    assert set(iter_rules(role)) == expected
    binding = one(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    account = one(objects, "ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert one(objects, "ClusterRoleBinding")["subjects"] == binding["subjects"]
    assert pod_spec(objects)["serviceAccountName"] == account["name"]


def test_pod_group_crd_is_the_manifests_one() -> None:
    chart_crd = CHART / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
    assert [p.name for p in (CHART / "crds").iterdir()] == [chart_crd.name]
    assert chart_crd.read_bytes() == (CRDS / chart_crd.name).read_bytes()


def raw_profile(objects: dict[tuple[str, str], Obj]) -> Obj:
    (configmap,) = [
        o for (k, n), o in objects.items() if k == "ConfigMap" and n.endswith("-config")
    ]
    profile: Obj = yaml.safe_load(configmap["data"]["config.yaml"])["profiles"][0]
    return profile


def test_gang_scheduling_is_on_by_default_as_in_the_manifests() -> None:
    (manifests,) = yaml.safe_load((BASE / "config.yaml").read_text(encoding="utf-8"))["profiles"]
    profile = raw_profile(render(DEFAULT))
    assert profile["plugins"] == manifests["plugins"]
    assert profile["pluginConfig"] == manifests["pluginConfig"]


def test_gang_scheduling_off_leaves_the_default_profile() -> None:
    profile = raw_profile(render(DEFAULT, {"gangScheduling": {"enabled": False}}))
    assert profile == {"schedulerName": "kopf-scheduler"}


def test_gang_scheduling_joins_the_users_plugins_and_yields_to_their_arguments() -> None:
    own_args = {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 5}}
    overrides = {
        "plugins": {"extensionPoints": {"reserve": {"enabled": [{"name": "VolumeBinding"}]}}},
        "pluginConfig": [own_args],
    }
    objects = render(DEFAULT, overrides)
    profile = raw_profile(objects)
    assert profile["plugins"]["reserve"] == {
        "enabled": [{"name": "VolumeBinding"}, {"name": "Coscheduling"}]
    }
    assert profile["pluginConfig"] == [own_args]
    assert configuration(objects).profiles[0].plugin_config["Coscheduling"] == own_args["args"]


def test_gang_scheduling_arguments_come_from_the_values() -> None:
    overrides = {"gangScheduling": {"permitWaitingTimeSeconds": 30, "podGroupBackoffSeconds": 10}}
    (entry,) = raw_profile(render(DEFAULT, overrides))["pluginConfig"]
    assert entry == {
        "name": "Coscheduling",
        "args": {"permitWaitingTimeSeconds": 30, "podGroupBackoffSeconds": 10},
    }


def test_extra_profiles_share_the_coscheduling_queue_sort_unless_they_name_one() -> None:
    own_sort = {"enabled": [{"name": "PrioritySort"}], "disabled": [{"name": "*"}]}
    overrides = {
        "extraProfiles": [
            {"schedulerName": "plain"},
            {"schedulerName": "sorted", "plugins": {"queueSort": own_sort}},
        ]
    }
    (configmap,) = [
        o
        for (k, n), o in render(DEFAULT, overrides).items()
        if k == "ConfigMap" and n.endswith("-config")
    ]
    _, plain, sorted_ = yaml.safe_load(configmap["data"]["config.yaml"])["profiles"]
    assert plain["plugins"] == {
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
    }
    assert sorted_["plugins"] == {"queueSort": own_sort}


def test_default_deployment_runs_as_the_manifests_do() -> None:
    objects = render(DEFAULT)
    chart = one(objects, "Deployment")
    (manifests,) = [o for (k, _), o in base_objects().items() if k == "Deployment"]
    for key in ("replicas", "strategy", "revisionHistoryLimit"):
        assert chart["spec"][key] == manifests["spec"][key], key
    ours, theirs = chart["spec"]["template"]["spec"], manifests["spec"]["template"]["spec"]
    for key in ("priorityClassName", "terminationGracePeriodSeconds", "securityContext"):
        assert ours[key] == theirs[key], key
    container, reference = deployment_container(chart), deployment_container(manifests)
    for key in ("securityContext", "resources", "volumeMounts"):
        assert container[key] == reference[key], key
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["path"] == reference[probe]["httpGet"]["path"]
    assert container["ports"][0]["containerPort"] == reference["ports"][0]["containerPort"]
    assert [v.get("emptyDir") for v in ours["volumes"]] == [
        v.get("emptyDir") for v in theirs["volumes"]
    ]
    (spread,) = ours["topologySpreadConstraints"]
    (reference_spread,) = theirs["topologySpreadConstraints"]
    assert {k: v for k, v in spread.items() if k != "labelSelector"} == {
        k: v for k, v in reference_spread.items() if k != "labelSelector"
    }
    budget = one(objects, "PodDisruptionBudget")["spec"]
    assert (
        budget["maxUnavailable"]
        == base_objects()[("PodDisruptionBudget", "kopf-scheduler")]["spec"]["maxUnavailable"]
    )


# --- single values ------------------------------------------------------------------------------


def test_a_config_change_changes_the_checksum_and_nothing_else_does() -> None:
    default = checksum({})
    assert checksum({"pluginConfig": [{"name": "NodeResourcesFit", "args": {}}]}) != default
    assert checksum({"kopfScheduler": {"nominationHygiene": False}}) != default
    assert checksum({"scheduler": {"replicaCount": 3}}) == default
    assert checksum({"scheduler": {"image": {"tag": "9.9.9"}}}) == default


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        pytest.param(
            {},
            f"ghcr.io/kopf-scheduler/kopf-scheduler:{importlib.metadata.version('kopf-scheduler')}",
            id="app-version",
        ),
        pytest.param({"tag": "1.2.3"}, "ghcr.io/kopf-scheduler/kopf-scheduler:1.2.3", id="tag"),
        pytest.param(
            {"repository": "r.example/ks", "tag": "1.2.3", "digest": "sha256:" + "ab" * 32},
            "r.example/ks@sha256:" + "ab" * 32,
            id="digest-wins",
        ),
    ],
)
def test_image_reference(image: Obj, expected: str) -> None:
    container = deployment_container(
        one(render(DEFAULT, {"scheduler": {"image": image}}), "Deployment")
    )
    assert container["image"] == expected


@pytest.mark.parametrize(
    ("scheduler", "expected"),
    [
        pytest.param({}, "preferredDuringSchedulingIgnoredDuringExecution", id="soft"),
        pytest.param(
            {"podAntiAffinity": "hard"}, "requiredDuringSchedulingIgnoredDuringExecution", id="hard"
        ),
        pytest.param({"podAntiAffinity": "none"}, None, id="none"),
        pytest.param(
            {"affinity": {"nodeAffinity": {"x": 1}}, "podAntiAffinity": "hard"},
            "custom",
            id="custom",
        ),
    ],
)
def test_anti_affinity_over_nodes(scheduler: Obj, expected: str | None) -> None:
    affinity = pod_spec(render(DEFAULT, {"scheduler": scheduler})).get("affinity")
    if expected is None:
        assert affinity is None
        return
    if expected == "custom":
        assert affinity == scheduler["affinity"]
        return
    (rule,) = affinity["podAntiAffinity"][expected]
    term = rule.get("podAffinityTerm", rule)
    assert term == {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": SELECTOR},
    }


def test_spread_constraints_get_the_pod_selector_unless_they_have_one() -> None:
    own = {"matchLabels": {"team": "a"}}
    constraints = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {
            "maxSkew": 2,
            "topologyKey": "rack",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": own,
        },
    ]
    spec = pod_spec(render(DEFAULT, {"scheduler": {"topologySpreadConstraints": constraints}}))
    assert spec["topologySpreadConstraints"] == [
        {**constraints[0], "labelSelector": {"matchLabels": SELECTOR}},
        constraints[1],
    ]


def test_network_policy_admits_the_health_port_and_reaches_the_api_server() -> None:
    objects = render(DEFAULT, {"networkPolicy": {"enabled": True}})
    policy = one(objects, "NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["ingress"]
    assert ingress == {"ports": [{"port": "https-metrics", "protocol": "TCP"}]}
    (egress,) = policy["egress"]
    assert egress == {
        "ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]
    }
    assert deployment_container(one(objects, "Deployment"))["ports"][0]["name"] == "https-metrics"


def test_opt_in_objects_are_absent_by_default() -> None:
    kinds = {kind for kind, _ in render(DEFAULT)}
    assert kinds == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ResourceQuota",  # admits system-cluster-critical outside kube-system
        "FlowSchema",  # kube-scheduler's API priority levels for the ServiceAccount
        "Pod",  # the helm test hook
        "Job",  # the configuration check hook
    }


# --- the dashboard and alert rules in the chart -------------------------------------------------


def test_prometheus_rule_carries_the_chart_alert_rules_untouched() -> None:
    source = CHART / "files" / "alerts.yaml"
    rule = one(render(DEFAULT, {"prometheusRule": {"enabled": True}}), "PrometheusRule")
    assert rule["spec"]["groups"] == yaml.safe_load(source.read_text(encoding="utf-8"))["groups"]


def test_dashboard_config_map_carries_the_chart_dashboard_untouched() -> None:
    source = CHART / "files" / "dashboard.json"
    objects = render(DEFAULT, {"grafanaDashboard": {"enabled": True}})
    (dashboard,) = [
        o for (k, n), o in objects.items() if k == "ConfigMap" and n.endswith("-dashboard")
    ]
    assert json.loads(dashboard["data"]["kopf-scheduler.json"]) == json.loads(source.read_text())


# --- values that would deploy a broken scheduler -------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"scheduler": {"name": "kube-scheduler"}},
            "scheduler.name must not be kube-scheduler: it names the leader-election Lease",
            id="lease-of-the-default-scheduler",
        ),
        pytest.param(
            {"scheduler": {"leaderElect": False}},
            "scheduler.replicaCount above 1 needs scheduler.leaderElect=true",
            id="replicas-without-election",
        ),
        pytest.param(
            {"podDisruptionBudget": {"minAvailable": 1}},
            "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable",
            id="budget-both",
        ),
        pytest.param(
            {"podDisruptionBudget": {"maxUnavailable": None}},
            "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable",
            id="budget-neither",
        ),
        pytest.param(
            {"schedulerConfig": {"profiles": []}},
            "schedulerConfig.profiles comes from the values scheduler.name, plugins",
            id="profiles-in-scheduler-config",
        ),
        pytest.param(
            {"scheduler": {"replicas": 3}},
            "at '/scheduler': additional properties 'replicas' not allowed",
            id="unknown-value",
        ),
        pytest.param(
            {"scheduler": {"podAntiAffinity": "maybe"}},
            "at '/scheduler/podAntiAffinity': value must be one of 'soft', 'hard', 'none'",
            id="bad-anti-affinity",
        ),
        pytest.param(
            {"scheduler": {"leaderElection": {"leaseDuration": "15"}}},
            "at '/scheduler/leaderElection/leaseDuration'",
            id="duration-without-unit",
        ),
        pytest.param(
            {"scheduler": {"apiPriority": {"priorityLevel": ""}}},
            "at '/scheduler/apiPriority/priorityLevel'",
            id="empty-priority-level",
        ),
        pytest.param(
            {"gangScheduling": {"permitWaitingTimeSeconds": -1}},
            "at '/gangScheduling/permitWaitingTimeSeconds'",
            id="negative-permit-wait",
        ),
    ],
)
def test_bad_values_fail_with_a_clear_message(overrides: Obj, message: str) -> None:
    result = template_result(DEFAULT, overrides)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"prometheusRule": {"enabled": True}},
            "prometheusRule.enabled needs files/alerts.yaml in the chart, and it is missing",
            id="rules",
        ),
        pytest.param(
            {"grafanaDashboard": {"enabled": True}},
            "grafanaDashboard.enabled needs files/dashboard.json in the chart, and it is missing",
            id="dashboard",
        ),
    ],
)
def test_opt_ins_without_their_file_fail_with_a_clear_message(
    overrides: Obj, message: str, tmp_path: Path
) -> None:
    copy = tmp_path / CHART.name
    shutil.copytree(CHART, copy)
    shutil.rmtree(copy / "files", ignore_errors=True)
    result = template_result(DEFAULT, overrides, chart=copy)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_resource_quota_admits_the_critical_class_outside_kube_system() -> None:
    objects = render(DEFAULT)
    quota = one(objects, "ResourceQuota")
    assert quota["spec"] == {
        "hard": {"pods": "3"},
        "scopeSelector": {
            "matchExpressions": [
                {
                    "scopeName": "PriorityClass",
                    "operator": "In",
                    "values": ["system-cluster-critical"],
                }
            ]
        },
    }
    assert pod_spec(objects)["priorityClassName"] == "system-cluster-critical"
    kube_system = next(case for case in CASES if case.namespace == "kube-system")
    assert not [k for k, _ in render(kube_system) if k == "ResourceQuota"]
    for overrides in (
        {"scheduler": {"priorityClassQuota": False}},
        {"scheduler": {"priorityClassName": "my-class"}},
    ):
        assert not [k for k, _ in render(DEFAULT, overrides) if k == "ResourceQuota"]


def flow_schemas(objects: dict[tuple[str, str], Obj]) -> dict[str, Obj]:
    return {name: obj for (kind, name), obj in objects.items() if kind == "FlowSchema"}


@pytest.mark.parametrize("case", case_params())
def test_flow_schemas_are_the_manifests_ones_for_the_release_account(case: Case) -> None:
    objects = render(case)
    found = flow_schemas(objects)
    if case.namespace == "kube-system":
        assert found == {}
        return
    account = one(objects, "ServiceAccount")["metadata"]
    name = account["name"]
    manifests = {n: o for (k, n), o in base_objects().items() if k == "FlowSchema"}
    expected = {
        "kopf-scheduler": name,
        "kopf-scheduler-leader-election": f"{name}-leader-election",
    }
    if not case.values().get("scheduler", {}).get("leaderElect", True):
        del expected["kopf-scheduler-leader-election"]
    assert set(found) == set(expected.values())
    for manifests_name, chart_name in expected.items():
        spec = copy.deepcopy(manifests[manifests_name]["spec"])
        (rule,) = spec["rules"]
        rule["subjects"] = [
            {
                "kind": "ServiceAccount",
                "serviceAccount": {"name": name, "namespace": account["namespace"]},
            }
        ]
        for resource_rule in rule["resourceRules"]:
            if resource_rule["namespaces"] != ["*"]:
                resource_rule["namespaces"] = [account["namespace"]]
        assert found[chart_name]["spec"] == spec, chart_name


def test_flow_schemas_take_the_priority_levels_and_can_be_left_out() -> None:
    levels = {"priorityLevel": "my-high", "leaderElectionPriorityLevel": "my-election"}
    found = flow_schemas(render(DEFAULT, {"scheduler": {"apiPriority": levels}}))
    assert {
        name: obj["spec"]["priorityLevelConfiguration"]["name"] for name, obj in found.items()
    } == {"kopf-scheduler": "my-high", "kopf-scheduler-leader-election": "my-election"}
    assert flow_schemas(render(DEFAULT, {"scheduler": {"apiPriority": {"enabled": False}}})) == {}


def test_a_serving_certificate_secret_is_mounted_and_served() -> None:
    objects = render(DEFAULT, {"scheduler": {"tls": {"secretName": "serving"}}})
    spec = pod_spec(objects)
    [container] = spec["containers"]
    args = container["args"]
    assert args[args.index("--tls-cert-file") + 1] == "/etc/kopf-scheduler/tls/tls.crt"
    assert args[args.index("--tls-private-key-file") + 1] == "/etc/kopf-scheduler/tls/tls.key"
    assert {"name": "tls", "secret": {"secretName": "serving"}} in spec["volumes"]
    assert {
        "name": "tls",
        "mountPath": "/etc/kopf-scheduler/tls",
        "readOnly": True,
    } in container["volumeMounts"]


def test_extra_volumes_and_security_contexts_are_taken() -> None:
    hardened = next(case for case in CASES if case.name == "hardened")
    spec = pod_spec(render(hardened))
    [container] = spec["containers"]
    assert spec["securityContext"]["fsGroup"] == 10001
    assert container["securityContext"]["runAsUser"] == 10001
    assert "privileged" not in container["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "plugin-data", "configMap": {"name": "plugin-data"}} in spec["volumes"]
    assert container["volumeMounts"][-1]["mountPath"] == "/etc/plugin-data"


def test_the_service_monitor_verifies_the_serving_certificate_and_sends_its_own_token() -> None:
    monitoring = next(case for case in CASES if case.name == "monitoring")
    objects = render(monitoring)
    [endpoint] = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert "bearerTokenFile" not in endpoint
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "kopf-scheduler-serving", "key": "ca.crt"}},
        "serverName": "kopf-scheduler-metrics.kopf-scheduler.svc",
    }
    scraper = "kopf-scheduler-metrics-scraper"
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": scraper, "key": "token"},
    }
    secret = objects[("Secret", scraper)]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": scraper}
    assert ("ServiceAccount", scraper) in objects
    binding = objects[("ClusterRoleBinding", scraper)]
    assert binding["roleRef"]["name"] == "kopf-scheduler-metrics-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": scraper, "namespace": "kopf-scheduler"}
    ]


def test_the_service_monitor_takes_credentials_and_tls_of_its_own() -> None:
    hardened = next(case for case in CASES if case.name == "hardened")
    objects = render(hardened)
    [endpoint] = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["authorization"] == hardened.values()["serviceMonitor"]["authorization"]
    assert endpoint["tlsConfig"] == hardened.values()["serviceMonitor"]["tlsConfig"]
    assert not [name for kind, name in objects if name.endswith("-metrics-scraper")]


def test_a_service_monitor_without_a_way_to_verify_the_certificate_is_refused() -> None:
    result = template_result(DEFAULT, {"serviceMonitor": {"enabled": True}})
    assert result.returncode != 0
    assert "serviceMonitor: set scheduler.tls.secretName" in result.stderr
    insecure = {"serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True}}}
    [endpoint] = one(render(DEFAULT, insecure), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_helm_test_is_a_pod_for_this_scheduler() -> None:
    kube_system = next(case for case in CASES if case.namespace == "kube-system")
    objects = render(kube_system)
    test_pod = objects[("Pod", "my-scheduler-kopf-scheduler-test")]
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert test_pod["spec"]["schedulerName"] == "my-scheduler"
    assert test_pod["spec"]["restartPolicy"] == "Never"
    assert not [k for k, _ in render(DEFAULT, {"test": {"enabled": False}}) if k == "Pod"]


def test_the_helm_test_pod_goes_where_the_schedulers_pods_may() -> None:
    pinned = {
        "scheduler": {
            "nodeSelector": {"pool": "system"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        }
    }
    test_pod = one(render(DEFAULT, pinned), "Pod")
    assert test_pod["spec"]["nodeSelector"] == {"pool": "system"}
    assert test_pod["spec"]["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert "nodeSelector" not in one(render(DEFAULT), "Pod")["spec"]


# --- the configuration check hook ---------------------------------------------------------------


def config_check(objects: dict[tuple[str, str], Obj]) -> tuple[Obj, Obj]:
    """The check's ConfigMap and Job."""
    (configmap,) = [
        o for (k, n), o in objects.items() if k == "ConfigMap" and n.endswith("-config-check")
    ]
    return configmap, one(objects, "Job")


@pytest.mark.parametrize("case", case_params())
def test_the_config_check_validates_this_release_configuration_before_install_and_upgrade(
    case: Case,
) -> None:
    objects = render(case)
    configmap, job = config_check(objects)
    (release_config,) = [
        o for (k, n), o in objects.items() if k == "ConfigMap" and n.endswith("-config")
    ]
    assert configmap["data"] == release_config["data"]
    for hook in (configmap, job):
        annotations = hook["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
        policies = annotations["helm.sh/hook-delete-policy"].split(",")
        assert {"before-hook-creation", "hook-succeeded", "hook-failed"} == set(policies)
    weights = [
        int(hook["metadata"]["annotations"]["helm.sh/hook-weight"]) for hook in (configmap, job)
    ]
    assert weights[0] < weights[1]  # the ConfigMap exists before the Job's pod mounts it
    assert job["metadata"]["annotations"]["helm.sh/hook-output-log-policy"] == "hook-failed"
    assert job["spec"]["backoffLimit"] == 0

    spec = job["spec"]["template"]["spec"]
    scheduler = pod_spec(objects)
    [container] = spec["containers"]
    [scheduler_container] = scheduler["containers"]
    assert container["args"] == ["config", "validate", "/etc/kopf-scheduler/config.yaml"]
    assert {"name": "config", "configMap": {"name": configmap["metadata"]["name"]}} in spec[
        "volumes"
    ]
    assert {"name": "config", "mountPath": "/etc/kopf-scheduler", "readOnly": True} in container[
        "volumeMounts"
    ]
    for key in ("image", "imagePullPolicy", "securityContext", "env"):
        assert container.get(key) == scheduler_container.get(key), key
    for key in ("securityContext", "imagePullSecrets", "nodeSelector", "tolerations"):
        assert spec.get(key) == scheduler.get(key), key
    # Placed by the default scheduler, without the class a quota of this release admits.
    assert "schedulerName" not in spec
    assert "priorityClassName" not in spec
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    selector = one(objects, "Deployment")["spec"]["selector"]["matchLabels"]
    assert not selector.items() <= job["spec"]["template"]["metadata"]["labels"].items()


def test_the_config_check_takes_the_extra_volumes() -> None:
    hardened = next(case for case in CASES if case.name == "hardened")
    objects = render(hardened)
    _, job = config_check(objects)
    spec = job["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert {"name": "plugin-data", "configMap": {"name": "plugin-data"}} in spec["volumes"]
    assert container["volumeMounts"][-1]["mountPath"] == "/etc/plugin-data"


def test_the_config_check_carries_what_only_the_validator_refuses() -> None:
    typo = {"pluginConfig": [{"name": "NodeResourceFit", "args": {}}]}
    configmap, _ = config_check(render(DEFAULT, typo))
    with pytest.raises(ConfigError, match="did you mean 'NodeResourcesFit'"):
        parse_config(yaml.safe_load(configmap["data"]["config.yaml"]))


def test_the_config_check_can_be_turned_off() -> None:
    objects = render(DEFAULT, {"configCheck": {"enabled": False}})
    assert not [name for kind, name in objects if kind == "Job"]
    assert not [name for kind, name in objects if name.endswith("-config-check")]
    assert ("ConfigMap", "kopf-scheduler-config") in objects
