"""The JSON Schema of the configuration file, for editors: completion, hover text and red marks
while a KubeSchedulerConfiguration is written, before ``config validate`` ever reads it.

The schema is built here from the reader's own field sets and limits (:mod:`.loader`) and the
in-tree plugins' names and constants, and ``kopf-scheduler config schema`` prints it; the copy
under ``schema/`` in the repository is this module's output. Each object of the reader must list
here exactly the fields of its set, or the schema is not built at all; the plugins' args, whose
parsers keep their field sets to themselves, are held to them by the tests, which read every
args example of the schema while recording the fields each parser accepts.

The schema checks what one field can say about itself (types, ranges, names of modes, the shape
of plugin args); what depends on the cluster or on several fields together (an out-of-tree
plugin's name, two profiles with one name, leaseDuration > renewDeadline) stays with
``config validate``, which remains the authority.
"""

from __future__ import annotations

import json
from typing import Any

from kopf_scheduler.config import loader
from kopf_scheduler.config.types import DEFAULT_SCHEDULER_NAME, EXTENSION_POINT_NAMES
from kopf_scheduler.plugins import registry
from kopf_scheduler.plugins.coscheduling.args import (
    DEFAULT_GANG_PREEMPTION,
    DEFAULT_PERMIT_WAITING_TIME_SECONDS,
    DEFAULT_POD_GROUP_BACKOFF_SECONDS,
)
from kopf_scheduler.plugins.dynamic_resources import DEFAULT_FILTER_TIMEOUT_SECONDS
from kopf_scheduler.plugins.inter_pod_affinity.plugin import DEFAULT_HARD_POD_AFFINITY_WEIGHT
from kopf_scheduler.plugins.node_resources_fit import (
    LEAST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    STRATEGIES,
)
from kopf_scheduler.plugins.pod_topology_spread.common import LIST_DEFAULTING, SYSTEM_DEFAULTING
from kopf_scheduler.plugins.resource_allocation import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_RESOURCE_WEIGHT,
    MAX_UTILIZATION,
)
from kopf_scheduler.plugins.volume_binding.args import DEFAULT_BIND_TIMEOUT_SECONDS
from kopf_scheduler.preemption.evaluator import PDB_POLICIES, PDB_POLICY_BEST_EFFORT

SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"

_DURATION_PART = r"(\d+(\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)"
POSITIVE_DURATION = rf"^\+?({_DURATION_PART})+$"
"""A Go duration with no minus sign (``15s``, ``1m30s``): what leader election accepts."""
NON_NEGATIVE_DURATION = rf"^([-+]?0|\+?({_DURATION_PART})+)$"

ARGS_ENVELOPE = frozenset({"apiVersion", "kind"})
"""Keys every plugin's args may carry (``kind: NodeResourcesFitArgs``); the parsers skip them."""

Schema = dict[str, Any]


def _nullable(type_name: str) -> list[str]:
    """Fields the reader treats as unset when they are ``null`` (YAML's empty value)."""
    return [type_name, "null"]


def _closed(
    properties: Schema, fields: frozenset[str] | None = None, *, nullable: bool = False
) -> Schema:
    """An object with exactly ``properties``; ``fields`` is the reader's set they must equal."""
    if fields is not None and set(properties) != fields:
        raise AssertionError(f"schema fields {sorted(properties)} != reader's {sorted(fields)}")
    return {
        "type": _nullable("object") if nullable else "object",
        "properties": properties,
        "additionalProperties": False,
    }


def _integer(
    description: str, low: int | None = None, high: int | None = None, *, nullable: bool = True
) -> Schema:
    schema: Schema = {
        "type": _nullable("integer") if nullable else "integer",
        "description": description,
    }
    if low is not None:
        schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    return schema


def _boolean(description: str, default: bool, *, nullable: bool = True) -> Schema:
    return {
        "type": _nullable("boolean") if nullable else "boolean",
        "description": description,
        "default": default,
    }


def _string(description: str, *, nullable: bool = True) -> Schema:
    return {"type": _nullable("string") if nullable else "string", "description": description}


