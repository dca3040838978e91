"""The scheduler's port: open probes, /metrics behind delegated auth, health checks, HTTPS."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry, Counter

from kopf_scheduler.k8s.delegated_auth import ANONYMOUS, AccessDecision, UserInfo
from kopf_scheduler.ports import ApiError
from kopf_scheduler.service.health import (
    PING,
    PROBE_PATHS,
    HealthCheck,
    HealthServer,
    loop_progress_check,
)
from kopf_scheduler.service.serving_cert import server_ssl_context

PROMETHEUS = UserInfo("system:serviceaccount:monitoring:prometheus")

FORBIDDEN_ANONYMOUS = """{
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "forbidden: User \\"system:anonymous\\" cannot get path \\"/metrics\\"",
  "reason": "Forbidden",
  "details": {},
  "code": 403
}"""
"""kube-scheduler v1.34.10's answer to an anonymous GET /metrics, byte for byte."""

UNAUTHORIZED = """{
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "Unauthorized",
  "reason": "Unauthorized",
  "code": 401
}"""
"""kube-scheduler v1.34.10's answer to a token the API server rejects, byte for byte."""


@dataclass
class FakeAuth:
    """Tokens it knows, users allowed /metrics, and a record of what it was asked."""

    users: dict[str, UserInfo] = field(default_factory=lambda: {"good": PROMETHEUS})
    allowed: set[str] = field(default_factory=lambda: {PROMETHEUS.name})
    reason: str = ""
    failing: str = ""
    asked: list[str] = field(default_factory=list)

    async def authenticate(self, token: str) -> UserInfo | None:
        self.asked.append(f"token {token}")
        if self.failing == "authenticate":
            raise ApiError(403, "Forbidden", "cannot create tokenreviews")
        return self.users.get(token)

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AccessDecision:
        self.asked.append(f"access {user.name} {verb} {path}")
        if self.failing == "authorize":
            raise ApiError(403, "Forbidden", "cannot create subjectaccessreviews")
        return AccessDecision(user.name in self.allowed, self.reason)


def registry() -> CollectorRegistry:
    result = CollectorRegistry()
    counter = Counter("scheduler_schedule_attempts_total", "attempts", ["result"], registry=result)
    counter.labels("scheduled").inc(3)
    return result


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    servers: list[HealthServer] = []

    async def start(**kwargs: Any) -> str:
        options: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "registry": registry(),
            "is_synced": lambda: True,
            "is_leader": lambda: False,
            **kwargs,
        }
        server = HealthServer(**options)
        await server.start()
        servers.append(server)
        return f"{server.scheme}://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        await server.stop()


async def get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=False) as response,
    ):
        return response.status, await response.text()


async def test_readyz_reports_sync_and_leadership(serve: Callable[..., Any]) -> None:
    synced = {"value": False}
    base = await serve(is_synced=lambda: synced["value"])

    status, body = await get(f"{base}/readyz")
    assert (status, json.loads(body)) == (503, {"synced": False, "leader": False})
    synced["value"] = True
    status, body = await get(f"{base}/readyz")
    assert (status, json.loads(body)) == (200, {"synced": True, "leader": False})


@pytest.mark.parametrize("path", PROBE_PATHS)
async def test_probes_need_no_token_and_no_review(serve: Callable[..., Any], path: str) -> None:
    auth = FakeAuth()
    base = await serve(authenticator=auth)

    anonymous, _ = await get(f"{base}{path}")
    with_bad_token, _ = await get(f"{base}{path}", token="forged")

    assert (anonymous, with_bad_token) == (200, 200)
    assert auth.asked == []


@pytest.mark.parametrize(
    ("token", "auth", "status", "body"),
    [
        pytest.param(None, FakeAuth(), 403, FORBIDDEN_ANONYMOUS, id="anonymous"),
        pytest.param("forged", FakeAuth(), 401, UNAUTHORIZED, id="rejected-token"),
        pytest.param(
            "good",
            FakeAuth(allowed=set()),
            403,
            FORBIDDEN_ANONYMOUS.replace("system:anonymous", PROMETHEUS.name),
            id="user-without-rbac",
        ),
        pytest.param(
            "good",
            FakeAuth(allowed=set(), reason="blocked by webhook"),
            403,
            FORBIDDEN_ANONYMOUS.replace("system:anonymous", PROMETHEUS.name).replace(
                '\\"/metrics\\"', '\\"/metrics\\": blocked by webhook'
            ),
            id="denied-with-reason",
        ),
        pytest.param("good", FakeAuth(failing="authenticate"), 401, UNAUTHORIZED, id="no-review"),
        pytest.param(
            "good",
            FakeAuth(failing="authorize"),
            500,
            'Internal Server Error: "/metrics": 403 Forbidden: cannot create '
            "subjectaccessreviews\n",
            id="no-access-review",
        ),
    ],
)
async def test_metrics_are_denied_as_kube_scheduler_denies_them(
    serve: Callable[..., Any], token: str | None, auth: FakeAuth, status: int, body: str
) -> None:
    base = await serve(authenticator=auth)

    assert await get(f"{base}/metrics", token=token) == (status, body)


