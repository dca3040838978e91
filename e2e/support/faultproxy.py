"""A fault-injecting HTTPS proxy between one scheduler process and the API server.

Real clusters put load balancers, overloaded API servers and flaky networks between a
scheduler and its data; the scheduler must come through 5xx answers, 429 with ``Retry-After``,
connections reset before or after the request reached the server, seconds of latency and a
partition without binding a pod twice or losing one. This proxy makes those faults happen on
demand, in the test's process, for one kubeconfig only, so that another replica (or the admin's
watcher) keeps its direct view of the cluster.

It terminates TLS with a certificate that a CA of its own signs (the scheduler's kubeconfig
trusts that CA), forwards every request with its headers (the bearer token included) to the API
server over TLS that trusts the cluster's CA, and streams the answer back chunk by chunk, so
watches pass through unchanged. It speaks HTTP because a status code and ``Retry-After`` cannot
be injected below it.

    proxy = FaultProxy(upstream="https://127.0.0.1:6443", upstream_ca=Path("ca.crt"))
    proxy.start()                              # serves on proxy.url, in a thread of its own
    proxy.faults = Faults(error_rate=0.2)      # takes effect for the next request
    proxy.partition()                          # resets every open stream, holds new requests
    proxy.heal()                               # held requests are dropped, never forwarded
    proxy.partition_after("GET", "/api/v1/pods")  # partition once it and all in flight are done
    proxy.partition_after_all([("GET", "/api/v1/pods"), ("GET", "/api/v1/nodes")])  # all of them
    proxy.partition(hold=False)                # a server gone: new requests are reset at once
    proxy.faults = Faults(cut_each_kind_once=True)  # one reply of each kind cut off mid-body
    proxy.stats.snapshot()                     # what was injected, and the 410s seen in watches
    proxy.stop()

Which faults a request gets is drawn once, when it arrives, from ``random.Random(seed)``, so a
run is reproducible in what it decides (not in timing).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import json
import random
import ssl
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
GONE_MARKERS = (b'"code":410', b"too old resource version")


@dataclass(frozen=True)
class Faults:
    """What happens to each request that arrives while these are set (rates are 0..1).

    ``reset_after_rate`` forwards the request and then cuts the connection before the answer
    reaches the client: the server acted, the client never learns it (the lost binding reply).
    Watches (``watch=true``) get only ``latency``, ``watch_reset_rate`` and
    ``cut_each_kind_once``: failing them at the HTTP level would test nothing but the reconnect
    loop.

    ``cut_each_kind_once`` cuts the first answer of each kind of request (:func:`request_kind`:
    discovery, and the verb with the resource, e.g. ``create pods/binding``, ``watch nodes``)
    off mid-body: the status line, the headers and the first half of the body (of a watch: its
    first chunk) reach the client, then the connection is reset, as when the API server stops
    while it answers. The kinds cut are counted as ``cut <kind>``.
    """

    latency: float = 0.0
    error_rate: float = 0.0
    error_status: int = 503
    throttle_rate: float = 0.0
    retry_after: int = 1
    reset_rate: float = 0.0
    reset_after_rate: float = 0.0
    watch_reset_rate: float = 0.0
    cut_each_kind_once: bool = False


VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def request_kind(method: str, path: str, watch: bool) -> str:
    """``discovery`` for the API's own description (``/api``, ``/apis/<group>/<version>``,
    ``/version``), otherwise the verb and the resource with its subresource: ``list pods``,
    ``watch nodes``, ``create pods/binding``, ``patch pods/status``, ``update leases``."""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        rest = []
    if not rest:
        return "discovery"
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = "/".join(rest[:1] + rest[2:3])
    if watch:
        verb = "watch"
    elif method == "GET" and len(rest) == 1:
        verb = "list"
    else:
        verb = VERBS.get(method, method.lower())
    return f"{verb} {resource}"


class Stats:
    """Counts of what the proxy did, safe to read from the test's thread."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, key: str, count: int = 1) -> None:
        with self._lock:
            self._counts[key] += count

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def __getitem__(self, key: str) -> int:
        with self._lock:
            return self._counts[key]


@dataclass(frozen=True)
class Certificate:
    """A CA and a serving certificate for 127.0.0.1 that it signs, as PEM files."""

    ca: Path
    cert: Path
    key: Path