def _plugin_set() -> Schema:
    ref = _closed(
        {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "A plugin's name; '*' in disabled turns off every default one.",
                "examples": [*registry.plugin_names(), "*"],
            },
            "weight": _integer(
                "The score weight (score and multiPoint only; 0 keeps the default).",
                0,
                loader.MAX_PLUGIN_WEIGHT,
            ),
        },
        loader.PLUGIN_REF_FIELDS,
    )
    ref["required"] = ["name"]
    plugin_list = {"type": _nullable("array"), "items": {"$ref": "#/$defs/PluginRef"}}
    return {
        "PluginRef": ref,
        "PluginSet": _closed(
            {"enabled": plugin_list, "disabled": plugin_list},
            loader.PLUGIN_SET_FIELDS,
            nullable=True,
        ),
    }


def _plugin_config() -> Schema:
    names = registry.plugin_names()
    entry = _closed(
        {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "The plugin these args are for.",
                "examples": names,
            },
            "args": {"type": _nullable("object"), "description": "The plugin's arguments."},
        },
        loader.PLUGIN_CONFIG_FIELDS,
    )
    entry["required"] = ["name"]
    entry["allOf"] = [
        {
            "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
            "then": {"properties": {"args": {"$ref": f"#/$defs/{name}Args"}}},
        }
        for name in names
    ]
    return entry


def _profile() -> Schema:
    points = {point: {"$ref": "#/$defs/PluginSet"} for point in EXTENSION_POINT_NAMES}
    return _closed(
        {
            "schedulerName": {
                "type": _nullable("string"),
                "minLength": 1,
                "description": "The spec.schedulerName of the pods this profile schedules.",
                "default": DEFAULT_SCHEDULER_NAME,
            },
            "percentageOfNodesToScore": _integer(
                "Overrides the top-level percentageOfNodesToScore for this profile.", 0, 100
            ),
            "plugins": _closed(points, frozenset(EXTENSION_POINT_NAMES), nullable=True),
            "pluginConfig": {
                "type": _nullable("array"),
                "items": {"$ref": "#/$defs/PluginConfig"},
            },
        },
        loader.PROFILE_FIELDS,
        nullable=True,
    )


def _leader_election() -> Schema:
    def duration(description: str, default: str) -> Schema:
        return {
            "type": "string",
            "pattern": POSITIVE_DURATION,
            "description": description,
            "default": default,
        }

    return _closed(
        {
            "leaderElect": _boolean("Run leader election; off, every replica schedules.", True),
            "leaseDuration": duration("How long a lease holds without renewal.", "15s"),
            "renewDeadline": duration("How long the leader keeps trying to renew.", "10s"),
            "retryPeriod": duration("How often a replica tries to acquire or renew.", "2s"),
            "resourceLock": {
                "type": _nullable("string"),
                "enum": ["leases", None],
                "description": "Only Leases are supported.",
                "default": "leases",
            },
            "resourceName": {
                "type": _nullable("string"),
                "minLength": 1,
                "not": {"const": "kube-scheduler"},
                "description": "The Lease's name; not kube-scheduler's own.",
                "default": DEFAULT_SCHEDULER_NAME,
            },
            "resourceNamespace": {**_string("The Lease's namespace."), "default": "kube-system"},
        },
        loader.LEADER_ELECTION_FIELDS,
        nullable=True,
    )


def _client_connection() -> Schema:
    return _closed(
        {
            "kubeconfig": _string("A kubeconfig file; empty means in-cluster credentials."),
            "qps": {
                "type": _nullable("number"),
                "minimum": -loader.FLOAT32_MAX,
                "maximum": loader.FLOAT32_MAX,
                "description": "Requests per second to the API server; 0 means 50, below 0 "
                "turns client-side rate limiting off.",
                "default": loader.DEFAULT_QPS,
            },
            "burst": {
                **_integer("Requests allowed above qps in a burst; 0 means 100.", 0),
                "maximum": loader.INT32_MAX,
                "default": loader.DEFAULT_BURST,
            },
            "contentType": {
                "type": _nullable("string"),
                "enum": ["", loader.JSON_CONTENT_TYPE, loader.PROTOBUF_CONTENT_TYPE, None],
                "description": "Requests are always JSON; protobuf is accepted with a warning.",
            },
            "acceptContentTypes": _string("Ignored: replies are always requested as JSON."),
        },
        loader.CLIENT_CONNECTION_FIELDS,
        nullable=True,
    )


