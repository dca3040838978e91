from pathlib import Path

import pytest

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import (
    check_config_file,
    default_config,
    parse_config,
    parse_duration,
)
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.config.types import Profile
from kopf_scheduler.framework.handle import Handle

BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def cfg(**fields):
    return {**BASE, **fields}


def test_defaults_match_upstream_except_our_names() -> None:
    config = default_config()
    assert [p.scheduler_name for p in config.profiles] == ["kopf-scheduler"]
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.percentage_of_nodes_to_score is None
    assert config.client_connection.qps == 50
    assert config.client_connection.burst == 100
    election = config.leader_election
    assert (
        election.leader_elect,
        election.lease_duration,
        election.renew_deadline,
        election.retry_period,
    ) == (True, 15, 10, 2)
    assert election.resource_name == "kopf-scheduler"
    assert election.resource_namespace == "kube-system"


def test_default_profile_plugins_and_weights() -> None:
    plugins = build_profile_plugins(Profile(), Handle())
    assert [p.name for p in plugins.filter] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ]
    assert [p.name for p in plugins.pre_filter] == [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ]
    assert [(p.name, w) for p, w in plugins.score] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert [p.name for p in plugins.post_filter] == ["DynamicResources", "DefaultPreemption"]
    assert [p.name for p in plugins.pre_enqueue] == [
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
    ]
    assert [p.name for p in plugins.reserve] == ["VolumeBinding", "DynamicResources"]
    assert [p.name for p in plugins.pre_bind] == ["VolumeBinding", "DynamicResources"]
    assert [p.name for p in plugins.bind] == ["DefaultBinder"]
    assert plugins.queue_sort is not None and plugins.queue_sort.name == "PrioritySort"


def test_disable_and_reweight_via_multipoint_and_score() -> None:
    config = parse_config(
        cfg(
            profiles=[
                {
                    "schedulerName": "s",
                    "plugins": {
                        "multiPoint": {
                            "disabled": [{"name": "ImageLocality"}],
                            "enabled": [{"name": "NodeAffinity", "weight": 7}],
                        },
                        "score": {
                            "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                            "enabled": [{"name": "TaintToleration", "weight": 9}],
                        },
                    },
                }
            ]
        )
    )
    plugins = build_profile_plugins(config.profiles[0], Handle())
    assert [(p.name, w) for p, w in plugins.score] == [
        ("TaintToleration", 9),
        ("NodeAffinity", 7),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
    ]


def test_star_disables_a_point() -> None:
    config = parse_config(cfg(profiles=[{"plugins": {"score": {"disabled": [{"name": "*"}]}}}]))
    assert build_profile_plugins(config.profiles[0], Handle()).score == []


