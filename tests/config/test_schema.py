"""The published JSON Schema of the configuration agrees with the reader (`config validate`).

Editors check a file against ``schema/kopf-scheduler-config.schema.json`` while it is written;
``config validate`` and ``run`` read it with :mod:`kopf_scheduler.config.loader`. The two must not
drift apart, so:

- the committed file is what ``kopf-scheduler config schema`` prints;
- a configuration setting every field is read while the fields each object of the reader (and
  each in-tree plugin's args parser) accepts are recorded: every recorded set is the schema's
  set of properties at that place, and every closed object of the schema is reached;
- every bad configuration of a table is refused by both, every unusual but valid one accepted
  by both, and every configuration shipped in the repository (manifests, the chart's rendered
  ConfigMaps, the example plugin, the docs) is accepted by the schema.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kopf_scheduler import plugin_api
from kopf_scheduler.config import loader
from kopf_scheduler.config.documents import load_yaml, load_yaml_all
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.schema import (
    ARGS_ENVELOPE,
    config_schema,
    config_schema_json,
)
from kopf_scheduler.framework import args as plugin_args
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.plugins import registry

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = "schema/kopf-scheduler-config.schema.json"
"""Where the repository publishes the schema, for editors that read it by path or URL."""
BASE = {"apiVersion": loader.API_VERSION, "kind": loader.KIND}
SCHEMA = config_schema()
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)

EVERY_FIELD = {
    **BASE,
    "profiles": [
        {
            "schedulerName": "kopf-scheduler",
            "percentageOfNodesToScore": 50,
            "plugins": {
                point: {"enabled": [], "disabled": []} for point in loader.EXTENSION_POINT_NAMES
            }
            | {"score": {"enabled": [{"name": "ImageLocality", "weight": 2}], "disabled": []}},
            "pluginConfig": [{"name": "DefaultPreemption", "args": {"pdbPolicy": "Strict"}}],
        }
    ],
    "percentageOfNodesToScore": 0,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 10,
    "parallelism": 16,
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceLock": "leases",
        "resourceName": "kopf-scheduler",
        "resourceNamespace": "kube-system",
    },
    "clientConnection": {
        "kubeconfig": "",
        "qps": 50,
        "burst": 100,
        "contentType": "application/json",
        "acceptContentTypes": "application/json",
    },
    "extenders": [],
    "enableProfiling": False,
    "enableContentionProfiling": False,
    "delayCacheUntilActive": False,
    "kopfScheduler": {
        "explanations": {"annotate": "all", "maxBytes": 16384},
        "nominationHygiene": True,
        "fastPath": True,
    },
}
"""A configuration that sets every field the reader knows outside plugin args."""


COSCHEDULING_PLUGINS = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"disabled": [{"name": "PrioritySort"}]},
}
"""Coscheduling is not a default plugin; its queue sort replaces PrioritySort."""


def schema_errors(document: Any) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(document)]


def validator_errors(document: Any) -> list[str]:
    try:
        loader.check_config(document)
    except ConfigError as error:
        return [str(each) for each in error.errors]
    return []


def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    return schema


def at_path(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The schema of the object the reader calls ``path`` (``profiles[0].plugins.score``)."""
    schema = resolve(schema)
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        schema = resolve(schema["items"] if index else schema["properties"][key])
    return schema