def _kopf_scheduler() -> Schema:
    explanations = _closed(
        {
            "annotate": {
                "type": _nullable("string"),
                "enum": [*loader.ANNOTATE_MODES, None],
                "description": "Which decision records are stored on pods.",
                "default": "failures",
            },
            "maxBytes": {
                **_integer(
                    "The largest decision record stored on a pod.",
                    loader.MIN_EXPLANATION_BYTES,
                    loader.MAX_EXPLANATION_BYTES,
                ),
                "default": 16384,
            },
        },
        loader.EXPLANATIONS_FIELDS,
        nullable=True,
    )
    section = _closed(
        {
            "explanations": explanations,
            "nominationHygiene": _boolean("Clear nominations that no longer hold.", True),
            "fastPath": _boolean(
                "Vectorised Filter/Score where the decisions are provably the same.", True
            ),
        },
        loader.KOPF_SCHEDULER_FIELDS,
        nullable=True,
    )
    section["description"] = (
        "kopf-scheduler's own settings; kube-scheduler rejects this key, so remove it there."
    )
    return section


def _args(name: str, properties: Schema, **extra: Any) -> Schema:
    """A plugin's args object: its own fields plus the apiVersion/kind envelope."""
    envelope: Schema = {
        "apiVersion": {"type": "string", "examples": [loader.API_VERSION]},
        "kind": {"type": "string", "examples": [f"{name}Args"]},
    }
    schema = _closed({**envelope, **properties}, nullable=True)
    schema.update(extra)
    return schema


def _node_selector_term() -> Schema:
    requirement = _closed(
        {
            "key": {"type": "string"},
            "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]},
            "values": {"type": _nullable("array"), "items": {"type": "string"}},
        }
    )
    requirement["required"] = ["key", "operator"]
    requirements = {"type": _nullable("array"), "items": requirement}
    return _closed({"matchExpressions": requirements, "matchFields": requirements}, nullable=True)


def _resource_specs(weight: Schema) -> Schema:
    spec = _closed({"name": {"type": "string"}, "weight": weight})
    return {
        "type": _nullable("array"),
        "items": spec,
        "description": "Resources and their weights; empty means cpu and memory, weight 1.",
    }


