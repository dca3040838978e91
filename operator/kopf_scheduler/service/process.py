"""One scheduler process hosted by kopf: start it, supervise its components, shut it down.

kopf owns the process: its startup activity lists the cluster into the cache (retrying with
back-off while the API server cannot be reached, unready meanwhile), then starts the node and pod
reflectors, the Lease campaign (only the leader pops and binds; followers keep their caches warm)
and the loop, before kopf starts its own watches. kopf owns SIGTERM and SIGINT: it stops its
watches, then its cleanup activity stops popping, lets in-flight bindings finish (or be
forgotten) for a bounded time while the pod reflector still confirms them, and releases the
Lease. A component that ends on its own (a failure, a lost Lease) raises kopf's stop flag, so
the same cleanup runs, and the process exits 1. What the process is made of is built whole,
before anything starts, by :func:`~kopf_scheduler.service.operator_assembly.build_operator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import kopf
import structlog

from kopf_scheduler.gc_tuning import freeze_current_objects
from kopf_scheduler.informer.handlers import EventHandler
from kopf_scheduler.informer.watched_kinds import WatchedKind
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.event_recorder import ApiEventRecorder
from kopf_scheduler.k8s.lease import LeaderElector
from kopf_scheduler.k8s.reflector import Reflector
from kopf_scheduler.kopf_watches.session import session_for
from kopf_scheduler.kopf_watches.watching import apply_settings, register
from kopf_scheduler.pod_group_controller.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.ports import ApiError
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.service.health import HealthServer
from kopf_scheduler.service.kopf_logs import fold_kopf_retries
from kopf_scheduler.service.loop_lag import observe_loop_lag
from kopf_scheduler.service.startup import EndlessBackoffs, StartupError, list_until_synced
from kopf_scheduler.service.sync import Synchronizer

logger = structlog.get_logger("kopf_scheduler.service")

EXIT_RUNTIME = 1
SHUTDOWN_GRACE = 10.0
CONFIRM_GRACE = 2.0
RESYNC_PERIOD = 300.0


def _watch_task(kind: str) -> str:
    """The name of the task running ``kind``'s reflector: ``pod-watch``, ``node-watch``."""
    return f"{kind.lower()}-watch"


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
    """One scheduler process: runs the components it is given until stopped."""

    def __init__(
        self,
        *,
        api: Api,
        scheduler: Scheduler,
        events: ApiEventRecorder,
        health: HealthServer,
        sync: Synchronizer,
        reflectors: Mapping[str, Reflector],
        route: Callable[[str], EventHandler],
        kopf_kinds: tuple[WatchedKind, ...],
        stop: asyncio.Event,
        elector: LeaderElector | None = None,
        pod_groups: PodGroupStatusKeeper | None = None,
        lease_name: str = "",
        freeze_after_listing: bool = False,
    ) -> None:
        """``route(kind)`` is the one handler of a kind's events, whoever delivers them (kopf's
        watches for ``kopf_kinds``, the reflectors, the listings); ``stop`` is kopf's stop flag;
        ``elector`` campaigns for the Lease named ``lease_name``, when leader election is on;
        ``pod_groups`` keeps the PodGroups' status, when a profile schedules gangs;
        ``freeze_after_listing`` moves what the first listing made out of the garbage
        collector's way (:mod:`kopf_scheduler.gc_tuning`)."""
        self.api = api
        self.scheduler = scheduler
        self.events = events
        self.health = health
        self.sync = sync
        self.reflectors = reflectors
        self.route = route
        self.kopf_kinds = kopf_kinds
        self.stop = stop
        self.elector = elector
        self.pod_groups = pod_groups
        self._lease_name = lease_name
        self._freeze_after_listing = freeze_after_listing
        self._synced = False
        self._failed = False
        self._lost_lease = False
        self._components: list[asyncio.Task[Any]] = []
        self._supervisor: asyncio.Task[None] | None = None
        self._unfold_kopf_retries: Callable[[], None] = lambda: None

    def _kopf_registry(self) -> kopf.OperatorRegistry:
        """kopf hosts the process: its startup activity lists the cluster and starts the
        scheduler, its cleanup activity stops it, and its signal handlers start the cleanup."""
        registry = kopf.OperatorRegistry()
        register(registry, self.route, self.kopf_kinds)

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
        if self._freeze_after_listing:
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
            asyncio.create_task(observe_loop_lag(self.api.metrics), name="loop-lag"),
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
            logger.error("leader_election_lost", lease=self._lease_name)
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