def test_plugin_args_reach_the_plugin() -> None:
    config = parse_config(
        cfg(
            profiles=[
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated"}},
                        }
                    ]
                }
            ]
        )
    )
    assert (
        config.profiles[0].plugin_config["NodeResourcesFit"]["scoringStrategy"]["type"]
        == "MostAllocated"
    )


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            {"kind": "KubeSchedulerConfiguration"},
            "apiVersion",
            "must be",
            id="missing-api-version",
        ),
        pytest.param({**BASE, "kind": "Other"}, "kind", "must be", id="wrong-kind"),
        pytest.param(cfg(bogus=1), "bogus", "unknown field", id="unknown-top-level"),
        pytest.param(cfg(profiles=[]), "profiles", "non-empty", id="empty-profiles"),
        pytest.param(
            cfg(profiles=[{"schedulerName": ""}]),
            "profiles[0].schedulerName",
            "must not be empty",
            id="empty-name",
        ),
        pytest.param(
            cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
            "profiles[1].schedulerName",
            "duplicate",
            id="duplicate-profile",
        ),
        pytest.param(
            cfg(profiles=[{"color": "red"}]),
            "profiles[0].color",
            "unknown field",
            id="unknown-profile-field",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"filters": {}}}]),
            "profiles[0].plugins.filters",
            "unknown field",
            id="unknown-extension-point",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]),
            "profiles[0].plugins.filter.enabled[0].name",
            "unknown plugin 'Nope'",
            id="unknown-plugin",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}]),
            "profiles[0].plugins.filter.enabled[0].name",
            "not supported",
            id="in-tree-volume-limits-plugin",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}}]),
            "profiles[0].plugins.filter.enabled",
            "does not extend the filter",
            id="wrong-extension-point",
        ),
        pytest.param(
            cfg(
                profiles=[
                    {"plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": 101}]}}}
                ]
            ),
            "profiles[0].plugins.score.enabled[0].weight",
            "at most 100",
            id="weight-too-high",
        ),
        pytest.param(
            cfg(profiles=[{"pluginConfig": [{"name": "Nope", "args": {}}]}]),
            "profiles[0].pluginConfig[0].name",
            "unknown plugin",
            id="args-for-unknown-plugin",
        ),
        pytest.param(
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "DefaultPreemption",
                                "args": {"minCandidateNodesPercentage": 101},
                            }
                        ]
                    }
                ]
            ),
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
            "",
            id="bad-plugin-arg",
        ),
        pytest.param(
            cfg(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"colour": 1}}]}]),
            "profiles[0].pluginConfig[0].args.colour",
            "unknown field",
            id="unknown-plugin-arg",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"queueSort": {"disabled": [{"name": "*"}]}}}]),
            "profiles[0].plugins.queueSort",
            "no queue sort",
            id="no-queue-sort",
        ),
        pytest.param(
            cfg(profiles=[{"plugins": {"bind": {"disabled": [{"name": "*"}]}}}]),
            "profiles[0].plugins.bind",
            "bind plugin",
            id="no-binder",
        ),
        pytest.param(
            cfg(percentageOfNodesToScore=101),
            "percentageOfNodesToScore",
            "at most 100",
            id="percentage-too-high",
        ),
        pytest.param(
            cfg(podInitialBackoffSeconds=0),
            "podInitialBackoffSeconds",
            "at least 1",
            id="zero-backoff",
        ),
        pytest.param(
            cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
            "podMaxBackoffSeconds",
            "greater than or equal",
            id="max-below-initial",
        ),
        pytest.param(
            cfg(leaderElection={"resourceName": "kube-scheduler"}),
            "leaderElection.resourceName",
            "default scheduler",
            id="stolen-lease-name",
        ),
        pytest.param(
            cfg(leaderElection={"leaseDuration": "5s", "renewDeadline": "10s"}),
            "leaderElection.leaseDuration",
            "greater than renewDeadline",
            id="lease-shorter-than-renew",
        ),
        pytest.param(
            cfg(leaderElection={"retryPeriod": "fast"}),
            "leaderElection.retryPeriod",
            "duration",
            id="bad-duration",
        ),
        pytest.param(
            cfg(leaderElection={"resourceLock": "endpoints"}),
            "leaderElection.resourceLock",
            "only 'leases'",
            id="endpoints-lock",
        ),
        pytest.param(
            cfg(clientConnection={"qps": float("nan")}),
            "clientConnection.qps",
            "finite",
            id="nan-qps",
        ),
        pytest.param(
            cfg(clientConnection={"burst": -1}),
            "clientConnection.burst",
            "at least 0",
            id="negative-burst",
        ),
        pytest.param(
            cfg(extenders=[{"urlPrefix": "http://x"}]), "extenders", "not supported", id="extenders"
        ),
        pytest.param(
            cfg(kopfScheduler={"explanations": {"annotate": "sometimes"}}),
            "kopfScheduler.explanations.annotate",
            "none, failures or all",
            id="bad-annotate-mode",
        ),
        pytest.param(
            cfg(kopfScheduler={"nominationHygiene": "yes"}),
            "kopfScheduler.nominationHygiene",
            "true or false",
            id="bad-hygiene-flag",
        ),
    ],
)
def test_rejections_name_the_field(raw, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert info.value.field == field
    assert reason in info.value.reason


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 200\n"
    )
    with pytest.raises(ConfigError) as info:
        check_config_file(path)
    assert str(info.value) == f"{path}: percentageOfNodesToScore: must be at most 100, got 200"


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        check_config_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        check_config_file(bad)
    assert str(info.value) == (
        f"{bad}: line 2, column 1: not valid YAML: while parsing a flow sequence, "
        "expected ',' or ']', but got '<stream end>'"
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("15s", 15), ("1m30s", 90), ("250ms", 0.25), ("2h", 7200), ("1.5s", 1.5)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, "f") == pytest.approx(seconds)