def _plugin_args() -> dict[str, Schema]:
    """The args of every in-tree plugin, keyed by plugin name; ``examples`` set every field."""
    shape_point = _closed(
        {
            "utilization": {"type": "integer", "minimum": 0, "maximum": MAX_UTILIZATION},
            "score": {"type": "integer", "minimum": 0, "maximum": MAX_CUSTOM_PRIORITY_SCORE},
        }
    )
    term = _node_selector_term()
    requirement_example = {"key": "pool", "operator": "In", "values": ["general"]}
    args: dict[str, Schema] = {
        "NodeResourcesFit": _args(
            "NodeResourcesFit",
            {
                "ignoredResources": {
                    "type": _nullable("array"),
                    "items": {"type": "string"},
                    "description": "Extended resources Filter does not check.",
                },
                "ignoredResourceGroups": {
                    "type": _nullable("array"),
                    "items": {"type": "string", "pattern": "^[^/]*$"},
                    "description": "Groups (the part before '/') of resources Filter ignores.",
                },
                "scoringStrategy": {
                    **_closed(
                        {
                            "type": {"enum": list(STRATEGIES), "default": LEAST_ALLOCATED},
                            "resources": _resource_specs(
                                {"type": "integer", "minimum": 0, "maximum": MAX_RESOURCE_WEIGHT}
                            ),
                            "requestedToCapacityRatio": {
                                **_closed(
                                    {
                                        "shape": {
                                            "type": "array",
                                            "minItems": 1,
                                            "items": shape_point,
                                        }
                                    },
                                    nullable=True,
                                ),
                                "required": ["shape"],
                            },
                        },
                        nullable=True,
                    ),
                    "required": ["type"],
                    "if": {
                        "properties": {"type": {"const": REQUESTED_TO_CAPACITY_RATIO}},
                        "required": ["type"],
                    },
                    "then": {
                        "properties": {"requestedToCapacityRatio": {"type": "object"}},
                        "required": ["requestedToCapacityRatio"],
                    },
                    "else": {"properties": {"requestedToCapacityRatio": {"type": "null"}}},
                },
            },
            examples=[
                {
                    "ignoredResources": ["example.com/gpu"],
                    "ignoredResourceGroups": ["example.com"],
                    "scoringStrategy": {
                        "type": REQUESTED_TO_CAPACITY_RATIO,
                        "resources": [{"name": "cpu", "weight": 1}],
                        "requestedToCapacityRatio": {
                            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100}]
                        },
                    },
                }
            ],
        ),
        "NodeResourcesBalancedAllocation": _args(
            "NodeResourcesBalancedAllocation",
            {"resources": _resource_specs({"enum": [0, 1]})},
            examples=[{"resources": [{"name": "cpu", "weight": 1}, {"name": "memory"}]}],
        ),
        "InterPodAffinity": _args(
            "InterPodAffinity",
            {
                "hardPodAffinityWeight": {
                    **_integer("The score of a required affinity term.", 0, 100, nullable=False),
                    "default": DEFAULT_HARD_POD_AFFINITY_WEIGHT,
                },
                "ignorePreferredTermsOfExistingPods": _boolean(
                    "Skip existing pods' preferred terms for a pod without its own.",
                    False,
                    nullable=False,
                ),
            },
            examples=[{"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": True}],
        ),
        "VolumeBinding": _args(
            "VolumeBinding",
            {
                "bindTimeoutSeconds": {
                    **_integer("How long PreBind waits for claims to bind.", 0),
                    "default": DEFAULT_BIND_TIMEOUT_SECONDS,
                },
                "shape": {
                    "type": "null",
                    "description": "Needs the StorageCapacityScoring gate, which is off.",
                },
            },
            examples=[{"bindTimeoutSeconds": 600, "shape": None}],
        ),
        "PodTopologySpread": _args(
            "PodTopologySpread",
            {
                "defaultingType": {
                    "enum": [SYSTEM_DEFAULTING, LIST_DEFAULTING, "", None],
                    "default": SYSTEM_DEFAULTING,
                    "description": "System: the built-in defaults; List: defaultConstraints.",
                },
                "defaultConstraints": {
                    "type": _nullable("array"),
                    "items": {
                        "type": "object",
                        "required": ["maxSkew", "topologyKey", "whenUnsatisfiable"],
                        "properties": {
                            "maxSkew": {"type": "integer", "minimum": 1},
                            "topologyKey": {"type": "string", "minLength": 1},
                            "whenUnsatisfiable": {"enum": ["DoNotSchedule", "ScheduleAnyway"]},
                            "labelSelector": {
                                "type": "null",
                                "description": "Deduced for each pod; must not be set.",
                            },
                            "minDomains": {"type": _nullable("integer"), "minimum": 1},
                            "nodeAffinityPolicy": {"enum": ["Honor", "Ignore", "", None]},
                            "nodeTaintsPolicy": {"enum": ["Honor", "Ignore", "", None]},
                            "matchLabelKeys": {
                                "type": _nullable("array"),
                                "items": {"type": "string"},
                            },
                        },
                    },
                },
            },
            **{
                "if": {
                    "properties": {"defaultConstraints": {"type": "array", "minItems": 1}},
                    "required": ["defaultConstraints"],
                },
                "then": {
                    "properties": {"defaultingType": {"const": LIST_DEFAULTING}},
                    "required": ["defaultingType"],
                },
            },
            examples=[
                {
                    "defaultingType": LIST_DEFAULTING,
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                        }
                    ],
                }
            ],
        ),
        "DynamicResources": _args(
            "DynamicResources",
            {
                "filterTimeout": {
                    "type": _nullable("string"),
                    "pattern": NON_NEGATIVE_DURATION,
                    "description": "How long Filter may take per node; 0 means no limit.",
                    "default": f"{DEFAULT_FILTER_TIMEOUT_SECONDS:g}s",
                }
            },
            examples=[{"filterTimeout": "10s"}],
        ),
        "DefaultPreemption": _args(
            "DefaultPreemption",
            {
                "minCandidateNodesPercentage": {
                    **_integer("Candidates to find, as a share of nodes.", 0, 100, nullable=False),
                    "default": 10,
                },
                "minCandidateNodesAbsolute": {
                    **_integer("Candidates to find, at least.", 0, nullable=False),
                    "default": 100,
                },
                "pdbPolicy": {
                    "enum": list(PDB_POLICIES),
                    "default": PDB_POLICY_BEST_EFFORT,
                    "description": "Strict never evicts a pod a PodDisruptionBudget protects.",
                },
            },
            **{
                "not": {
                    "properties": {
                        "minCandidateNodesPercentage": {"const": 0},
                        "minCandidateNodesAbsolute": {"const": 0},
                    },
                    "required": ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
                }
            },
            examples=[
                {
                    "minCandidateNodesPercentage": 10,
                    "minCandidateNodesAbsolute": 100,
                    "pdbPolicy": PDB_POLICY_BEST_EFFORT,
                }
            ],
        ),
        "NodeAffinity": _args(
            "NodeAffinity",
            {
                "addedAffinity": _closed(
                    {
                        "requiredDuringSchedulingIgnoredDuringExecution": _closed(
                            {"nodeSelectorTerms": {"type": _nullable("array"), "items": term}},
                            nullable=True,
                        ),
                        "preferredDuringSchedulingIgnoredDuringExecution": {
                            "type": _nullable("array"),
                            "items": _closed(
                                {
                                    "weight": {
                                        "type": "integer",
                                        "minimum": -(2**31),
                                        "maximum": 2**31 - 1,
                                    },
                                    "preference": term,
                                }
                            ),
                        },
                    },
                    nullable=True,
                )
            },
            examples=[
                {
                    "addedAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [requirement_example]}]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": ["node-1"],
                                        }
                                    ]
                                },
                            }
                        ],
                    }
                }
            ],
        ),
        "Coscheduling": _args(
            "Coscheduling",
            {
                "permitWaitingTimeSeconds": {
                    **_integer("How long a member waits for its group.", 0, nullable=False),
                    "default": DEFAULT_PERMIT_WAITING_TIME_SECONDS,
                },
                "podGroupBackoffSeconds": {
                    **_integer("How long a failed group is turned away.", 0, nullable=False),
                    "default": DEFAULT_POD_GROUP_BACKOFF_SECONDS,
                },
                "gangPreemption": _boolean(
                    "Make room for a whole group at once.",
                    DEFAULT_GANG_PREEMPTION,
                    nullable=False,
                ),
            },
            examples=[
                {
                    "permitWaitingTimeSeconds": 60,
                    "podGroupBackoffSeconds": 0,
                    "gangPreemption": True,
                }
            ],
        ),
    }
    for name in registry.plugin_names():
        args.setdefault(name, _args(name, {}, examples=[{}]))
    return args


