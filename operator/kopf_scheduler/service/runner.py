"""``kopf-scheduler run``: the scheduler as a process in a cluster, hosted by kopf.

Order of events: read and validate the configuration, the kubeconfig and the serving
certificate (a bad file stops here, naming the field, exit 2); serve /healthz, /readyz and
/metrics over HTTPS (metrics for authorized users only; a taken port stops here, exit 1); hand
the process to kopf. kopf's startup activity connects and LISTs everything into the cache
(storage objects and nodes, then pods, last), retrying with back-off while the API server cannot
be reached or refuses, unready meanwhile (``service/startup.py``), then starts the node and pod
reflectors, the Lease campaign (only the leader pops and binds; followers keep their caches
warm) and the loop, before kopf starts its own watches. kopf owns SIGTERM and SIGINT: it stops
its watches, then its cleanup activity stops popping, lets in-flight bindings finish (or be
forgotten) for a bounded time while the pod reflector still confirms them, and releases the
Lease. A component that ends on its own (a failure, a lost Lease) stops kopf the same way, and
the process exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import socket
import ssl
import sys
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import kopf
import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.config.loader import LoadedConfig, check_config_file, default_config
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.gangs.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.gc_tuning import freeze_current_objects, tune_for_large_heap
from kopf_scheduler.informer.handlers import EventHandler, EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import Watcher, watched_by
from kopf_scheduler.informer.workloads import WorkloadIndex
from kopf_scheduler.k8s.binder import ApiBinder
from kopf_scheduler.k8s.client import Api, make_api
from kopf_scheduler.k8s.clock import WallClock
from kopf_scheduler.k8s.delegated_auth import DelegatedAuth
from kopf_scheduler.k8s.deleter import ApiPodDeleter
from kopf_scheduler.k8s.errors import ClientConfigError
from kopf_scheduler.k8s.events import ApiEventRecorder
from kopf_scheduler.k8s.lease import LeaderElector
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.pod_group_status import ApiPodGroupStatusWriter
from kopf_scheduler.k8s.ratelimit import limiter_for
from kopf_scheduler.k8s.reflector import Reflector
from kopf_scheduler.k8s.resource_claims import ApiResourceClaimWriter
from kopf_scheduler.k8s.status import ApiPodStatusWriter
from kopf_scheduler.k8s.storage import ApiStorageWriter
from kopf_scheduler.kopf_watches.session import session_for
from kopf_scheduler.kopf_watches.watching import apply_settings, register
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.ports import ApiError
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.service import kopf_shutdown
from kopf_scheduler.service.annotations import StatusAnnotationWriter
from kopf_scheduler.service.explanations import ExplanationRecorder
from kopf_scheduler.service.health import (
    PING,
    PROBE_PATHS,
    HealthCheck,
    HealthServer,
    loop_progress_check,
)
from kopf_scheduler.service.kopf_logs import fold_kopf_retries
from kopf_scheduler.service.serving_cert import ServingCertError, server_ssl_context
from kopf_scheduler.service.startup import EndlessBackoffs, StartupError, list_until_synced
from kopf_scheduler.service.sync import Synchronizer

logger = structlog.get_logger("kopf_scheduler.service")

EXIT_RUNTIME = 1
EXIT_CONFIG = 2
SHUTDOWN_GRACE = 10.0
CONFIRM_GRACE = 2.0
RESYNC_PERIOD = 300.0
LEADER_ELECTION_HEALTH_TIMEOUT = 20.0
"""How long past leaseDuration a leader that stopped renewing stays healthy (kube-scheduler's)."""
LOOP_STALL_LIMIT = 300.0
"""How long one step of the scheduling loop may take before /healthz fails: longer than a status
patch with all its retries against a slow API server."""


@dataclass
class RunOptions:
    config_path: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None
    health_host: str = "0.0.0.0"
    health_port: int = 10259
    log_format: str | None = None
    log_level: str = "info"
    identity: str | None = None
    tune_gc: bool = False
    """Apply :mod:`kopf_scheduler.gc_tuning` (the ``run`` command does; tests leave it off)."""
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    """The serving certificate and key; a self-signed pair is made when neither is given."""
    always_allow_paths: tuple[str, ...] = PROBE_PATHS
    """Paths served without authentication; add ``/metrics`` to serve it to anyone."""


def _watch_task(kind: str) -> str:
    """The name of the task running ``kind``'s reflector: ``pod-watch``, ``node-watch``."""
    return f"{kind.lower()}-watch"


class _Lister:
    def __init__(self, api: Api) -> None:
        self._api = api

    async def list_items(self, path: str) -> list[dict[str, Any]]:
        result = await self._api.list(path)
        return list(result.items)


async def _connection_info(api: Api) -> kopf.ConnectionInfo:
    """kopf's credentials, taken from the same client configuration the adapter uses."""
    config = api.client.configuration
    header = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix(
        "authorization"
    )
    if inspect.isawaitable(header):
        header = await header
    scheme, token = None, None
    if header:
        parts = str(header).split(" ", 1)
        scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        scheme=scheme,
        token=token,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


class Operator:
    """One scheduler process; built by :func:`run`, kept as an object for tests."""

    def __init__(
        self,
        config: SchedulerConfig,
        options: RunOptions,
        api: Api,
        *,
        metrics: PrometheusMetrics | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``metrics`` should be the sink ``api`` reports to; ``ssl_context`` None serves HTTP."""
        self.config = config
        self.options = options
        self.api = api
        self.clock = WallClock()
        self.metrics = metrics if metrics is not None else PrometheusMetrics()
        # kube-scheduler posts events through a clientset of their own (same QPS and burst, its
        # own rate limiter), so events never take a binding's place in the budget; same here, and
        # the explanation annotations, informational like events, share the events' budget.
        connection = config.client_connection
        informational_api = api.with_limiter(limiter_for(connection.qps, connection.burst))
        self.events = ApiEventRecorder(informational_api)
        self.store = Store()
        self.stop = asyncio.Event()
        status_writer = ApiPodStatusWriter(api)
        self._status_writer = status_writer
        ports = Ports(
            self.clock,
            ApiBinder(api),
            status_writer,
            ApiPodDeleter(api),
            self.events,
            self.metrics,
            storage_writer=ApiStorageWriter(api),
            claim_writer=ApiResourceClaimWriter(api),
        )
        self._scheduler: Scheduler | None = None
        explanations = ExplanationRecorder(
            config.extensions.explanations,
            StatusAnnotationWriter(informational_api),
            self._spawn,
            self.store.get_pod,
        )
        self.workloads = WorkloadIndex()
        self.scheduler = build_scheduler(
            config,
            ports,
            ClusterView(
                self.store.get_pod,
                self.store.list_pdbs,
                self.store.storage,
                self.store.pod_groups,
                self.store.dra,
            ),
            on_attempt=explanations,
            workload_selectors=self.workloads,
        )
        self.handlers = EventHandlers(self.scheduler, self.store, self.workloads)
        self._synced = False
        self._failed = False
        self._lost_lease = False
        self._components: list[asyncio.Task[Any]] = []
        self._supervisor: asyncio.Task[None] | None = None
        self._unfold_kopf_retries: Callable[[], None] = lambda: None
        enabled = {
            plugin.name
            for framework in self.scheduler.profiles.values()
            for plugin in framework.plugins.all
        }
        self.kopf_kinds = watched_by(Watcher.KOPF, enabled)
        """What kopf watches: the kinds of any configuration and those of enabled plugins."""
        self.pod_groups: PodGroupStatusKeeper | None = None
        """Keeps the PodGroups' status, when a profile schedules gangs (their kind is watched)."""
        if any(watched.kind == "PodGroup" for watched in self.kopf_kinds):
            self.pod_groups = PodGroupStatusKeeper(
                ApiPodGroupStatusWriter(informational_api),
                self.events,
                self.clock,
                is_leader=self.is_leader,
                reporting_controller=config.profiles[0].scheduler_name,
            )
        # The periodic resync re-lists what kopf watches; the reflectors' own relists after
        # 410 Gone deliver the deletions a resync would find for theirs.
        self.sync = Synchronizer(_Lister(api), self.handlers, self.kopf_kinds, self._route)
        self.reflectors = {
            watched.kind: Reflector(api, watched.path, self._route(watched.kind))
            for watched in watched_by(Watcher.REFLECTOR)
        }
        election = config.leader_election
        self.elector: LeaderElector | None = None
        if election.leader_elect:
            self.scheduler.active = False
            identity = options.identity or f"{socket.gethostname()}_{os.getpid()}"
            self.elector = LeaderElector(
                api.with_limiter(limiter_for(5.0, 10)),
                namespace=options.namespace or election.resource_namespace,
                name=election.resource_name,
                identity=identity,
                lease_duration=election.lease_duration,
                renew_deadline=election.renew_deadline,
                retry_period=election.retry_period,
                on_started_leading=self._started_leading,
                on_stopped_leading=self._stopped_leading,
            )
            self._set_leader_status(0)
        self.health = HealthServer(
            host=options.health_host,
            port=options.health_port,
            registry=self.metrics.registry,
            is_synced=lambda: self.sync.synced and all(r.synced for r in self.reflectors.values()),
            is_leader=self.is_leader,
            checks=self._health_checks(),
            ssl_context=ssl_context,
            authenticator=DelegatedAuth(informational_api, self.clock),
            always_allow_paths=options.always_allow_paths,
        )

    def _route(self, kind: str) -> EventHandler:
        """The one handler of a kind's watch events: the scheduler's, and with a gang profile
        also the PodGroup status keeper's: it takes the PodGroups, and its census counts the
        members of every group from the pods, whatever their scheduler."""
        handle = self.handlers.route(kind)
        keeper = self.pod_groups
        if keeper is None:
            return handle
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

    def _health_checks(self) -> list[HealthCheck]:
        checks = [PING]
        elector = self.elector
        if elector is not None:
            checks.append(
                HealthCheck(
                    "leaderElection",
                    lambda: elector.renewal_problem(LEADER_ELECTION_HEALTH_TIMEOUT),
                )
            )
        scheduler = self.scheduler
        checks.append(
            loop_progress_check(lambda: scheduler.last_advanced, self.clock.now, LOOP_STALL_LIMIT)
        )
        return checks

    def _set_leader_status(self, value: int) -> None:
        lease = self.config.leader_election.resource_name
        self.metrics.set(m.LEADER_ELECTION_MASTER_STATUS, value, {"name": lease})

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self.scheduler.spawn(coroutine)

    def is_leader(self) -> bool:
        if self.elector is None:
            return True
        return bool(self.elector.is_leader)

    def _started_leading(self) -> None:
        logger.info("leader_elected", lease=self.config.leader_election.resource_name)
        self._set_leader_status(1)
        self.scheduler.active = True
        self.scheduler.notify()

    def _stopped_leading(self) -> None:
        lease = self.config.leader_election.resource_name
        if self.stop.is_set():
            logger.info("leadership_released", lease=lease)
        else:
            logger.warning("leadership_lost", lease=lease)
        self._set_leader_status(0)
        self.scheduler.active = False

    def _kopf_registry(self) -> kopf.OperatorRegistry:
        """kopf hosts the process: its startup activity lists the cluster and starts the
        scheduler, its cleanup activity stops it, and its signal handlers start the cleanup."""
        registry = kopf.OperatorRegistry()
        register(registry, self._route, self.kopf_kinds)

        @kopf.on.login(registry=registry, id="credentials")
        async def login(**_: Any) -> kopf.AiohttpSession:
            return session_for(await _connection_info(self.api))

        @kopf.on.startup(registry=registry, id="configure-kopf")
        async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
            apply_settings(settings)
            settings.networking.error_backoffs = EndlessBackoffs()

        @kopf.on.startup(registry=registry, id="start-scheduling", errors=kopf.ErrorsMode.PERMANENT)
        async def start(**_: Any) -> None:
            await self._start_scheduling()

        @kopf.on.cleanup(registry=registry, id="stop-scheduling", errors=kopf.ErrorsMode.PERMANENT)
        async def stop(**_: Any) -> None:
            await self.shutdown()

        return registry

    async def _resync_periodically(self) -> None:
        while True:
            await asyncio.sleep(RESYNC_PERIOD)
            try:
                await self.sync.list_all()
            except ApiError as error:
                logger.warning("resync_failed", reason=str(error))

    async def _list_all(self) -> None:
        """List every watched collection, all requests at once; deliver the kopf-watched kinds
        first, then nodes, then pods (the table's dependency order)."""
        reflectors = list(self.reflectors.values())
        fetching = asyncio.gather(*(reflector.fetch_listing() for reflector in reflectors))
        try:
            await self.sync.list_all()
        except BaseException:
            fetching.cancel()
            await asyncio.gather(fetching, return_exceptions=True)  # its own error is not news
            raise
        listings = await fetching
        for reflector, listing in zip(reflectors, listings, strict=True):
            reflector.deliver_listing(listing)

    async def _serve_health(self) -> None:
        try:
            await self.health.start()
        except OSError as error:
            # aiohttp repeats the address in strerror; the errno's own text is the useful part.
            errno = error.errno
            reason = os.strerror(errno) if errno and errno > 0 else (error.strerror or str(error))
            raise StartupError(
                f"cannot serve /healthz, /readyz and /metrics on "
                f"{self.health.host}:{self.health.port}: {reason}"
            ) from None
        logger.info(
            "serving", host=self.health.host, port=self.health.port, scheme=self.health.scheme
        )

    async def run(self) -> int:
        """Run until stopped; :class:`StartupError` when the health port cannot be served.

        The health port and the event sink start before kopf, so probes answer (unready) while
        the cluster is listed; kopf then runs until a signal or :attr:`stop`, and everything
        started before it is closed after it.
        """
        await self._serve_health()
        await self.events.start()
        try:
            await kopf.operator(
                registry=self._kopf_registry(),
                standalone=True,
                clusterwide=True,
                stop_flag=self.stop,
            )
        except Exception as error:  # kopf's own failure, or a startup or cleanup that raised
            self._failed = True
            logger.error("component_failed", component="kopf", exc_info=error.__cause__ or error)
        finally:
            # A signal during the startup activity cancels it; whatever it had started stops here.
            await self.shutdown()
            self._unfold_kopf_retries()
            await self.events.stop()
            await self.health.stop()
            await self.api.close()
        if not self._synced:
            logger.info("stopped_before_synced")
            return EXIT_RUNTIME if self._failed else 0
        logger.info("stopped")
        return EXIT_RUNTIME if self._failed or self._lost_lease else 0

    async def _start_scheduling(self) -> None:
        """List everything into the cache, then start the watches, the Lease and the loop."""
        if not await list_until_synced(self.api, self._list_all, self.stop):
            return
        self._synced = True
        if self.options.tune_gc:
            freeze_current_objects()
        logger.info(
            "caches_synced",
            nodes=self.scheduler.cache.node_count(),
            pods=self.scheduler.cache.pod_count(),
            pending=len(self.scheduler.queue.pending_pods()),
        )
        # From here on an outage is told once when it starts and once when it ends.
        self.api.outage.arm()
        self._unfold_kopf_retries = fold_kopf_retries(self.api.outage)
        self._components = [
            *(
                asyncio.create_task(reflector.run(), name=_watch_task(kind))
                for kind, reflector in self.reflectors.items()
            ),
            asyncio.create_task(self.scheduler.run(self.stop), name="scheduler"),
            asyncio.create_task(self._resync_periodically(), name="resync"),
        ]
        if self.pod_groups is not None:
            self._components.append(
                asyncio.create_task(self.pod_groups.run(self.stop), name="pod-group-status")
            )
        if self.elector is not None:
            self._components.append(
                asyncio.create_task(self.elector.run(self.stop), name="leader-election")
            )
        else:
            logger.info("leader_election_disabled")
        self._supervisor = asyncio.create_task(self._supervise(), name="supervisor")
        logger.info("ready", profiles=list(self.scheduler.profiles))

    async def _supervise(self) -> None:
        """Stop the process when a component ends on its own: a failure, or a lost Lease."""
        stop_waiter = asyncio.create_task(self.stop.wait())
        try:
            done, _ = await asyncio.wait(
                [stop_waiter, *self._components], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stop_waiter.cancel()
        failed = [t for t in done if t is not stop_waiter and not t.cancelled() and t.exception()]
        for task in failed:
            logger.error("component_failed", component=task.get_name(), exc_info=task.exception())
        # Like kube-scheduler, a replica that loses its Lease while running exits with an error,
        # so that it restarts with fresh state instead of carrying assumptions of its old term.
        self._lost_lease = not self.stop.is_set() and any(
            t.get_name() == "leader-election" for t in done if t not in failed
        )
        if self._lost_lease:
            logger.error("leader_election_lost", lease=self.config.leader_election.resource_name)
        self._failed = self._failed or bool(failed)
        self.stop.set()

    async def shutdown(self) -> None:
        """Stop popping, let unfinished bindings end while the pod watch still confirms them,
        then stop the watches and release the Lease; a second call does nothing."""
        components, self._components = self._components, []
        if not components:
            return
        logger.info("shutting_down")
        self.scheduler.active = False
        self.stop.set()
        drained = True
        try:
            await asyncio.wait_for(self.scheduler.drain(), SHUTDOWN_GRACE)
        except TimeoutError:
            drained = False
        # A binding that returned is confirmed by the pod watch a moment later; wait for that
        # (the watches still run) so that only bindings really left unfinished are reported.
        deadline = asyncio.get_running_loop().time() + CONFIRM_GRACE
        while self.scheduler.cache.assumed_pods() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        for pod in self.scheduler.cache.assumed_pods():
            if drained:
                logger.info("binding_unconfirmed", pod=pod.key, node=pod.node_name)
            else:
                logger.warning("binding_abandoned", pod=pod.key, node=pod.node_name)
        for task in components:
            if task.get_name() == "resync" or task.get_name() in map(_watch_task, self.reflectors):
                task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*components, return_exceptions=True), SHUTDOWN_GRACE
            )
        if self._supervisor is not None:
            await self._supervisor


async def run(options: RunOptions) -> int:
    configure_logging(options.log_level, options.log_format)
    kopf_shutdown.install(asyncio.get_running_loop())
    if options.tune_gc:
        tune_for_large_heap()
    try:
        loaded = (
            check_config_file(options.config_path)
            if options.config_path
            else LoadedConfig(default_config())
        )
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    config = loaded.config
    for warning in loaded.warnings:
        logger.warning("config_warning", field=warning.field, reason=warning.reason)
    try:
        ssl_context = server_ssl_context(
            options.tls_cert_file, options.tls_private_key_file, bind_address=options.health_host
        )
    except ServingCertError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    kubeconfig = options.kubeconfig or config.client_connection.kubeconfig or None
    metrics = PrometheusMetrics()
    try:
        check_kubeconfig(kubeconfig)
        api = await make_api(
            kubeconfig,
            config.client_connection.qps,
            config.client_connection.burst,
            metrics=metrics,
        )
    except (ConfigError, ClientConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    operator = Operator(config, options, api, metrics=metrics, ssl_context=ssl_context)
    # Until kopf installs its own handlers, a signal stops the operator before kopf starts.
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, operator.stop.set)
    try:
        return await operator.run()
    except StartupError as error:
        await api.close()
        print(f"error: {error}", file=sys.stderr)
        return EXIT_RUNTIME
