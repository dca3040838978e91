"""The one door to the API server: authenticated, rate-limited, retried, raw JSON in and out.

kubernetes-asyncio provides authentication (kubeconfig, in-cluster service account, token refresh)
and the HTTP connection pool; nothing else of it is used. Requests go through
``ApiClient.call_api`` without a response type and with ``_preload_content=False``, and the body is
parsed here into plain dicts: building the client's model classes costs about 340 µs per pod
against about 20 µs for a dict, and the rest of the scheduler reads dicts anyway. The parser is
``orjson``, about twice as fast as ``json`` on pod-sized objects, which counts on watch streams.

kubernetes-asyncio opens its aiohttp session with ``trust_env=True``, which makes aiohttp look up
proxy variables (in a worker thread) and read ``~/.netrc`` on every single request; at hundreds of
bindings per second that was a fifth of the process's CPU. The proxy is therefore resolved once
from the environment when the client is made (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``, like
client-go) and the per-request lookup is switched off.

Every request waits for the shared token bucket (``ratelimit``), is retried on overload and network
failures (``retry``), and fails with a ``ports`` error (``errors``), never a library exception.

Given a ``Metrics`` sink, the client reports what client-go reports for every Kubernetes
component: ``rest_client_requests_total{code,method,host}`` once per attempt (retries and watch
requests included; ``code`` is ``<error>`` when no reply came) and
``rest_client_request_duration_seconds{verb,host}`` once per request, from the first wait for
the rate limiter to the last reply (watches, which client-go does not time, are not timed here).

Every attempt also tells the shared :class:`~kopf_scheduler.k8s.outage.OutageReport` whether a
reply came, so that an outage is logged once, not once per retried request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import incluster_config

from kopf_scheduler import __version__
from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.credentials import (
    Credentials,
    FileToken,
    TokenFileError,
    token_file_of,
)
from kopf_scheduler.k8s.errors import (
    LIBRARY_EXCEPTIONS,
    ClientConfigError,
    TransportError,
    from_exception,
    from_response,
)
from kopf_scheduler.k8s.outage import OutageReport
from kopf_scheduler.k8s.ratelimit import DEFAULT_BURST, DEFAULT_QPS, RateLimiter, limiter_for
from kopf_scheduler.k8s.real_clocks import MonotonicClock
from kopf_scheduler.k8s.retry import (
    DEFAULT_RETRY,
    RetryPolicy,
    parse_retry_after,
    send_with_retries,
)
from kopf_scheduler.ports import ApiError, Clock, Metrics, NullMetrics

logger = structlog.get_logger("kopf_scheduler.k8s.client")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

USER_AGENT = f"kopf-scheduler/{__version__}"
DEFAULT_TIMEOUT = 60.0
DEFAULT_PAGE_SIZE = 500


@dataclass(frozen=True)
class Reply:
    """One HTTP reply, before it is judged a success or an error."""

    status: int
    reason: str
    retry_after: float | None
    body: bytes


@dataclass(frozen=True)
class ListResult:
    """The objects of a LIST and the resourceVersion to start a WATCH from."""

    items: list[dict[str, Any]]
    resource_version: str


def decode(body: bytes, status: int = 200) -> dict[str, Any]:
    """A JSON object body as a dict; an empty or non-object body as ``{}``."""
    if not body:
        return {}
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ApiError(status, "InvalidResponse", f"the reply is not JSON: {error}") from None
    return parsed if isinstance(parsed, dict) else {}


class Api:
    """Raw-JSON requests to the API server through a kubernetes-asyncio ``ApiClient``.

    Every request of this instance, retries included, first waits for ``limiter``; give the
    instance to every writer so they share one budget, as kube-scheduler's single client does.
    ``clock`` times the retry backoff and the request-duration metric; ``timeout`` bounds each
    attempt in seconds; ``metrics`` receives the ``rest_client_*`` metrics.
    """

    def __init__(
        self,
        client: Any,
        *,
        limiter: RateLimiter | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        clock: Clock | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        owns_client: bool = True,
        metrics: Metrics | None = None,
        outage: OutageReport | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.client = client
        self.credentials = credentials
        """The token and CA files behind ``client``, if they are to be read again."""
        self.limiter: RateLimiter = (
            limiter if limiter is not None else limiter_for(DEFAULT_QPS, DEFAULT_BURST)
        )
        self.retry = retry
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.timeout = timeout
        self._owns_client = owns_client
        self._background: asyncio.Task[None] | None = None
        self.metrics: Metrics = metrics if metrics is not None else NullMetrics()
        self.host = server_host(client)
        """The ``host`` label of the ``rest_client_*`` metrics: the server's host:port."""
        self.outage = outage if outage is not None else OutageReport(server=self.host)
        """Told of every attempt; shared with the siblings of :meth:`with_limiter`."""

    def with_limiter(self, limiter: RateLimiter) -> Api:
        """A sibling on the same connection pool with its own limiter.

        kube-scheduler renews its Lease through a separate client, so a backlog of bindings cannot
        delay a renewal past the renew deadline; this is the same separation.
        """
        return Api(
            self.client,
            limiter=limiter,
            retry=self.retry,
            clock=self.clock,
            timeout=self.timeout,
            owns_client=False,
            metrics=self.metrics,
            outage=self.outage,
            credentials=self.credentials,
        )

    async def close(self) -> None:
        if self._background is not None:
            self._background.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._background
            self._background = None
        if self._owns_client:
            if self.credentials is not None:
                await self.credentials.close()
            await self.client.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        content_type: str = JSON,
        query: Mapping[str, str] | None = None,
        *,
        retry: RetryPolicy | None = None,
    ) -> dict[str, Any]:
        """Send one request (with retries) and return the reply's JSON object.

        Raises :class:`~kopf_scheduler.ports.NotFoundError` for 404,
        :class:`~kopf_scheduler.ports.ConflictError` for 409 (``reason`` tells ``AlreadyExists``
        from ``Conflict``), :class:`~kopf_scheduler.ports.ApiError` for other failures, and
        :class:`~kopf_scheduler.k8s.errors.TransportError` (an ``ApiError`` with status 0) when no
        reply arrived.
        """
        method = method.upper()

        attempt = functools.partial(self._attempt, method, path, body, content_type, query)

        async def send() -> Reply:
            return await self._send(attempt, method, path)

        started = self.clock.now()
        try:
            reply = await send_with_retries(
                send, retry if retry is not None else self.retry, self.clock, f"{method} {path}"
            )
        finally:
            self.metrics.observe(
                m.REST_CLIENT_REQUEST_DURATION,
                self.clock.now() - started,
                {"verb": method, "host": self.host},
            )
        if 200 <= reply.status < 300:
            return decode(reply.body, reply.status)
        raise from_response(reply.status, reply.body, reply.reason)

    async def list(
        self,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> ListResult:
        """All objects of a collection, fetched in pages of ``page_size`` (0: in one request).

        Items get the ``apiVersion`` and ``kind`` the API server leaves out of list items, so they
        look like the objects a WATCH delivers. If a continue token expires midway (410), the list
        starts over in one unpaginated request, as client-go's pager does.
        """
        params = dict(query or {})
        items: list[dict[str, Any]] = []
        token = ""
        limit = page_size
        while True:
            page_params = dict(params)
            if limit > 0:
                page_params["limit"] = str(limit)
            if token:
                page_params["continue"] = token
            try:
                page = await self.request("GET", path, query=page_params)
            except ApiError as error:
                if error.status == 410 and token:
                    logger.info(
                        "list_expired_midway", path=path, detail="listing again in one page"
                    )
                    items, token, limit = [], "", 0
                    continue
                raise
            _add_items(items, page)
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or ""
            if not token:
                return ListResult(items, str(metadata.get("resourceVersion") or ""))

    async def watch(
        self, path: str, query: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of one WATCH request on ``path``, decoded, until the server ends the stream.

        ``query`` must carry ``watch=true`` and the watch options; ``timeout`` bounds the whole
        request (give the server's ``timeoutSeconds`` some slack). A non-200 reply raises its
        ``ports`` error; a dropped connection raises :class:`TransportError`. Not retried: the
        caller resumes from the last resourceVersion it saw.
        """
        await self.limiter.acquire()
        sent = self._sent_token()
        try:
            response = await self.client.call_api(
                path,
                "GET",
                query_params=list(query.items()),
                header_params={"Accept": JSON},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=DEFAULT_TIMEOUT),
            )
        except LIBRARY_EXCEPTIONS as exc:
            self._count_attempt("GET", None)
            raise self._no_reply(self._failure(exc)) from exc
        self._count_attempt("GET", int(response.status))
        try:
            if response.status != 200:
                if response.status == 401 and self.credentials is not None:
                    # The caller starts the watch again; let it carry the token on disk.
                    self.credentials.unauthorized(sent)
                payload = await response.read()
                raise from_response(int(response.status), payload, str(response.reason or ""))
            try:
                async for line in response.content:
                    if line.strip():
                        yield decode(line)
            except LIBRARY_EXCEPTIONS as exc:
                raise self._no_reply(from_exception(exc)) from exc
        finally:
            response.release()

    async def _send(self, attempt: Callable[[], Awaitable[Reply]], method: str, path: str) -> Reply:
        """One attempt, sent a second time at once if a 401 met a token since replaced."""
        sent = self._sent_token()
        reply = await attempt()
        if (
            reply.status == 401
            and self.credentials is not None
            and self.credentials.unauthorized(sent)
        ):
            logger.info(
                "token_rejected", method=method, path=path, detail="sending again with the new one"
            )
            reply = await attempt()
        return reply

    def _sent_token(self) -> str | None:
        return self.credentials.sent_token() if self.credentials is not None else None

    async def _attempt(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        content_type: str,
        query: Mapping[str, str] | None,
    ) -> Reply:
        await self.limiter.acquire()
        try:
            response = await self.client.call_api(
                path,
                method,
                query_params=list(query.items()) if query else None,
                header_params={"Accept": JSON, "Content-Type": content_type},
                body=dict(body) if body is not None else None,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=self.timeout,
            )
            try:
                payload: bytes = await response.read()
            finally:
                response.release()
        except LIBRARY_EXCEPTIONS as exc:
            self._count_attempt(method, None)
            error = self._no_reply(self._failure(exc))
            if isinstance(error, TransportError):
                raise error from exc
            raise error from None
        self._count_attempt(method, int(response.status))
        return Reply(
            status=int(response.status),
            reason=str(response.reason or ""),
            retry_after=parse_retry_after(response.headers),
            body=payload,
        )

    def _failure(self, exc: BaseException) -> ApiError:
        """The ports error for ``exc``; a failed TLS verification first reads the CA file again."""
        if isinstance(exc, aiohttp.ClientSSLError) and self.credentials is not None:
            self.credentials.tls_failed()
        return from_exception(exc)

    def _no_reply(self, error: ApiError) -> ApiError:
        """``error``, told to the outage report first when no reply came at all."""
        if isinstance(error, TransportError):
            self.outage.no_reply(error.message)
        return error

    def _count_attempt(self, method: str, status: int | None) -> None:
        if status is not None:
            self.outage.replied()
        code = "<error>" if status is None else str(status)
        labels = {"code": code, "method": method, "host": self.host}
        self.metrics.inc(m.REST_CLIENT_REQUESTS, labels)


def server_host(client: Any) -> str:
    """The ``host:port`` of the server ``client`` talks to, as client-go labels its metrics."""
    configuration = getattr(client, "configuration", None)
    server = str(getattr(configuration, "host", "") or "")
    return urllib.parse.urlsplit(server).netloc or "none"


def _add_items(items: list[dict[str, Any]], page: Mapping[str, Any]) -> None:
    kind = page.get("kind")
    item_kind = kind[: -len("List")] if isinstance(kind, str) and kind.endswith("List") else None
    api_version = page.get("apiVersion")
    for item in page.get("items") or ():
        if not isinstance(item, dict):
            continue
        if item_kind and "kind" not in item:
            item["kind"] = item_kind
        if api_version and "apiVersion" not in item:
            item["apiVersion"] = api_version
        items.append(item)


async def load_configuration(
    kubeconfig: str | None = None, context: str | None = None
) -> tuple[Any, Any]:
    """The client configuration and, for kubeconfig files, the loader that can refresh tokens.

    An explicit kubeconfig path wins; without one, a pod's service account is used when
    ``KUBERNETES_SERVICE_HOST`` is set; otherwise ``$KUBECONFIG`` or ``~/.kube/config``.
    """
    configuration = Configuration()
    try:
        if kubeconfig:
            loader = await kube_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
            return configuration, loader
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            load_incluster: Any = kube_config.load_incluster_config  # untyped in the library
            load_incluster(client_configuration=configuration)
            return configuration, None
        loader = await kube_config.load_kube_config(
            config_file=os.environ.get("KUBECONFIG") or None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
        return configuration, loader
    except (kube_config.ConfigException, OSError, ValueError, KeyError, TypeError) as error:
        source = kubeconfig or (
            "in-cluster" if os.environ.get("KUBERNETES_SERVICE_HOST") else "default kubeconfig"
        )
        raise ClientConfigError(
            f"cannot load the Kubernetes client configuration ({source}): {error}"
        ) from error


async def make_api(
    kubeconfig: str | None = None,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    *,
    context: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retry: RetryPolicy = DEFAULT_RETRY,
    clock: Clock | None = None,
    metrics: Metrics | None = None,
) -> Api:
    """An :class:`Api` for the cluster the configuration points to, limited to ``qps``/``burst``.

    Tokens that expire (exec plugins, cloud auth providers in a kubeconfig) are refreshed in the
    background until :meth:`Api.close`; a token file (the pod's ServiceAccount token, a
    kubeconfig ``tokenFile``) is read again as :mod:`~kopf_scheduler.k8s.credentials` describes,
    timed by ``clock``.
    """
    configuration, loader = await load_configuration(kubeconfig, context)
    if not configuration.proxy:
        configuration.proxy = proxy_from_environment(str(configuration.host))
    client = ApiClient(configuration)
    client.user_agent = USER_AGENT
    disable_per_request_environment_lookup(client)
    credentials = Credentials(
        client,
        _file_token(kubeconfig, loader, clock),
        prepare=disable_per_request_environment_lookup,
    )
    api = Api(
        client,
        limiter=limiter_for(qps, burst),
        retry=retry,
        clock=clock,
        timeout=timeout,
        owns_client=True,
        metrics=metrics,
        credentials=credentials,
    )
    if loader is not None:
        api._background = asyncio.create_task(_refresh_tokens(loader, configuration))
    return api


def _file_token(kubeconfig: str | None, loader: Any, clock: Clock | None) -> FileToken | None:
    """The token file to read again as it rotates: the kubeconfig user's ``tokenFile``, or the
    pod's ServiceAccount token when the in-cluster configuration was used."""
    if loader is not None:
        path = token_file_of(loader)
    elif not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        path = incluster_config.SERVICE_TOKEN_FILENAME
    else:
        path = None
    if path is None:
        return None
    try:
        return FileToken(path, clock=clock)
    except TokenFileError as error:
        raise ClientConfigError(str(error)) from None


def proxy_from_environment(server: str) -> str | None:
    """The proxy the environment names for ``server`` (``None`` if none, or if NO_PROXY says so)."""
    parsed = urllib.parse.urlsplit(server)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parsed.scheme or "https") or proxies.get("all")
    if not proxy:
        return None
    if parsed.hostname and urllib.request.proxy_bypass(parsed.hostname):
        return None
    return proxy


def disable_per_request_environment_lookup(client: Any) -> None:
    """Stop aiohttp from reading proxy variables and ~/.netrc on every request of ``client``.

    ``_trust_env`` is the session's own switch (one of the attributes aiohttp allows setting);
    kubernetes-asyncio offers no way to pass ``trust_env=False``.
    """
    session = getattr(getattr(client, "rest_client", None), "pool_manager", None)
    if session is not None and hasattr(session, "_trust_env"):
        session._trust_env = False


async def _refresh_tokens(loader: Any, configuration: Any) -> None:
    # kubernetes-asyncio's refresher returns at once for static credentials and loops otherwise.
    while True:
        try:
            await kube_config.refresh_token(loader, configuration)
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("token_refresh_failed", retry_in_seconds=60)
            await asyncio.sleep(60)