async def test_metrics_are_served_to_an_authorized_user(serve: Callable[..., Any]) -> None:
    auth = FakeAuth()
    base = await serve(authenticator=auth)

    status, text = await get(f"{base}/metrics", token="good")

    assert status == 200
    assert 'scheduler_schedule_attempts_total{result="scheduled"} 3.0' in text
    assert auth.asked == ["token good", f"access {PROMETHEUS.name} get /metrics"]


async def test_the_anonymous_user_is_authorized_like_any_other(serve: Callable[..., Any]) -> None:
    auth = FakeAuth(allowed={ANONYMOUS.name})
    base = await serve(authenticator=auth)

    status, _ = await get(f"{base}/metrics")

    assert status == 200
    assert auth.asked == ["access system:anonymous get /metrics"]


async def test_metrics_can_be_opened_to_anyone_for_local_use(serve: Callable[..., Any]) -> None:
    auth = FakeAuth(allowed=set())
    always_allow: Collection[str] = (*PROBE_PATHS, "/metrics")
    base = await serve(authenticator=auth, always_allow_paths=always_allow)

    status, _ = await get(f"{base}/metrics")

    assert status == 200
    assert auth.asked == []


async def test_a_probe_left_out_of_the_open_paths_needs_auth(serve: Callable[..., Any]) -> None:
    base = await serve(authenticator=FakeAuth(), always_allow_paths=("/healthz",))

    assert (await get(f"{base}/readyz"))[0] == 403
    assert (await get(f"{base}/healthz"))[0] == 200


def failing(name: str) -> HealthCheck:
    return HealthCheck(name, lambda: f"{name} is broken")


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
async def test_a_failing_check_fails_the_health_endpoints_with_upstreams_text(
    serve: Callable[..., Any], path: str, caplog: pytest.LogCaptureFixture
) -> None:
    base = await serve(checks=[PING, failing("leaderElection")])

    status, body = await get(f"{base}{path}")

    name = path.removeprefix("/")
    assert status == 500
    assert body == f"[+]ping ok\n[-]leaderElection failed: reason withheld\n{name} check failed\n"
    [entry] = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert entry["event"] == "health_check_failed"
    assert "leaderElection is broken" in entry["failed"]  # the reason goes to the log only


async def test_healthy_checks_answer_ok_or_list_themselves_when_verbose(
    serve: Callable[..., Any],
) -> None:
    base = await serve(checks=[PING, HealthCheck("leaderElection", lambda: None)])

    assert await get(f"{base}/healthz") == (200, "ok")
    assert await get(f"{base}/healthz?verbose") == (
        200,
        "[+]ping ok\n[+]leaderElection ok\nhealthz check passed\n",
    )


@pytest.mark.parametrize(
    ("last_advanced", "now", "problem"),
    [
        pytest.param(None, 10_000.0, None, id="waiting-for-work"),
        pytest.param(1000.0, 1299.0, None, id="long-step-within-the-limit"),
        pytest.param(1000.0, 1301.0, "the scheduling loop has not advanced for 301s", id="stuck"),
    ],
)
def test_the_loop_check_fails_only_on_a_step_longer_than_the_limit(
    last_advanced: float | None, now: float, problem: str | None
) -> None:
    check = loop_progress_check(lambda: last_advanced, lambda: now, limit=300.0)

    assert check.name == "scheduling-loop"
    assert check.problem() == problem


async def test_https_with_a_self_signed_certificate_for_this_host(
    serve: Callable[..., Any],
) -> None:
    context = server_ssl_context(None, None, bind_address="127.0.0.1")
    base = await serve(ssl_context=context)
    assert base.startswith("https://")

    assert await get(f"{base}/healthz") == (200, "ok")

    host, port = base.removeprefix("https://").split(":")
    pem = await asyncio.to_thread(ssl.get_server_certificate, (host, int(port)))
    names = (
        x509.load_pem_x509_certificate(pem.encode())
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