def closed_objects(
    schema: Mapping[str, Any], path: str = ""
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The path (``[]`` for any item) and schema of every object that lists its fields."""
    if "$ref" in schema:
        yield from closed_objects(resolve(schema), path)
        return
    if schema.get("additionalProperties") is False:
        yield path, schema
    for key, child in schema.get("properties", {}).items():
        yield from closed_objects(child, f"{path}.{key}" if path else key)
    if "items" in schema:
        yield from closed_objects(schema["items"], f"{path}[]")


def test_the_committed_file_is_what_the_command_prints() -> None:
    published = (ROOT / SCHEMA_FILE).read_text()
    assert published == config_schema_json(), (
        f"{SCHEMA_FILE} is out of date: kopf-scheduler config schema > {SCHEMA_FILE}"
    )


def test_the_schema_is_a_valid_draft_7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_every_field_the_reader_accepts_is_in_the_schema(monkeypatch) -> None:
    seen: dict[str, frozenset[str]] = {}
    check_fields = loader._check_fields

    def recording(raw: Mapping[str, Any], allowed: frozenset[str], field: str) -> None:
        seen[field] = frozenset(allowed)
        check_fields(raw, allowed, field)

    monkeypatch.setattr(loader, "_check_fields", recording)
    assert validator_errors(EVERY_FIELD) == []
    assert schema_errors(EVERY_FIELD) == []

    for field, allowed in seen.items():
        assert set(at_path(SCHEMA, field)["properties"]) == allowed, field
    reached = {id(at_path(SCHEMA, field)) for field in seen}
    assert {path for path, node in closed_objects(SCHEMA) if id(node) not in reached} == set()


@pytest.mark.parametrize("plugin", registry.plugin_names())
def test_every_plugin_args_field_is_in_the_schema(plugin: str, monkeypatch) -> None:
    args_schema = SCHEMA["$defs"][f"{plugin}Args"]
    examples = args_schema["examples"]
    for example in examples:
        profile: dict[str, Any] = {"pluginConfig": [{"name": plugin, "args": example}]}
        if plugin == "Coscheduling":
            profile["plugins"] = COSCHEDULING_PLUGINS
        config = {**BASE, "profiles": [profile]}
        assert validator_errors(config) == []
        assert schema_errors(config) == []

    seen: dict[str, frozenset[str]] = {}

    def recording(raw: Mapping[str, Any], known: set[str], field: str = "args") -> None:
        seen[field.removeprefix("args").lstrip(".")] = frozenset(known)
        plugin_args.reject_unknown(raw, known, field)

    # The in-tree plugins call it as ``api.reject_unknown``, looked up at each call.
    monkeypatch.setattr(plugin_api, "reject_unknown", recording)
    for example in examples:
        registry.factory(plugin, {})(example, Handle())

    for field, known in seen.items():
        assert set(at_path(args_schema, field)["properties"]) - ARGS_ENVELOPE == known, field
    reached = {id(at_path(args_schema, field)) for field in seen}
    # Resource specs and shape points are checked field by field, not by reject_unknown.
    not_by_name = {
        "scoringStrategy.resources[]",
        "scoringStrategy.requestedToCapacityRatio.shape[]",
    }
    unreached = (
        {path for path, node in closed_objects(args_schema) if id(node) not in reached}
        - not_by_name
        - {"resources[]"}
    )
    assert unreached == set()


def with_(path: str, value: Any) -> dict[str, Any]:
    """A copy of :data:`EVERY_FIELD` with ``path`` (``a.b[0].c``) set to ``value``."""
    document = copy.deepcopy(EVERY_FIELD)
    keys = [
        int(index) if index else key for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)
    ]
    target: Any = document
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return document


def plugin_config(name: str, args: Any, **profile: Any) -> dict[str, Any]:
    return {**BASE, "profiles": [{"pluginConfig": [{"name": name, "args": args}], **profile}]}


BAD = {
    "wrong apiVersion": {**EVERY_FIELD, "apiVersion": "kubescheduler.config.k8s.io/v1beta3"},
    "wrong kind": {**EVERY_FIELD, "kind": "Config"},
    "unknown top-level field": {**EVERY_FIELD, "schedulerName": "x"},
    "empty profiles": with_("profiles", []),
    "profiles not a list": with_("profiles", {"schedulerName": "x"}),
    "unknown profile field": with_("profiles[0].name", "x"),
    "empty schedulerName": with_("profiles[0].schedulerName", ""),
    "percentage above 100": with_("percentageOfNodesToScore", 101),
    "percentage as a string": with_("percentageOfNodesToScore", "50"),
    "percentage as a boolean": with_("percentageOfNodesToScore", True),
    "profile percentage below 0": with_("profiles[0].percentageOfNodesToScore", -1),
    "unknown extension point": with_("profiles[0].plugins.filters", {"enabled": []}),
    "unknown plugin set field": with_("profiles[0].plugins.filter.enable", []),
    "plugin without a name": with_("profiles[0].plugins.score.enabled", [{"weight": 1}]),
    "plugin weight above 100": with_(
        "profiles[0].plugins.score.enabled", [{"name": "ImageLocality", "weight": 101}]
    ),
    "pluginConfig not a list": with_("profiles[0].pluginConfig", {"name": "x"}),
    "pluginConfig args not an object": with_(
        "profiles[0].pluginConfig", [{"name": "DefaultPreemption", "args": []}]
    ),
    "zero initial back-off": with_("podInitialBackoffSeconds", 0),
    "fractional back-off": with_("podMaxBackoffSeconds", 1.5),
    "parallelism 0": with_("parallelism", 0),
    "lease duration not a duration": with_("leaderElection.leaseDuration", "15"),
    "negative retry period": with_("leaderElection.retryPeriod", "-2s"),
    "lease duration null": with_("leaderElection.leaseDuration", None),
    "configmap lock": with_("leaderElection.resourceLock", "configmapsleases"),
    "kube-scheduler's lease": with_("leaderElection.resourceName", "kube-scheduler"),
    "leaderElect as a string": with_("leaderElection.leaderElect", "true"),
    "burst above int32": with_("clientConnection.burst", 2**31),
    "qps as a string": with_("clientConnection.qps", "50"),
    "yaml content type": with_("clientConnection.contentType", "application/yaml"),
    "extenders": with_("extenders", [{"urlPrefix": "http://x"}]),
    "profiling as a string": with_("enableProfiling", "yes"),
    "unknown kopfScheduler field": with_("kopfScheduler.fastpath", True),
    "unknown annotate mode": with_("kopfScheduler.explanations.annotate", "some"),
    "maxBytes too small": with_("kopfScheduler.explanations.maxBytes", 100),
    "Fit: unknown field": plugin_config("NodeResourcesFit", {"ignoredResource": []}),
    "Fit: unknown strategy": plugin_config(
        "NodeResourcesFit", {"scoringStrategy": {"type": "LeastRequested"}}
    ),
    "Fit: strategy without type": plugin_config("NodeResourcesFit", {"scoringStrategy": {}}),
    "Fit: weight above 100": plugin_config(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 101}],
            }
        },
    ),
    "Fit: ratio without shape": plugin_config(
        "NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}
    ),
    "Fit: ratio with another strategy": plugin_config(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 1}]},
            }
        },
    ),
    "Fit: shape score above 10": plugin_config(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
            }
        },
    ),
    "Fit: resource group with a slash": plugin_config(
        "NodeResourcesFit", {"ignoredResourceGroups": ["example.com/gpu"]}
    ),
    "BalancedAllocation: weight 2": plugin_config(
        "NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}
    ),
    "InterPodAffinity: weight 101": plugin_config(
        "InterPodAffinity", {"hardPodAffinityWeight": 101}
    ),
    "InterPodAffinity: weight null": plugin_config(
        "InterPodAffinity", {"hardPodAffinityWeight": None}
    ),
    "VolumeBinding: negative timeout": plugin_config("VolumeBinding", {"bindTimeoutSeconds": -1}),
    "VolumeBinding: shape": plugin_config(
        "VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]}
    ),
    "PodTopologySpread: unknown defaulting type": plugin_config(
        "PodTopologySpread", {"defaultingType": "Lists"}
    ),
    "PodTopologySpread: constraints with System defaulting": plugin_config(
        "PodTopologySpread",
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        },
    ),
    "PodTopologySpread: constraint with a selector": plugin_config(
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "x"}},
                }
            ],
        },
    ),
    "PodTopologySpread: maxSkew 0": plugin_config(
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        },
    ),
    "DynamicResources: negative timeout": plugin_config(
        "DynamicResources", {"filterTimeout": "-1s"}
    ),
    "DynamicResources: timeout without a unit": plugin_config(
        "DynamicResources", {"filterTimeout": "10"}
    ),
    "DefaultPreemption: percentage 101": plugin_config(
        "DefaultPreemption", {"minCandidateNodesPercentage": 101}
    ),
    "DefaultPreemption: both zero": plugin_config(
        "DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
    ),
    "DefaultPreemption: unknown PDB policy": plugin_config(
        "DefaultPreemption", {"pdbPolicy": "Never"}
    ),
    "NodeAffinity: unknown field": plugin_config(
        "NodeAffinity", {"addedAffinity": {"required": {}}}
    ),
    "NodeAffinity: unknown operator": plugin_config(
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Is", "values": ["b"]}]}
                    ]
                }
            }
        },
    ),
    "ImageLocality: any args field": plugin_config("ImageLocality", {"threshold": 1}),
    "Coscheduling: negative wait": plugin_config(
        "Coscheduling",
        {"permitWaitingTimeSeconds": -1},
        plugins=COSCHEDULING_PLUGINS,
    ),
    "Coscheduling: gangPreemption as a string": plugin_config(
        "Coscheduling",
        {"gangPreemption": "yes"},
        plugins=COSCHEDULING_PLUGINS,
    ),
}


@pytest.mark.parametrize("document", BAD.values(), ids=BAD.keys())
def test_what_the_reader_refuses_the_schema_refuses(document: dict[str, Any]) -> None:
    assert validator_errors(document)
    assert schema_errors(document)


GOOD = {
    "the bare minimum": BASE,
    "nulls mean the defaults": {
        **BASE,
        "profiles": [{"schedulerName": None, "plugins": {"filter": None}, "pluginConfig": None}],
        "percentageOfNodesToScore": None,
        "podInitialBackoffSeconds": None,
        "leaderElection": {"leaderElect": None, "resourceLock": None},
        "clientConnection": {"qps": None, "burst": None, "contentType": None},
        "extenders": None,
        "kopfScheduler": {"explanations": None, "fastPath": None},
    },
    "a profile of nulls": {**BASE, "profiles": [None]},
    "negative qps turns rate limiting off": with_("clientConnection.qps", -1),
    "protobuf content type (warned about)": with_(
        "clientConnection.contentType", "application/vnd.kubernetes.protobuf"
    ),
    "args with an envelope": plugin_config(
        "DefaultPreemption",
        {"apiVersion": loader.API_VERSION, "kind": "DefaultPreemptionArgs", "pdbPolicy": "Strict"},
    ),
    "null args": plugin_config("NodeResourcesFit", None),
    "a fractional duration": with_("leaderElection.retryPeriod", "1.5s"),
    "zero filter timeout": plugin_config("DynamicResources", {"filterTimeout": "0"}),
    "weight 0 keeps the default": with_(
        "profiles[0].plugins.score.enabled", [{"name": "ImageLocality", "weight": 0}]
    ),
}


@pytest.mark.parametrize("document", GOOD.values(), ids=GOOD.keys())
def test_what_the_reader_accepts_the_schema_accepts(document: dict[str, Any]) -> None:
    assert validator_errors(document) == []
    assert schema_errors(document) == []


def shipped_configs() -> Iterator[Any]:
    """Every configuration in the repository, as (where, document)."""
    for pattern in ("manifests/**/config.yaml", "examples/**/config.yaml"):
        for path in sorted(ROOT.glob(pattern)):
            yield pytest.param(load_yaml(path.read_text()), id=str(path.relative_to(ROOT)))
    for golden in sorted((ROOT / "tests/chart/golden").glob("*.yaml")):
        for document in load_yaml_all(golden.read_text()):
            if (
                document
                and document.get("kind") == "ConfigMap"
                and "config.yaml" in document.get("data", {})
            ):
                name = document["metadata"]["name"]
                config = load_yaml(document["data"]["config.yaml"])
                yield pytest.param(config, id=f"chart {golden.stem}: {name}")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(r"```ya?ml\n(.*?)```", path.read_text(), re.S)
        for number, block in enumerate(blocks):
            if re.search(r"^(profiles|kopfScheduler):", block, re.M):
                document = {**BASE, **load_yaml(block)}
                yield pytest.param(document, id=f"{path.relative_to(ROOT)} block {number}")


@pytest.mark.parametrize("document", list(shipped_configs()))
def test_every_shipped_configuration_passes_the_schema(document: Any) -> None:
    assert schema_errors(document) == []
