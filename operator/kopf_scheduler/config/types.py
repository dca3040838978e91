"""The configuration as typed, defaulted dataclasses (what the rest of the code reads)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SCHEDULER_NAME = "kopf-scheduler"
EXTENSION_POINT_NAMES = (
    "multiPoint",
    "queueSort",
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 0


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()


@dataclass(frozen=True)
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: Mapping[str, PluginSet] = field(default_factory=dict)
    """Extension point (config name) → the user's enabled/disabled lists."""
    plugin_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Plugin name → raw args."""


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_SCHEDULER_NAME
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    content_type: str = "application/json"


@dataclass(frozen=True)
class Explanations:
    """Where the operator stores decision records on pods (our addition, not upstream)."""

    annotate: str = "failures"
    """``none``, ``failures`` (failed attempts and preemptions) or ``all``."""
    max_bytes: int = 16384


@dataclass(frozen=True)
class Extensions:
    """kopf-scheduler's own settings, under the top-level key ``kopfScheduler``.

    kube-scheduler rejects this key: remove it when moving a config file there.
    """

    explanations: Explanations = field(default_factory=Explanations)
    nomination_hygiene: bool = True
    fast_path: bool = True
    """Vectorised Filter/Score for the attempts it can serve with identical decisions; off runs
    every attempt plugin by plugin, node by node."""


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[Profile, ...] = (Profile(),)
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    parallelism: int = 16
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    extensions: Extensions = field(default_factory=Extensions)

    def profile(self, scheduler_name: str) -> Profile | None:
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        return None
