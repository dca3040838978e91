"""Build the operator process whole: the assembled scheduler, and around it what a cluster needs.

:func:`~kopf_scheduler.assembly.build_scheduler` builds the scheduler the operator, the
simulator and the benchmarks share; this is the rest of the operator's composition root, in one
place: the ports implemented against the API server, the stores and the event handlers the
watches feed, the reflectors and the resync, the Lease, the PodGroup status keeper of a gang
profile, and the secure port. Every object is built with what it needs passed in, and nothing
is set on it afterwards; :class:`~kopf_scheduler.service.process.Operator` then only runs them.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.handlers import EventHandler, EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import Watcher, watched_by
from kopf_scheduler.informer.workloads import WorkloadIndex
from kopf_scheduler.k8s.binder import ApiBinder
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.delegated_auth import DelegatedAuth
from kopf_scheduler.k8s.deleter import ApiPodDeleter
from kopf_scheduler.k8s.event_recorder import ApiEventRecorder
from kopf_scheduler.k8s.lease import LeaderElector
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.pod_group_status_writer import ApiPodGroupStatusWriter
from kopf_scheduler.k8s.pod_status_writer import ApiPodStatusWriter
from kopf_scheduler.k8s.ratelimit import limiter_for
from kopf_scheduler.k8s.real_clocks import WallClock
from kopf_scheduler.k8s.reflector import Reflector
from kopf_scheduler.k8s.resource_claims import ApiResourceClaimWriter
from kopf_scheduler.k8s.storage_writer import ApiStorageWriter
from kopf_scheduler.pod_group_controller.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.ports import Clock
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.scheduler.tasks import BackgroundTasks
from kopf_scheduler.service.annotations import StatusAnnotationWriter
from kopf_scheduler.service.explanations import ExplanationRecorder
from kopf_scheduler.service.health import PING, HealthCheck, HealthServer, loop_progress_check
from kopf_scheduler.service.leadership import Leadership
from kopf_scheduler.service.process import Operator
from kopf_scheduler.service.run_options import RunOptions
from kopf_scheduler.service.sync import Synchronizer

LEADER_ELECTION_HEALTH_TIMEOUT = 20.0
"""How long past leaseDuration a leader that stopped renewing stays healthy (kube-scheduler's)."""
LOOP_STALL_LIMIT = 300.0
"""How long one step of the scheduling loop may take before /healthz fails: longer than a status
patch with all its retries against a slow API server."""


class _Lister:
    def __init__(self, api: Api) -> None:
        self._api = api

    async def list_items(self, path: str) -> list[dict[str, Any]]:
        result = await self._api.list(path)
        return list(result.items)


def build_operator(
    config: SchedulerConfig,
    options: RunOptions,
    api: Api,
    *,
    metrics: PrometheusMetrics | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Operator:
    """Wire one scheduler process; must be called from within the running event loop.

    ``metrics`` should be the sink ``api`` reports to (a fresh one when not given);
    ``ssl_context`` None serves the secure port over plain HTTP.
    """
    clock = WallClock()
    metrics = metrics if metrics is not None else PrometheusMetrics()
    # kube-scheduler posts events through a clientset of their own (same QPS and burst, its own
    # rate limiter), so events never take a binding's place in the budget; same here, and the
    # explanation annotations, informational like events, share the events' budget.
    connection = config.client_connection
    informational_api = api.with_limiter(limiter_for(connection.qps, connection.burst))
    events = ApiEventRecorder(informational_api)
    store = Store()
    stop = asyncio.Event()
    election = config.leader_election
    tasks = BackgroundTasks()
    workloads = WorkloadIndex()
    scheduler = build_scheduler(
        config,
        Ports(
            clock,
            ApiBinder(api),
            ApiPodStatusWriter(api),
            ApiPodDeleter(api),
            events,
            metrics,
            storage_writer=ApiStorageWriter(api),
            claim_writer=ApiResourceClaimWriter(api),
        ),
        ClusterView(store.get_pod, store.list_pdbs, store.storage, store.pod_groups, store.dra),
        on_attempt=ExplanationRecorder(
            config.extensions.explanations,
            StatusAnnotationWriter(informational_api),
            tasks.spawn,
            store.get_pod,
        ),
        workload_selectors=workloads,
        tasks=tasks,
        active=not election.leader_elect,
    )
    handlers = EventHandlers(scheduler, store, workloads)
    elector: LeaderElector | None = None
    if election.leader_elect:
        leadership = Leadership(scheduler, metrics, election.resource_name, stop)
        elector = LeaderElector(
            api.with_limiter(limiter_for(5.0, 10)),
            namespace=options.namespace or election.resource_namespace,
            name=election.resource_name,
            identity=options.identity or f"{socket.gethostname()}_{os.getpid()}",
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
            on_started_leading=leadership.started_leading,
            on_stopped_leading=leadership.stopped_leading,
        )
    is_leader = _leader_check(elector)
    enabled = {
        plugin.name for framework in scheduler.profiles.values() for plugin in framework.plugins.all
    }
    kopf_kinds = watched_by(Watcher.KOPF, enabled)
    pod_groups: PodGroupStatusKeeper | None = None
    if any(watched.kind == "PodGroup" for watched in kopf_kinds):
        pod_groups = PodGroupStatusKeeper(
            ApiPodGroupStatusWriter(informational_api),
            events,
            clock,
            is_leader=is_leader,
            reporting_controller=config.profiles[0].scheduler_name,
        )
    route = _route_with_pod_group_status(handlers, pod_groups)
    # The periodic resync re-lists what kopf watches; the reflectors' own relists after 410 Gone
    # deliver the deletions a resync would find for theirs.
    sync = Synchronizer(_Lister(api), handlers, kopf_kinds, route)
    reflectors = {
        watched.kind: Reflector(api, watched.path, route(watched.kind))
        for watched in watched_by(Watcher.REFLECTOR)
    }
    health = HealthServer(
        host=options.health_host,
        port=options.health_port,
        registry=metrics.registry,
        is_synced=lambda: sync.synced and all(r.synced for r in reflectors.values()),
        is_leader=is_leader,
        checks=_health_checks(elector, scheduler, clock),
        ssl_context=ssl_context,
        authenticator=DelegatedAuth(informational_api, clock),
        always_allow_paths=options.always_allow_paths,
    )
    return Operator(
        api=api,
        scheduler=scheduler,
        events=events,
        health=health,
        sync=sync,
        reflectors=reflectors,
        route=route,
        kopf_kinds=kopf_kinds,
        stop=stop,
        elector=elector,
        pod_groups=pod_groups,
        lease_name=election.resource_name,
        freeze_after_listing=options.tune_gc,
    )


def _leader_check(elector: LeaderElector | None) -> Callable[[], bool]:
    """Whether this replica leads: always, without leader election."""
    if elector is None:
        return lambda: True
    return lambda: bool(elector.is_leader)


def _route_with_pod_group_status(
    handlers: EventHandlers, keeper: PodGroupStatusKeeper | None
) -> Callable[[str], EventHandler]:
    """The one handler of each kind's watch events: the scheduler's, and with a gang profile
    also the PodGroup status keeper's: it takes the PodGroups, and its census counts the members
    of every group from the pods, whatever their scheduler."""
    if keeper is None:
        return handlers.route

    def route(kind: str) -> EventHandler:
        handle = handlers.route(kind)
        observe: EventHandler
        if kind == "Pod":
            observe = keeper.census.observe
        elif kind == "PodGroup":
            observe = keeper.observe_group
        else:
            return handle

        def handle_and_observe(event_type: str, raw: Mapping[str, Any]) -> None:
            handle(event_type, raw)
            observe(event_type, raw)

        return handle_and_observe

    return route


def _health_checks(
    elector: LeaderElector | None, scheduler: Scheduler, clock: Clock
) -> list[HealthCheck]:
    checks = [PING]
    if elector is not None:
        checks.append(
            HealthCheck(
                "leaderElection", lambda: elector.renewal_problem(LEADER_ELECTION_HEALTH_TIMEOUT)
            )
        )
    checks.append(loop_progress_check(lambda: scheduler.last_advanced, clock.now, LOOP_STALL_LIMIT))
    return checks
