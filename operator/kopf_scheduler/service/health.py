"""The scheduler's port: /healthz, /livez, /readyz for probes and /metrics for Prometheus.

Served like kube-scheduler's secure port: over HTTPS when given an ``ssl_context`` (the runner
always gives one), with ``/metrics`` behind authentication and authorization delegated to the API
server (:mod:`kopf_scheduler.k8s.delegated_auth`), and the paths in ``always_allow_paths``
(by default the three probes) open to anyone, token or not: a probe never depends on the API
server. Adding ``/metrics`` to them serves the metrics without authentication, for local use.

``/healthz`` and ``/livez`` run the health checks and answer ``ok``; when one fails they answer
500 with upstream's text (each check ``[+]name ok`` or ``[-]name failed: reason withheld``, then
``healthz check failed``) and log the reason. ``?verbose`` lists the checks on success too.
``/readyz`` answers 200 once the initial lists are in the cache (followers are ready too: they
keep warm caches to take over), and says in the body whether this replica leads.

Denials read as kube-scheduler's: 401 with a ``Status`` named ``Unauthorized`` for a token the
API server rejects, 403 ``forbidden: User "..." cannot get path "/metrics"`` for a user without
the RBAC rule, and 500 when the API server could not be asked.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kopf_scheduler.k8s.delegated_auth import ANONYMOUS, AccessDecision, UserInfo
from kopf_scheduler.ports import ApiError

logger = structlog.get_logger("kopf_scheduler.service.health")

PROBE_PATHS = ("/healthz", "/readyz", "/livez")
"""Open without authentication by default, as kube-scheduler's always-allow paths."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class HealthCheck:
    """One named check of ``/healthz``: ``problem()`` says what is wrong, or ``None``."""

    name: str
    problem: Callable[[], str | None]


PING = HealthCheck("ping", lambda: None)


def loop_progress_check(
    last_advanced: Callable[[], float | None], now: Callable[[], float], limit: float
) -> HealthCheck:
    """Fails when the scheduling loop has been on one step for more than ``limit`` seconds.

    ``last_advanced`` is ``None`` while the loop waits for work, which is healthy however long.
    """

    def problem() -> str | None:
        since = last_advanced()
        if since is None:
            return None
        stalled = now() - since
        if stalled > limit:
            return f"the scheduling loop has not advanced for {stalled:.0f}s"
        return None

    return HealthCheck("scheduling-loop", problem)


class Authenticator(Protocol):
    """What the port needs of :class:`kopf_scheduler.k8s.delegated_auth.DelegatedAuth`."""

    async def authenticate(self, token: str) -> UserInfo | None: ...

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AccessDecision: ...


def _status_body(code: int, reason: str, message: str, *, details: bool) -> str:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = {}
    body["code"] = code
    return json.dumps(body, indent=2)


def _unauthorized() -> web.Response:
    return web.Response(
        status=401,
        text=_status_body(401, "Unauthorized", "Unauthorized", details=False),
        content_type="application/json",
    )


def _forbidden(user: UserInfo, verb: str, path: str, reason: str) -> web.Response:
    message = f"forbidden: User {json.dumps(user.name)} cannot {verb} path {json.dumps(path)}"
    if reason:
        message = f"{message}: {reason}"
    response = web.Response(
        status=403,
        text=_status_body(403, "Forbidden", message, details=True),
        content_type="application/json",
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


class HealthServer:
    def __init__(
        self,
        *,
        host: str,
        port: int,
        registry: CollectorRegistry,
        is_synced: Callable[[], bool],
        is_leader: Callable[[], bool],
        checks: Sequence[HealthCheck] = (PING,),
        ssl_context: ssl.SSLContext | None = None,
        authenticator: Authenticator | None = None,
        always_allow_paths: Collection[str] = PROBE_PATHS,
    ) -> None:
        """Serve on ``host:port`` (0: any free port, read :attr:`port` after :meth:`start`).

        Without an ``authenticator`` every path is open (tests and embedding only); with one,
        every path but ``always_allow_paths`` needs a user the API server allows.
        """
        self.host = host
        self.port = port
        self._registry = registry
        self._is_synced = is_synced
        self._is_leader = is_leader
        self._checks = tuple(checks)
        self._ssl_context = ssl_context
        self._authenticator = authenticator
        self._always_allow = frozenset(always_allow_paths)
        self._runner: web.AppRunner | None = None

    @property
    def scheme(self) -> str:
        return "https" if self._ssl_context is not None else "http"

    def _health_handler(self, name: str) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            lines, failed = [], []
            for check in self._checks:
                problem = check.problem()
                if problem is None:
                    lines.append(f"[+]{check.name} ok\n")
                else:
                    lines.append(f"[-]{check.name} failed: reason withheld\n")
                    failed.append(f"{check.name}: {problem}")
            if failed:
                logger.warning("health_check_failed", endpoint=name, failed="; ".join(failed))
                return web.Response(status=500, text="".join(lines) + f"{name} check failed\n")
            if "verbose" in request.query:
                return web.Response(text="".join(lines) + f"{name} check passed\n")
            return web.Response(text="ok")

        return handle

    async def _readyz(self, request: web.Request) -> web.Response:
        synced = self._is_synced()
        body = {"synced": synced, "leader": self._is_leader()}
        return web.Response(
            status=200 if synced else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        payload = generate_latest(self._registry)
        response = web.Response(body=payload)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def _guarded(self, path: str, handler: Handler) -> Handler:
        authenticator = self._authenticator
        if authenticator is None or path in self._always_allow:
            return handler

        async def guard(request: web.Request) -> web.StreamResponse:
            verb = "get"  # only GET routes are served
            token = _bearer_token(request)
            user: UserInfo | None = ANONYMOUS
            if token is not None:
                try:
                    user = await authenticator.authenticate(token)
                except ApiError as error:
                    logger.error("token_review_failed", path=path, reason=str(error))
                    return _unauthorized()
            if user is None:
                return _unauthorized()
            try:
                decision = await authenticator.authorize(user, verb, path)
            except ApiError as error:
                logger.error("access_review_failed", path=path, reason=str(error))
                return web.Response(
                    status=500, text=f"Internal Server Error: {json.dumps(path)}: {error}\n"
                )
            if not decision.allowed:
                return _forbidden(user, verb, path, decision.reason)
            return await handler(request)

        return guard

    async def start(self) -> None:
        app = web.Application()
        routes: dict[str, Handler] = {
            "/healthz": self._health_handler("healthz"),
            "/livez": self._health_handler("livez"),
            "/readyz": self._readyz,
            "/metrics": self._metrics,
        }
        for path, handler in routes.items():
            app.router.add_get(path, self._guarded(path, handler))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl_context)
        await site.start()
        if self.port == 0 and site._server is not None:  # an ephemeral port was requested
            sockets = getattr(site._server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