def config_schema() -> Schema:
    """The JSON Schema (draft-07, what editors read best) of a kopf-scheduler configuration file."""
    plugin_sets = _plugin_set()
    defs: Schema = {
        "Profile": _profile(),
        **plugin_sets,
        "PluginConfig": _plugin_config(),
        **{f"{name}Args": schema for name, schema in _plugin_args().items()},
    }
    top = _closed(
        {
            "apiVersion": {"const": loader.API_VERSION},
            "kind": {"const": loader.KIND},
            "profiles": {
                "type": _nullable("array"),
                "minItems": 1,
                "items": {"$ref": "#/$defs/Profile"},
                "description": "One profile per schedulerName this scheduler serves.",
            },
            "percentageOfNodesToScore": _integer(
                "The share of feasible nodes to find before scoring; 0 means adaptive.", 0, 100
            ),
            "podInitialBackoffSeconds": {
                **_integer("The first back-off of an unschedulable pod.", 1, loader.INT64_MAX),
                "default": 1,
            },
            "podMaxBackoffSeconds": {
                **_integer("The longest back-off.", 1, loader.INT64_MAX),
                "default": 10,
            },
            "parallelism": {
                **_integer("Accepted, without effect here.", 1, loader.INT32_MAX),
                "default": loader.DEFAULT_PARALLELISM,
            },
            "leaderElection": _leader_election(),
            "clientConnection": _client_connection(),
            "extenders": {
                "type": _nullable("array"),
                "maxItems": 0,
                "description": "Scheduler extenders are not supported.",
            },
            "enableProfiling": _boolean("Accepted, without effect here.", False),
            "enableContentionProfiling": _boolean("Accepted, without effect here.", False),
            "delayCacheUntilActive": _boolean("Accepted, without effect here.", False),
            "kopfScheduler": _kopf_scheduler(),
        },
        loader.TOP_LEVEL_FIELDS,
    )
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "kopf-scheduler configuration (KubeSchedulerConfiguration v1)",
        "description": (
            "kube-scheduler's KubeSchedulerConfiguration as kopf-scheduler reads it, plus its "
            "own kopfScheduler section. `kopf-scheduler config validate FILE` is the full check."
        ),
        **top,
        "required": ["apiVersion", "kind"],
        "$defs": defs,
    }


def config_schema_json() -> str:
    """:func:`config_schema` as the text of the published file (two-space indents, a newline)."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"
