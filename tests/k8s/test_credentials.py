"""Credentials that rotate: a token file read again like client-go, a CA file read again on TLS
failure. The servers here accept one token (or present one certificate) that the test changes
while the client runs."""

from __future__ import annotations

import pathlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from kopf_scheduler.k8s.client import Api, make_api
from kopf_scheduler.k8s.credentials import TOKEN_LEEWAY, TOKEN_PERIOD, FileToken
from kopf_scheduler.ports import ApiError
from kopf_scheduler.service.serving_cert import self_signed_pem
from tests.clock import FakeClock
from tests.k8s.support import START, ok, reply

PODS = "/api/v1/pods"
POD_LIST = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}


def write_kubeconfig(
    path: pathlib.Path, server: str, *, token_file: str | None = None, ca_file: str | None = None
) -> pathlib.Path:
    user = {"tokenFile": token_file} if token_file else {}
    cluster: dict[str, Any] = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = ca_file
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


class RotatingServer:
    """Accepts only the token in ``accepted``; records the Authorization header of every request."""

    def __init__(self, accepted: str) -> None:
        self.accepted = accepted
        self.seen: list[str] = []

    def __call__(self, request: kmock.Request) -> kmock.Response:
        header = request.headers.get("Authorization", "")
        self.seen.append(header)
        if header != f"Bearer {self.accepted}":
            return reply(401, "Unauthorized", "Unauthorized")
        return ok(POD_LIST)


@pytest.fixture
async def rotating(
    kmock: kmock.RawHandler, tmp_path: pathlib.Path, clock: FakeClock
) -> AsyncIterator[tuple[RotatingServer, pathlib.Path, Api]]:
    server = RotatingServer("first")
    kmock[f"get {PODS}"] << server
    token = tmp_path / "token"
    token.write_text("first\n")
    kubeconfig = write_kubeconfig(
        tmp_path / "config", str(kmock.url).rstrip("/"), token_file="token"
    )
    api = await make_api(str(kubeconfig), qps=-1, clock=clock)
    try:
        yield server, token, api
    finally:
        await api.close()


async def test_a_rotated_token_file_is_used_once_the_kept_token_is_due(
    rotating: tuple[RotatingServer, pathlib.Path, Api], clock: FakeClock
) -> None:
    server, token, api = rotating
    await api.request("GET", PODS)
    token.write_text("second\n")

    clock.advance(TOKEN_PERIOD - TOKEN_LEEWAY - 1)
    await api.request("GET", PODS)
    server.accepted = "second"
    clock.advance(1)
    await api.request("GET", PODS)

    assert server.seen == ["Bearer first", "Bearer first", "Bearer second"]


async def test_a_401_reads_the_token_file_at_once_and_sends_again(
    rotating: tuple[RotatingServer, pathlib.Path, Api], clock: FakeClock
) -> None:
    server, token, api = rotating
    await api.request("GET", PODS)
    token.write_text("second")
    server.accepted = "second"

    assert await api.request("GET", PODS) == POD_LIST
    assert server.seen == ["Bearer first", "Bearer first", "Bearer second"]
    assert clock.sleeps == []


async def test_a_401_with_the_token_on_disk_is_final_and_sent_once(
    rotating: tuple[RotatingServer, pathlib.Path, Api],
) -> None:
    server, _token, api = rotating
    server.accepted = "someone-else"

    with pytest.raises(ApiError) as caught:
        await api.request("GET", PODS)

    assert caught.value.status == 401
    assert server.seen == ["Bearer first"]


async def test_a_token_read_again_for_the_request_itself_is_not_sent_twice(
    rotating: tuple[RotatingServer, pathlib.Path, Api], clock: FakeClock
) -> None:
    # The kept token is due: the request reads the file and carries the new token. A 401 to
    # that token is final; sending the very same token again would be refused again.
    server, token, api = rotating
    await api.request("GET", PODS)
    token.write_text("second")
    server.accepted = "someone-else"
    clock.advance(TOKEN_PERIOD)

    with pytest.raises(ApiError) as caught:
        await api.request("GET", PODS)

    assert caught.value.status == 401
    assert server.seen == ["Bearer first", "Bearer second"]


def test_an_unreadable_token_file_keeps_the_token_read_before(tmp_path: pathlib.Path) -> None:
    clock = FakeClock(START)
    path = tmp_path / "token"
    path.write_text("first")
    token = FileToken(str(path), clock=clock)
    path.unlink()
    clock.advance(TOKEN_PERIOD)

    assert token.current() == "first"
    path.write_text("second")
    assert token.current() == "second"


def _tls_server_context(pem: bytes, directory: pathlib.Path) -> ssl.SSLContext:
    (directory / "server.pem").write_bytes(pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(directory / "server.pem"))
    return context


def _certificate(pem: bytes) -> bytes:
    end = b"-----END CERTIFICATE-----\n"
    return pem[: pem.index(end) + len(end)]


async def test_a_changed_ca_file_is_trusted_on_the_next_connection(
    tmp_path: pathlib.Path,
) -> None:
    served = self_signed_pem("127.0.0.1")
    other = self_signed_pem("127.0.0.1")
    app = web.Application()

    async def pods(request: web.Request) -> web.Response:
        return web.json_response(POD_LIST)

    app.router.add_get(PODS, pods)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=_tls_server_context(served, tmp_path))
    ca = tmp_path / "ca.crt"
    ca.write_bytes(_certificate(other))
    kubeconfig = write_kubeconfig(
        tmp_path / "config", f"https://127.0.0.1:{server.port}", ca_file=str(ca)
    )
    clock = FakeClock(START)
    api = await make_api(str(kubeconfig), qps=-1, clock=clock)
    try:
        with pytest.raises(ApiError, match="certificate verify failed"):
            await api.request("GET", PODS)
        ca.write_bytes(_certificate(served))

        assert await api.request("GET", PODS) == POD_LIST
    finally:
        await api.close()
        await server.close()
