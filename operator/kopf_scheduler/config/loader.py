"""Read a KubeSchedulerConfiguration file into :class:`SchedulerConfig`, strictly.

Strict means: every field we do not know is an error (upstream decodes strictly too), a key
written twice is an error, every value is type- and range-checked (including the int32 and int64
bounds of upstream's Go types), and every error names the field path so that an admin can fix the
ConfigMap without guessing.

Every field of the v1 API is either honoured or named in a warning when it is set to something
kopf-scheduler does not do (``parallelism``, profiling, ``delayCacheUntilActive``, a protobuf
content type), so a config copied from kube-scheduler never silently means less than it says.
A profile named ``default-scheduler`` is valid but is warned about: kube-scheduler serves that
name, and two schedulers would bind the same pods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopf_scheduler.config.documents import DocumentError, decode_utf8, load_yaml
from kopf_scheduler.config.errors import (
    ConfigError,
    ConfigListError,
    ConfigWarning,
    ErrorCollector,
)
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
from kopf_scheduler.config.validation import (
    BOOLEAN,
    INTEGER,
    LIST,
    NUMBER,
    OBJECT,
    STRING,
    field_path,
    shown,
)
from kopf_scheduler.model.duration import go_duration_seconds
from kopf_scheduler.spelling import did_you_mean

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
UPSTREAM_DEFAULT_SCHEDULER = "default-scheduler"
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
FLOAT32_MAX = 3.4028234663852886e38
JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
DEFAULT_QPS = 50.0
DEFAULT_PARALLELISM = 16
DEFAULT_BURST = 100
TOP_LEVEL_FIELDS = frozenset(
    {
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
)
"""The fields of the document itself; each object below has its own set, which the reader
and the JSON Schema (:mod:`kopf_scheduler.config.schema`) both take from here."""
PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
PLUGIN_SET_FIELDS = frozenset({"enabled", "disabled"})
PLUGIN_REF_FIELDS = frozenset({"name", "weight"})
PLUGIN_CONFIG_FIELDS = frozenset({"name", "args"})
LEADER_ELECTION_FIELDS = frozenset(
    {
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceLock",
        "resourceName",
        "resourceNamespace",
    }
)
CLIENT_CONNECTION_FIELDS = frozenset(
    {"kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"}
)
KOPF_SCHEDULER_FIELDS = frozenset({"explanations", "nominationHygiene", "fastPath"})
EXPLANATIONS_FIELDS = frozenset({"annotate", "maxBytes"})
ANNOTATE_MODES = ("none", "failures", "all")
MIN_EXPLANATION_BYTES = 1024
MAX_EXPLANATION_BYTES = 200_000
MAX_PLUGIN_WEIGHT = 100
_NOT_IN_V1 = {
    "podMaxInUnschedulablePodsDuration": (
        "not part of the v1 API (kube-scheduler has it only as the deprecated flag "
        "--pod-max-in-unschedulable-pods-duration); unschedulable pods are retried after 5m here"
    ),
    "schedulerName": "moved into profiles[].schedulerName in the v1 API",
    "algorithmSource": "removed from the API; configure plugins in profiles[].plugins",
}
"""Fields admins carry over from older versions, with what to do instead."""


@dataclass(frozen=True)
class LoadedConfig:
    """A valid configuration and the warnings about fields it sets but does not get."""

    config: SchedulerConfig
    warnings: tuple[ConfigWarning, ...] = ()


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not OBJECT.accepts(value):
        raise ConfigError(field, OBJECT.refusal(value))
    return value


def _check_fields(raw: Mapping[str, Any], allowed: frozenset[str], field: str) -> None:
    """Every key of ``raw`` not in ``allowed`` is an error, with the field likely meant."""
    unknown: list[ConfigError] = []
    for key in raw:
        if key not in allowed:
            path = field_path(field, key)
            hint = _NOT_IN_V1.get(key) if not field else None
            suggestion = f"; {hint}" if hint else did_you_mean(key, allowed)
            reason = f"unknown field{suggestion}"
            unknown.append(ConfigError(path, reason))
    if unknown:
        raise ConfigListError(unknown)


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
    path = field_path(field, key)
    if not INTEGER.accepts(value):
        raise ConfigError(path, INTEGER.refusal(value))
    if low is not None and value < low:
        raise ConfigError(path, f"must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ConfigError(path, f"must be at most {high}, got {value}")
    return value


def _bool(raw: Mapping[str, Any], key: str, field: str, default: bool) -> bool:
    if raw.get(key) is None:
        return default
    value = raw[key]
    if not BOOLEAN.accepts(value):
        raise ConfigError(field_path(field, key), BOOLEAN.refusal(value))
    return value


def _str(raw: Mapping[str, Any], key: str, field: str, default: str) -> str:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    if not STRING.accepts(value):
        raise ConfigError(field_path(field, key), STRING.refusal(value))
    return value


def parse_duration(value: Any, field: str) -> float:
    """A Go duration string (``15s``, ``1m30s``, ``250ms``) in seconds, not negative."""
    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be a duration such as '15s', got {shown(value)}")
    seconds = go_duration_seconds(value)
    if seconds is None or seconds < 0 or value.strip("+-") == "0":
        raise ConfigError(field, f"not a valid duration: {shown(value)}")
    return seconds


def _plugin_set(raw: Any, field: str) -> PluginSet:
    raw = _mapping(raw, field)
    _check_fields(raw, PLUGIN_SET_FIELDS, field)
    errors = ErrorCollector()
    lists: dict[str, tuple[PluginRef, ...]] = {}
    for kind in ("enabled", "disabled"):
        entries = raw.get(kind) or []
        if not LIST.accepts(entries):
            errors.add(ConfigError(f"{field}.{kind}", f"must be {LIST.name}"))
            continue
        refs = []
        for index, entry in enumerate(entries):
            with errors.collecting():
                refs.append(_plugin_ref(entry, f"{field}.{kind}[{index}]"))
        lists[kind] = tuple(refs)
    errors.raise_any()
    return PluginSet(lists["enabled"], lists["disabled"])


def _plugin_ref(entry: Any, path: str) -> PluginRef:
    ref = _mapping(entry, path)
    _check_fields(ref, PLUGIN_REF_FIELDS, path)
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.name", "must be a non-empty string")
    weight = _int(ref, "weight", path, 0, low=0, high=MAX_PLUGIN_WEIGHT)
    assert weight is not None
    return PluginRef(name, weight)


def _profile(raw: Any, field: str) -> Profile:
    """One profile; the errors of its fields, extension points and pluginConfig come together."""
    raw = _mapping(raw, field)
    errors = ErrorCollector()
    with errors.collecting():
        _check_fields(raw, PROFILE_FIELDS, field)
    name = DEFAULT_SCHEDULER_NAME
    with errors.collecting():
        name = _str(raw, "schedulerName", field, DEFAULT_SCHEDULER_NAME)
        if not name:
            raise ConfigError(f"{field}.schedulerName", "must not be empty")
    percentage = None
    with errors.collecting():
        percentage = _int(raw, "percentageOfNodesToScore", field, None, low=0, high=100)
    plugins: dict[str, PluginSet] = {}
    with errors.collecting():
        plugins_raw = _mapping(raw.get("plugins"), f"{field}.plugins")
        with errors.collecting():
            _check_fields(plugins_raw, frozenset(EXTENSION_POINT_NAMES), f"{field}.plugins")
        for point, value in plugins_raw.items():
            if point in EXTENSION_POINT_NAMES:
                with errors.collecting():
                    plugins[point] = _plugin_set(value, f"{field}.plugins.{point}")
    configs: dict[str, Mapping[str, Any]] = {}
    entries = raw.get("pluginConfig") or []
    if not LIST.accepts(entries):
        errors.add(ConfigError(f"{field}.pluginConfig", f"must be {LIST.name}"))
        entries = []
    for index, entry in enumerate(entries):
        with errors.collecting():
            plugin, args = _plugin_config(entry, f"{field}.pluginConfig[{index}]", configs)
            configs[plugin] = args
    errors.raise_any()
    return Profile(name, percentage, plugins, configs)


def _plugin_config(entry: Any, path: str, seen: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    item = _mapping(entry, path)
    _check_fields(item, PLUGIN_CONFIG_FIELDS, path)
    plugin = item.get("name")
    if not isinstance(plugin, str) or not plugin:
        raise ConfigError(f"{path}.name", "must be a non-empty string")
    if plugin in seen:
        raise ConfigError(f"{path}.name", f"duplicate pluginConfig for plugin {plugin!r}")
    return plugin, _mapping(item.get("args"), f"{path}.args")


def _leader_election(raw: Any) -> LeaderElection:
    field = "leaderElection"
    raw = _mapping(raw, field)
    _check_fields(raw, LEADER_ELECTION_FIELDS, field)
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


def _client_connection(raw: Any, warnings: list[ConfigWarning]) -> ClientConnection:
    """The API client settings, defaulted as kube-scheduler defaults them.

    ``qps`` 0 and ``burst`` 0 mean the defaults (50 and 100); a negative ``qps`` turns client-side
    rate limiting off, as in client-go. Requests and replies are always JSON: the scheduler reads
    raw JSON, so a protobuf content type is accepted with a warning and anything else is refused.
    """
    field = "clientConnection"
    raw = _mapping(raw, field)
    _check_fields(raw, CLIENT_CONNECTION_FIELDS, field)
    qps = raw.get("qps", DEFAULT_QPS)
    if qps is None:
        qps = DEFAULT_QPS
    if not NUMBER.accepts(qps):
        raise ConfigError(f"{field}.qps", NUMBER.refusal(qps))
    if not math.isfinite(qps) or abs(qps) > FLOAT32_MAX:
        raise ConfigError(f"{field}.qps", f"must be a finite 32-bit float, got {shown(qps)}")
    burst = _int(raw, "burst", field, DEFAULT_BURST, low=0, high=INT32_MAX)
    assert burst is not None
    content_type = _str(raw, "contentType", field, "")
    if content_type == PROTOBUF_CONTENT_TYPE:
        warnings.append(
            ConfigWarning(
                f"{field}.contentType",
                f"{PROTOBUF_CONTENT_TYPE} is not used; requests and replies are JSON",
            )
        )
    elif content_type not in ("", JSON_CONTENT_TYPE):
        raise ConfigError(
            f"{field}.contentType",
            f"must be {JSON_CONTENT_TYPE} or {PROTOBUF_CONTENT_TYPE}, got {shown(content_type)}",
        )
    accept = _str(raw, "acceptContentTypes", field, "")
    offered = {part.split(";")[0].strip() for part in accept.split(",") if part.strip()}
    if offered and JSON_CONTENT_TYPE not in offered:
        warnings.append(
            ConfigWarning(
                f"{field}.acceptContentTypes",
                f"ignored; replies are always requested as {JSON_CONTENT_TYPE}",
            )
        )
    return ClientConnection(
        _str(raw, "kubeconfig", field, ""),
        float(qps) if qps else DEFAULT_QPS,
        burst or DEFAULT_BURST,
        JSON_CONTENT_TYPE,
    )


def _parallelism(raw: Mapping[str, Any], warnings: list[ConfigWarning]) -> int:
    """Validated as upstream validates it, kept (and written back), but it changes nothing.

    A value other than kube-scheduler's default is warned about: whoever set it expected more
    (or less) concurrency.
    """
    parallelism = _int(raw, "parallelism", "", None, low=1, high=INT32_MAX)
    if parallelism is None or parallelism == DEFAULT_PARALLELISM:
        return DEFAULT_PARALLELISM
    warnings.append(
        ConfigWarning(
            "parallelism",
            "has no effect: filters and scores run on one core, so the decisions do not "
            "depend on it",
        )
    )
    return parallelism


def _unsupported_fields(raw: Mapping[str, Any], warnings: list[ConfigWarning]) -> None:
    """Profiling, delayed caches and extenders: warned about when on, refused for extenders.

    kube-scheduler's defaults for the first three (profiling on) describe its own process; a
    config that turns them on is warned about, so the admin knows they change nothing here.
    """
    for key in ("enableProfiling", "enableContentionProfiling"):
        if _bool(raw, key, "", False):
            warnings.append(ConfigWarning(key, "has no effect: no profiling endpoints are served"))
    if _bool(raw, "delayCacheUntilActive", "", False):
        warnings.append(
            ConfigWarning(
                "delayCacheUntilActive",
                "has no effect: every replica fills its caches at start, so that a follower "
                "takes over at once",
            )
        )
    extenders = raw.get("extenders")
    if extenders is not None and not LIST.accepts(extenders):
        raise ConfigError("extenders", LIST.refusal(extenders))
    if extenders:
        raise ConfigError("extenders", "scheduler extenders are not supported")


def _explanations(raw: Any) -> Explanations:
    field = "kopfScheduler.explanations"
    raw = _mapping(raw, field)
    _check_fields(raw, EXPLANATIONS_FIELDS, field)
    annotate = _str(raw, "annotate", field, "failures")
    if annotate not in ANNOTATE_MODES:
        raise ConfigError(f"{field}.annotate", f"must be none, failures or all; got {annotate!r}")
    max_bytes = _int(
        raw, "maxBytes", field, 16384, low=MIN_EXPLANATION_BYTES, high=MAX_EXPLANATION_BYTES
    )
    assert max_bytes is not None
    return Explanations(annotate, max_bytes)


def _extensions(raw: Any) -> Extensions:
    field = "kopfScheduler"
    raw = _mapping(raw, field)
    _check_fields(raw, KOPF_SCHEDULER_FIELDS, field)
    return Extensions(
        explanations=_explanations(raw.get("explanations")),
        nomination_hygiene=_bool(raw, "nominationHygiene", field, True),
        fast_path=_bool(raw, "fastPath", field, True),
    )


def check_config(raw: Any) -> LoadedConfig:
    """Parse and validate a configuration object; raise ConfigError naming the field.

    The result carries the warnings about fields that are set but have no effect here. Every
    error found is raised at once (:class:`ConfigListError` when there are several).
    """

    if raw is None:
        raise ConfigError("", f"the configuration is empty; it needs apiVersion {API_VERSION}")
    raw = _mapping(raw, "")
    errors = ErrorCollector()
    api_version = raw.get("apiVersion")
    if api_version != API_VERSION:
        errors.add(ConfigError("apiVersion", f"must be {API_VERSION!r}, got {shown(api_version)}"))
    if raw.get("kind") != KIND:
        errors.add(ConfigError("kind", f"must be {KIND!r}, got {shown(raw.get('kind'))}"))
    errors.raise_any()  # another kind of document: its fields are not worth listing
    with errors.collecting():
        _check_fields(raw, TOP_LEVEL_FIELDS, "")
    warnings: list[ConfigWarning] = []
    with errors.collecting():
        _unsupported_fields(raw, warnings)
    parallelism = DEFAULT_PARALLELISM
    with errors.collecting():
        parallelism = _parallelism(raw, warnings)
    profiles = _profiles(raw.get("profiles"), errors, warnings)
    percentage = initial = maximum = None
    with errors.collecting():
        percentage = _int(raw, "percentageOfNodesToScore", "", None, low=0, high=100)
    with errors.collecting():
        initial = _int(raw, "podInitialBackoffSeconds", "", 1, low=1, high=INT64_MAX)
    with errors.collecting():
        maximum = _int(raw, "podMaxBackoffSeconds", "", 10, low=1, high=INT64_MAX)
    if initial is not None and maximum is not None and maximum < initial:
        errors.add(
            ConfigError(
                "podMaxBackoffSeconds",
                f"must be greater than or equal to podInitialBackoffSeconds ({initial})",
            )
        )
    leader_election = LeaderElection()
    with errors.collecting():
        leader_election = _leader_election(raw.get("leaderElection"))
    client_connection = ClientConnection()
    with errors.collecting():
        client_connection = _client_connection(raw.get("clientConnection"), warnings)
    extensions = Extensions()
    with errors.collecting():
        extensions = _extensions(raw.get("kopfScheduler"))
    errors.raise_any()
    assert initial is not None and maximum is not None
    config = SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        parallelism=parallelism,
        leader_election=leader_election,
        client_connection=client_connection,
        extensions=extensions,
    )
    return LoadedConfig(config, tuple(warnings))


def _profiles(
    raw: Any, errors: ErrorCollector, warnings: list[ConfigWarning]
) -> tuple[Profile, ...]:
    """The profiles; each one's errors are kept in ``errors``, and the plugins of each profile
    that could be read are then built (which finds unknown plugins and bad plugin args)."""
    from kopf_scheduler.config.profiles import validate_profiles

    if raw is not None and (not isinstance(raw, list) or not raw):
        errors.add(ConfigError("profiles", "must be a non-empty list"))
        return (Profile(),)
    profiles: dict[int, Profile] = {}
    for index, entry in enumerate(raw if raw is not None else [{}]):
        with errors.collecting():
            profiles[index] = _profile(entry, f"profiles[{index}]")
    seen: set[str] = set()
    for index, profile in profiles.items():
        if profile.scheduler_name in seen:
            errors.add(
                ConfigError(
                    f"profiles[{index}].schedulerName",
                    f"duplicate profile {profile.scheduler_name!r}",
                )
            )
        seen.add(profile.scheduler_name)
        if profile.scheduler_name == UPSTREAM_DEFAULT_SCHEDULER:
            warnings.append(
                ConfigWarning(
                    f"profiles[{index}].schedulerName",
                    f"{UPSTREAM_DEFAULT_SCHEDULER!r} is the name kube-scheduler serves; if it "
                    "runs too, both schedulers take the same pods and bind them independently",
                )
            )
    with errors.collecting():
        validate_profiles(profiles)
    return tuple(profiles.values())


def parse_config(raw: Any) -> SchedulerConfig:
    """Parse and validate a configuration object; raise ConfigError naming the field."""
    return check_config(raw).config


def check_config_file(path: str | Path) -> LoadedConfig:
    """Read and validate a config file; every error and warning names the file."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError("", f"cannot read the file: {error.strerror or error}", source) from None
    try:
        raw = load_yaml(decode_utf8(data))
    except DocumentError as error:
        raise ConfigError("", str(error), source) from None
    try:
        loaded = check_config(raw)
    except ConfigError as error:
        raise error.with_source(source) from None
    return LoadedConfig(
        loaded.config, tuple(warning.with_source(source) for warning in loaded.warnings)
    )


def default_config() -> SchedulerConfig:
    return parse_config({"apiVersion": API_VERSION, "kind": KIND})