def make_certificate(directory: Path) -> Certificate:
    """A throwaway CA and a certificate for 127.0.0.1 signed by it (valid one day)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "e2e fault proxy CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    paths = Certificate(directory / "ca.crt", directory / "proxy.crt", directory / "proxy.key")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths.key.chmod(0o600)
    return paths


def _status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status``, the body the API server answers errors with."""
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()


class FaultProxy:
    """See the module docstring. ``start``/``stop`` from the test's thread."""

    def __init__(self, upstream: str, upstream_ca: Path, work_dir: Path, *, seed: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.upstream_ca = upstream_ca
        self.certificate = make_certificate(work_dir / "fault-proxy-pki")
        self.faults = Faults()
        self.stats = Stats()
        self.port = 0
        self._random = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._healed: asyncio.Event | None = None
        self._streams: dict[int, web.BaseRequest] = {}
        self._partition_after: tuple[set[tuple[str, str]], bool] | None = None
        """The requests still to be answered before a partition, and its ``hold``."""
        self._partition_when_idle: bool | None = None
        """Set once the awaited request is answered: partition (with this ``hold``) as the last
        request then in flight is answered."""
        self._requests_in_flight = 0
        """Forwarded requests other than watches that have not had their whole answer."""
        self._hold = True
        self._kinds_cut: set[str] = set()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # -- control, from the test's thread ----------------------------------------------------

    def start(self) -> None:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._serve())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the fault proxy did not start within 30 s")

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()
        self._loop = None

    def partition(self, *, hold: bool = True) -> None:
        """Cut every open connection and hold new requests until :meth:`heal`; with ``hold``
        false, reset each new request at once instead, as a server that is gone."""
        self._call(lambda: self._partition(hold))

    def heal(self) -> None:
        """End the partition: held requests are dropped (connection reset), never forwarded."""
        self._call(self._heal)

    def partition_after(self, method: str, path: str, *, hold: bool = True) -> None:
        """:meth:`partition` once the next ``method path`` request (not a watch) and every other
        request then in flight have had their whole answer: the moment a scheduler's last
        initial LIST arrives, whichever collection it is (the listings go out together)."""
        self.partition_after_all([(method, path)], hold=hold)

    def partition_after_all(
        self, requests: Iterable[tuple[str, str]], *, hold: bool = True
    ) -> None:
        """:meth:`partition` once each ``(method, path)`` of ``requests`` (not watches) has
        been answered and every other request then in flight has had its whole answer: right
        after a scheduler's initial LISTs, however their answers interleave."""
        self._partition_after = ({(method.upper(), path) for method, path in requests}, hold)

    def cut(self) -> None:
        """Reset every open connection once (watches included); new ones pass."""
        self._call(self._cut)

    @property
    def partitioned(self) -> bool:
        return self._healed is not None and not self._healed.is_set()

    @contextlib.contextmanager
    def injecting(self, faults: Faults) -> Iterator[None]:
        self.faults = faults
        try:
            yield
        finally:
            self.faults = Faults()

    def _call(self, function: object) -> None:
        assert self._loop is not None, "the proxy is not running"

        async def call() -> None:
            function()  # type: ignore[operator]

        asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    # -- the server, in the proxy's loop ----------------------------------------------------

    async def _serve(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.certificate.cert, self.certificate.key)
        upstream_context = ssl.create_default_context(cafile=str(self.upstream_ca))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=upstream_context, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )
        self._healed = asyncio.Event()
        self._healed.set()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A client that goes away (or that the proxy cut) ends its handler, and with it the
        # upstream request: watches of a cut client do not linger on the API server.
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            handler_cancellation=True,
            shutdown_timeout=5,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        self.port = int(server.sockets[0].getsockname()[1])

    async def _shutdown(self) -> None:
        self._cut()
        if self._healed is not None:
            self._healed.set()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _partition(self, hold: bool = True) -> None:
        assert self._healed is not None
        self._hold = hold
        self._healed.clear()
        self.stats.add("partitions")
        self._cut()

    def _heal(self) -> None:
        assert self._healed is not None
        self._healed.set()

    def _cut(self) -> None:
        for request in list(self._streams.values()):
            self._abort(request)
        self.stats.add("connections_cut", len(self._streams))
        self._streams.clear()

    @staticmethod
    def _abort(request: web.BaseRequest) -> None:
        transport = request.transport
        if transport is not None:
            transport.abort()

    def _drop(self, request: web.BaseRequest) -> web.StreamResponse:
        """Reset the client's connection; the answer returned is never sent."""
        self._abort(request)
        return web.Response(status=502)

    def _draw(self, rate: float) -> bool:
        return rate > 0 and self._random.random() < rate

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.stats.add("requests")
        assert self._healed is not None
        if not self._healed.is_set():
            if not self._hold:
                self.stats.add("refused")
                return self._drop(request)
            self.stats.add("held")
            await self._healed.wait()
            return self._drop(request)
        faults = self.faults
        watch = request.query.get("watch") in ("true", "1")
        if faults.latency > 0:
            self.stats.add("delayed")
            await asyncio.sleep(faults.latency)
        if not watch:
            if self._draw(faults.reset_rate):
                self.stats.add("reset_before")
                return self._drop(request)
            if self._draw(faults.error_rate):
                self.stats.add(f"status_{faults.error_status}")
                return web.Response(
                    status=faults.error_status,
                    body=_status_body(faults.error_status, "ServiceUnavailable", "injected"),
                    content_type="application/json",
                )
            if self._draw(faults.throttle_rate):
                self.stats.add("status_429")
                return web.Response(
                    status=429,
                    headers={"Retry-After": str(faults.retry_after)},
                    body=_status_body(429, "TooManyRequests", "injected: retry later"),
                    content_type="application/json",
                )
        reset_after = not watch and self._draw(faults.reset_after_rate)
        cut_watch = watch and self._draw(faults.watch_reset_rate)
        cut_mid_body = False
        if faults.cut_each_kind_once:
            kind = request_kind(request.method, request.path, watch)
            if kind not in self._kinds_cut:
                self._kinds_cut.add(kind)
                self.stats.add(f"cut {kind}")
                cut_watch = cut_watch or watch
                cut_mid_body = not watch
        return await self._forward(
            request, reset_after=reset_after, cut_watch=cut_watch, cut_mid_body=cut_mid_body
        )

    async def _forward(
        self,
        request: web.Request,
        *,
        reset_after: bool,
        cut_watch: bool,
        cut_mid_body: bool = False,
    ) -> web.StreamResponse:
        assert self._session is not None
        watch = request.query.get("watch") in ("true", "1")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        self._streams[id(request)] = request
        if not watch:
            self._requests_in_flight += 1
        try:
            async with self._session.request(
                request.method,
                self.upstream + request.rel_url.raw_path_qs,
                headers=headers,
                data=body or None,
                allow_redirects=False,
            ) as upstream:
                if reset_after:
                    await upstream.read()
                    self.stats.add("reset_after")
                    return self._drop(request)
                if upstream.status == 410:
                    self.stats.add("gone")
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for key, value in upstream.headers.items():
                    if key.lower() not in HOP_BY_HOP:
                        response.headers[key] = value
                await response.prepare(request)
                if cut_mid_body:
                    body = await upstream.read()
                    await response.write(body[: len(body) // 2])
                    await asyncio.sleep(0.05)  # the client has read the headers and the half
                    self._abort(request)
                    return response
                async for chunk in upstream.content.iter_any():
                    if any(marker in chunk for marker in GONE_MARKERS):
                        self.stats.add("gone")
                    await response.write(chunk)
                    if cut_watch:
                        self.stats.add("watch_reset")
                        self._abort(request)
                        return response
                trigger = self._partition_after
                if not watch and trigger is not None:
                    awaited, partition_hold = trigger
                    awaited.discard((request.method, request.path))
                    if not awaited:
                        self._partition_after = None
                        self._partition_when_idle = partition_hold
                hold = self._partition_when_idle
                if not watch and hold is not None and self._requests_in_flight == 1:
                    # The last answer: in force before the client can read its end.
                    self._partition_when_idle = None
                    self._streams.pop(id(request), None)  # not to be cut: it is complete
                    self._partition(hold)
                await response.write_eof()
                return response
        except (aiohttp.ClientError, TimeoutError, ConnectionError):
            self.stats.add("forward_errors")
            return self._drop(request)
        finally:
            self._streams.pop(id(request), None)
            if not watch:
                self._requests_in_flight -= 1
