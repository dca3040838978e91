"""The configuration a scheduler runs with, as a KubeSchedulerConfiguration document.

``kopf-scheduler run --write-config-to FILE`` writes it, as kube-scheduler's flag of the same
name does: every top-level default filled in, each profile's ``multiPoint`` list expanded into the
plugins the profile really runs (with their weights), and the fields kopf-scheduler does not act
on written with the value it runs with (profiling off, caches filled before leading, JSON).
Plugin ``args`` are written as given: each plugin fills in its own defaults when it starts.
Reading the written file back gives the same configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from kopf_scheduler.config.loader import API_VERSION, KIND
from kopf_scheduler.config.profiles import merged_multi_point
from kopf_scheduler.config.types import PluginRef, Profile, SchedulerConfig

_NANOSECONDS = {"h": 3_600_000_000_000, "m": 60_000_000_000, "s": 1_000_000_000}


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's Duration prints it: ``15s``, ``1m30s``, ``250ms``, ``2h0m0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{nanos}ns"
    if nanos < 1_000_000:
        return f"{_trimmed(nanos / 1e3)}µs"
    if nanos < 1_000_000_000:
        return f"{_trimmed(nanos / 1e6)}ms"
    hours, rest = divmod(nanos, _NANOSECONDS["h"])
    minutes, rest = divmod(rest, _NANOSECONDS["m"])
    text = f"{_trimmed(rest / _NANOSECONDS['s'])}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


def _trimmed(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


def _refs(refs: tuple[PluginRef, ...] | list[PluginRef]) -> list[dict[str, Any]]:
    return [{"name": ref.name, "weight": ref.weight} for ref in refs]


def _plain(value: Any) -> Any:
    """Mappings and sequences of the parsed file as plain dicts and lists, for the YAML dumper."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _profile(profile: Profile) -> dict[str, Any]:
    user_multi_point = profile.plugins.get("multiPoint")
    plugins: dict[str, Any] = {
        "multiPoint": {
            "enabled": _refs(merged_multi_point(user_multi_point)),
            "disabled": _refs(user_multi_point.disabled if user_multi_point else ()),
        }
    }
    for point, plugin_set in profile.plugins.items():
        if point != "multiPoint":
            plugins[point] = {
                "enabled": _refs(plugin_set.enabled),
                "disabled": _refs(plugin_set.disabled),
            }
    document: dict[str, Any] = {"schedulerName": profile.scheduler_name, "plugins": plugins}
    if profile.percentage_of_nodes_to_score is not None:
        document["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    document["pluginConfig"] = [
        {"name": name, "args": _plain(args)} for name, args in profile.plugin_config.items()
    ]
    return document


def config_document(config: SchedulerConfig) -> dict[str, Any]:
    """``config`` as a v1 KubeSchedulerConfiguration object (plus the ``kopfScheduler`` key)."""
    election = config.leader_election
    connection = config.client_connection
    explanations = config.extensions.explanations
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "clientConnection": {
            "acceptContentTypes": "",
            "burst": connection.burst,
            "contentType": connection.content_type,
            "kubeconfig": connection.kubeconfig,
            "qps": connection.qps,
        },
        "delayCacheUntilActive": False,
        "enableContentionProfiling": False,
        "enableProfiling": False,
        "leaderElection": {
            "leaderElect": election.leader_elect,
            "leaseDuration": go_duration(election.lease_duration),
            "renewDeadline": go_duration(election.renew_deadline),
            "resourceLock": election.resource_lock,
            "resourceName": election.resource_name,
            "resourceNamespace": election.resource_namespace,
            "retryPeriod": go_duration(election.retry_period),
        },
        "parallelism": config.parallelism,
        "percentageOfNodesToScore": config.percentage_of_nodes_to_score or 0,
        "podInitialBackoffSeconds": round(config.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": round(config.pod_max_backoff_seconds),
        "profiles": [_profile(profile) for profile in config.profiles],
        "kopfScheduler": {
            "explanations": {
                "annotate": explanations.annotate,
                "maxBytes": explanations.max_bytes,
            },
            "fastPath": config.extensions.fast_path,
            "nominationHygiene": config.extensions.nomination_hygiene,
        },
    }


def config_yaml(config: SchedulerConfig) -> str:
    return yaml.safe_dump(config_document(config), sort_keys=False, allow_unicode=True)
