"""Read a KubeSchedulerConfiguration file into :class:`SchedulerConfig`, strictly.

Strict means: every field we do not know is an error (upstream decodes strictly too), every value
is type- and range-checked, and every error names the field path so that an admin can fix the
ConfigMap without guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.types import (
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINT_NAMES,
    ClientConnection,
    Explanations,
    Extensions,
    LeaderElection,
    PluginRef,
    PluginSet,
    Profile,
    SchedulerConfig,
)
from kopf_scheduler.model.duration import go_duration_seconds

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
_TOP_LEVEL = {
    "apiVersion",
    "kind",
    "profiles",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "extenders",
    "enableProfiling",
    "enableContentionProfiling",
    "delayCacheUntilActive",
    "kopfScheduler",
}


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(field, f"must be an object, got {value!r}")
    return value


def _check_fields(raw: Mapping[str, Any], allowed: set[str], field: str) -> None:
    for key in raw:
        if key not in allowed:
            path = f"{field}.{key}" if field else key
            raise ConfigError(path, "unknown field")


def _int(
    raw: Mapping[str, Any],
    key: str,
    field: str,
    default: int | None,
    low: int | None = None,
    high: int | None = None,
) -> int | None:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    path = f"{field}.{key}" if field else key
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    if low is not None and value < low:
        raise ConfigError(path, f"must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ConfigError(path, f"must be at most {high}, got {value}")
    return value


def _bool(raw: Mapping[str, Any], key: str, field: str, default: bool) -> bool:
    if key not in raw:
        return default
    value = raw[key]
    if not isinstance(value, bool):
        raise ConfigError(f"{field}.{key}", f"must be true or false, got {value!r}")
    return value


def _str(raw: Mapping[str, Any], key: str, field: str, default: str) -> str:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    if not isinstance(value, str):
        raise ConfigError(f"{field}.{key}" if field else key, f"must be a string, got {value!r}")
    return value


def parse_duration(value: Any, field: str) -> float:
    """A Go duration string (``15s``, ``1m30s``, ``250ms``) in seconds, not negative."""
    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be a duration such as '15s', got {value!r}")
    seconds = go_duration_seconds(value)
    if seconds is None or seconds < 0 or value.strip("+-") == "0":
        raise ConfigError(field, f"not a valid duration: {value!r}")
    return seconds


def _plugin_set(raw: Any, field: str) -> PluginSet:
    raw = _mapping(raw, field)
    _check_fields(raw, {"enabled", "disabled"}, field)
    lists: dict[str, tuple[PluginRef, ...]] = {}
    for kind in ("enabled", "disabled"):
        entries = raw.get(kind) or []
        if not isinstance(entries, list):
            raise ConfigError(f"{field}.{kind}", "must be a list")
        refs = []
        for index, entry in enumerate(entries):
            path = f"{field}.{kind}[{index}]"
            ref = _mapping(entry, path)
            _check_fields(ref, {"name", "weight"}, path)
            name = ref.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{path}.name", "must be a non-empty string")
            weight = _int(ref, "weight", path, 0, low=0, high=100)
            assert weight is not None
            refs.append(PluginRef(name, weight))
        lists[kind] = tuple(refs)
    return PluginSet(lists["enabled"], lists["disabled"])


def _profile(raw: Any, field: str) -> Profile:
    raw = _mapping(raw, field)
    _check_fields(
        raw, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}, field
    )
    name = _str(raw, "schedulerName", field, DEFAULT_SCHEDULER_NAME)
    if not name:
        raise ConfigError(f"{field}.schedulerName", "must not be empty")
    percentage = _int(raw, "percentageOfNodesToScore", field, None, low=0, high=100)
    plugins_raw = _mapping(raw.get("plugins"), f"{field}.plugins")
    _check_fields(plugins_raw, set(EXTENSION_POINT_NAMES), f"{field}.plugins")
    plugins = {
        point: _plugin_set(value, f"{field}.plugins.{point}")
        for point, value in plugins_raw.items()
    }
    configs: dict[str, Mapping[str, Any]] = {}
    entries = raw.get("pluginConfig") or []
    if not isinstance(entries, list):
        raise ConfigError(f"{field}.pluginConfig", "must be a list")
    for index, entry in enumerate(entries):
        path = f"{field}.pluginConfig[{index}]"
        item = _mapping(entry, path)
        _check_fields(item, {"name", "args"}, path)
        plugin = item.get("name")
        if not isinstance(plugin, str) or not plugin:
            raise ConfigError(f"{path}.name", "must be a non-empty string")
        if plugin in configs:
            raise ConfigError(f"{path}.name", f"duplicate pluginConfig for plugin {plugin!r}")
        configs[plugin] = _mapping(item.get("args"), f"{path}.args")
    return Profile(name, percentage, plugins, configs)


def _leader_election(raw: Any) -> LeaderElection:
    field = "leaderElection"
    raw = _mapping(raw, field)
    _check_fields(
        raw,
        {
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        },
        field,
    )
    defaults = LeaderElection()
    durations = {}
    for key, default in (
        ("leaseDuration", defaults.lease_duration),
        ("renewDeadline", defaults.renew_deadline),
        ("retryPeriod", defaults.retry_period),
    ):
        durations[key] = parse_duration(raw[key], f"{field}.{key}") if key in raw else default
        if durations[key] <= 0:
            raise ConfigError(f"{field}.{key}", "must be greater than zero")
    if durations["leaseDuration"] <= durations["renewDeadline"]:
        raise ConfigError(f"{field}.leaseDuration", "must be greater than renewDeadline")
    if durations["renewDeadline"] <= durations["retryPeriod"] * 1.2:
        raise ConfigError(f"{field}.renewDeadline", "must be greater than retryPeriod*1.2")
    lock = _str(raw, "resourceLock", field, "leases")
    if lock != "leases":
        raise ConfigError(f"{field}.resourceLock", f"only 'leases' is supported, got {lock!r}")
    name = _str(raw, "resourceName", field, defaults.resource_name)
    if not name:
        raise ConfigError(f"{field}.resourceName", "must not be empty")
    if name == "kube-scheduler":
        raise ConfigError(
            f"{field}.resourceName",
            "'kube-scheduler' is the default scheduler's lease; use this scheduler's own name",
        )
    return LeaderElection(
        _bool(raw, "leaderElect", field, True),
        durations["leaseDuration"],
        durations["renewDeadline"],
        durations["retryPeriod"],
        lock,
        name,
        _str(raw, "resourceNamespace", field, defaults.resource_namespace) or "kube-system",
    )


def _client_connection(raw: Any) -> ClientConnection:
    field = "clientConnection"
    raw = _mapping(raw, field)
    _check_fields(raw, {"kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"}, field)
    qps = raw.get("qps", 50.0)
    if isinstance(qps, bool) or not isinstance(qps, int | float) or qps < 0:
        raise ConfigError(f"{field}.qps", f"must be a non-negative number, got {qps!r}")
    burst = _int(raw, "burst", field, 100, low=0)
    assert burst is not None
    if qps > 0 and burst == 0:
        raise ConfigError(f"{field}.burst", "must be at least 1 when qps is positive")
    return ClientConnection(
        _str(raw, "kubeconfig", field, ""),
        float(qps),
        burst,
        _str(raw, "contentType", field, "application/json"),
    )


def _explanations(raw: Any) -> Explanations:
    field = "kopfScheduler.explanations"
    raw = _mapping(raw, field)
    _check_fields(raw, {"annotate", "maxBytes"}, field)
    annotate = _str(raw, "annotate", field, "failures")
    if annotate not in ("none", "failures", "all"):
        raise ConfigError(f"{field}.annotate", f"must be none, failures or all; got {annotate!r}")
    max_bytes = _int(raw, "maxBytes", field, 16384, low=1024, high=200_000)
    assert max_bytes is not None
    return Explanations(annotate, max_bytes)


def _extensions(raw: Any) -> Extensions:
    field = "kopfScheduler"
    raw = _mapping(raw, field)
    _check_fields(raw, {"explanations", "nominationHygiene", "fastPath"}, field)
    return Extensions(
        explanations=_explanations(raw.get("explanations")),
        nomination_hygiene=_bool(raw, "nominationHygiene", field, True),
        fast_path=_bool(raw, "fastPath", field, True),
    )


def parse_config(raw: Any) -> SchedulerConfig:
    """Parse and validate a configuration object; raise ConfigError naming the field."""
    from kopf_scheduler.config.profiles import validate_profiles

    raw = _mapping(raw, "")
    api_version = raw.get("apiVersion")
    if api_version != API_VERSION:
        raise ConfigError("apiVersion", f"must be {API_VERSION!r}, got {api_version!r}")
    if raw.get("kind") != KIND:
        raise ConfigError("kind", f"must be {KIND!r}, got {raw.get('kind')!r}")
    _check_fields(raw, _TOP_LEVEL, "")
    if raw.get("extenders"):
        raise ConfigError("extenders", "scheduler extenders are not supported")
    profiles_raw = raw.get("profiles")
    if profiles_raw is None:
        profiles: tuple[Profile, ...] = (Profile(),)
    else:
        if not isinstance(profiles_raw, list) or not profiles_raw:
            raise ConfigError("profiles", "must be a non-empty list")
        profiles = tuple(_profile(p, f"profiles[{i}]") for i, p in enumerate(profiles_raw))
    seen: set[str] = set()
    for index, profile in enumerate(profiles):
        if profile.scheduler_name in seen:
            raise ConfigError(
                f"profiles[{index}].schedulerName", f"duplicate profile {profile.scheduler_name!r}"
            )
        seen.add(profile.scheduler_name)
    percentage = _int(raw, "percentageOfNodesToScore", "", None, low=0, high=100)
    initial = _int(raw, "podInitialBackoffSeconds", "", 1, low=1)
    maximum = _int(raw, "podMaxBackoffSeconds", "", 10, low=1)
    assert initial is not None and maximum is not None
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            f"must be greater than or equal to podInitialBackoffSeconds ({initial})",
        )
    parallelism = _int(raw, "parallelism", "", 16, low=1)
    assert parallelism is not None
    config = SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        parallelism=parallelism,
        leader_election=_leader_election(raw.get("leaderElection")),
        client_connection=_client_connection(raw.get("clientConnection")),
        extensions=_extensions(raw.get("kopfScheduler")),
    )
    validate_profiles(config)
    return config


def load_config(path: str | Path) -> SchedulerConfig:
    """Read and validate a config file; every error names the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError("", f"cannot read the file: {error.strerror or error}", source) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError("", f"not valid YAML: {error}", source) from None
    try:
        return parse_config(raw)
    except ConfigError as error:
        raise error.with_source(source) from None


def default_config() -> SchedulerConfig:
    return parse_config({"apiVersion": API_VERSION, "kind": KIND})
