"""The Api wrapper: raw JSON, queries, paginated LIST, rate limiting per attempt, configuration."""

from __future__ import annotations

import pathlib
from typing import Any

import kmock
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import incluster_config

from kopf_scheduler.k8s.client import Api, load_configuration, make_api, proxy_from_environment
from kopf_scheduler.k8s.errors import ClientConfigError
from kopf_scheduler.k8s.ratelimit import TokenBucket
from kopf_scheduler.ports import ApiError
from tests.clock import FakeClock
from tests.k8s.support import START, ok, reply

PODS = "/api/v1/pods"


class CountingLimiter:
    def __init__(self) -> None:
        self.acquired = 0

    async def acquire(self) -> None:
        self.acquired += 1


async def test_request_returns_the_reply_as_a_plain_dict(kmock: kmock.RawHandler, api: Api) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"a": "b"}}}
    kmock["get /api/v1/namespaces/team/pods/web"] << pod

    result = await api.request("GET", "/api/v1/namespaces/team/pods/web")

    assert type(result) is dict
    assert result == pod
    [request] = kmock["get /api/v1/namespaces/team/pods/web"]
    assert request.headers["Accept"] == "application/json"


async def test_query_parameters_are_sent(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"get {PODS}"] << {"kind": "PodList", "items": []}

    await api.request("GET", PODS, query={"fieldSelector": "spec.nodeName=", "limit": "5"})

    [request] = kmock[f"get {PODS}"]
    assert request.params == {"fieldSelector": "spec.nodeName=", "limit": "5"}


async def test_an_empty_reply_body_is_an_empty_dict(kmock: kmock.RawHandler, api: Api) -> None:
    kmock["delete /api/v1/namespaces/team/pods/web"] << 200 << b""

    assert await api.request("DELETE", "/api/v1/namespaces/team/pods/web") == {}


def pod_list(names: list[str], cont: str = "", rv: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": rv, **({"continue": cont} if cont else {})},
        "items": [{"metadata": {"name": name}} for name in names],
    }


async def test_list_follows_continue_tokens(kmock: kmock.RawHandler, api: Api) -> None:
    pages = {"": pod_list(["a", "b"], cont="t1", rv="77"), "t1": pod_list(["c"], rv="77")}
    kmock[f"get {PODS}"] << (lambda request: pages[request.params.get("continue", "")])

    result = await api.list(PODS, {"fieldSelector": "status.phase!=Failed"}, page_size=2)

    assert [item["metadata"]["name"] for item in result.items] == ["a", "b", "c"]
    assert result.resource_version == "77"
    assert all(item["kind"] == "Pod" and item["apiVersion"] == "v1" for item in result.items)
    params = [r.params for r in kmock[f"get {PODS}"]]
    assert params == [
        {"fieldSelector": "status.phase!=Failed", "limit": "2"},
        {"fieldSelector": "status.phase!=Failed", "limit": "2", "continue": "t1"},
    ]


async def test_list_starts_over_unpaginated_when_the_token_expires(
    kmock: kmock.RawHandler, api: Api
) -> None:
    def serve(request: kmock.Request) -> kmock.Response:
        if request.params.get("continue") == "t1":
            return reply(410, "Expired", "The provided continue parameter is too old")
        if "limit" in request.params:
            return ok(pod_list(["a"], cont="t1", rv="5"))
        return ok(pod_list(["a", "b", "c"], rv="9"))

    kmock[f"get {PODS}"] << serve

    result = await api.list(PODS, page_size=1)

    assert [item["metadata"]["name"] for item in result.items] == ["a", "b", "c"]
    assert result.resource_version == "9"
    assert [r.params for r in kmock[f"get {PODS}"]] == [
        {"limit": "1"},
        {"limit": "1", "continue": "t1"},
        {},
    ]


async def test_list_errors_are_raised(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"get {PODS}"] << (lambda: reply(403, "Forbidden", "cannot list pods"))

    with pytest.raises(ApiError) as info:
        await api.list(PODS)

    assert info.value.status == 403


async def test_every_attempt_waits_for_the_limiter(kmock: kmock.RawHandler) -> None:
    kmock[f"get {PODS}"][:2] << (lambda: reply(503, "ServiceUnavailable", "busy"))
    kmock[f"get {PODS}"] << pod_list([])
    limiter = CountingLimiter()
    api = Api(
        ApiClient(Configuration(host=str(kmock.url).rstrip("/"))),
        limiter=limiter,
        clock=FakeClock(START),
    )
    sibling = api.with_limiter(CountingLimiter())
    try:
        await api.request("GET", PODS)
        await sibling.request("GET", PODS)
    finally:
        await sibling.close()
        await api.close()

    assert limiter.acquired == 3
    assert len(kmock[f"get {PODS}"]) == 4


def write_kubeconfig(path: pathlib.Path, server: str, token: str) -> pathlib.Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


async def test_make_api_authenticates_from_a_kubeconfig(
    kmock: kmock.RawHandler, tmp_path: pathlib.Path
) -> None:
    kmock[f"get {PODS}"] << pod_list(["a"], rv="1")
    kubeconfig = write_kubeconfig(tmp_path / "config", str(kmock.url).rstrip("/"), "s3cret")

    api = await make_api(str(kubeconfig), qps=7, burst=3)
    try:
        result = await api.list(PODS)
    finally:
        await api.close()

    assert [item["metadata"]["name"] for item in result.items] == ["a"]
    [request] = kmock[f"get {PODS}"]
    assert request.headers["Authorization"] == "Bearer s3cret"
    assert request.headers["User-Agent"].startswith("kopf-scheduler/")
    assert isinstance(api.limiter, TokenBucket)
    assert (api.limiter.qps, api.limiter.burst) == (7, 3)


async def test_make_api_reports_a_missing_kubeconfig(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ClientConfigError, match="missing"):
        await make_api(str(tmp_path / "missing"))


@pytest.fixture
def in_a_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """The environment and service-account files a pod gets, under ``tmp_path``."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (tmp_path / "token").write_text("pod-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    return tmp_path


async def test_inside_a_pod_the_service_account_is_used(in_a_pod: pathlib.Path) -> None:
    configuration, loader = await load_configuration(None)

    assert loader is None
    assert configuration.host == "https://10.0.0.1:443"
    assert configuration.api_key["BearerToken"] == "Bearer pod-token"
    assert configuration.ssl_ca_cert == str(in_a_pod / "ca.crt")


async def test_an_explicit_kubeconfig_wins_over_the_service_account(
    in_a_pod: pathlib.Path,
) -> None:
    kubeconfig = write_kubeconfig(in_a_pod / "config", "http://127.0.0.1:1", "file-token")

    configuration, loader = await load_configuration(str(kubeconfig))

    assert loader is not None
    assert configuration.host == "http://127.0.0.1:1"


async def test_inside_a_pod_without_a_token_the_error_says_in_cluster(
    in_a_pod: pathlib.Path,
) -> None:
    (in_a_pod / "token").unlink()

    with pytest.raises(ClientConfigError, match="in-cluster"):
        await make_api(None)


async def test_the_session_does_not_read_the_environment_per_request(
    kmock: kmock.RawHandler, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    kubeconfig = write_kubeconfig(tmp_path / "config", str(kmock.url).rstrip("/"), "t")

    api = await make_api(str(kubeconfig))
    try:
        assert api.client.rest_client.pool_manager.trust_env is False
        assert api.client.rest_client.proxy is None
    finally:
        await api.close()


async def test_a_proxy_from_the_environment_is_resolved_once_at_start(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://api.example:6443", "t")

    api = await make_api(str(kubeconfig))
    try:
        assert api.client.rest_client.proxy == "http://proxy.example:3128"
        assert api.client.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()


@pytest.mark.parametrize(
    ("no_proxy", "expected"),
    [
        ("", "http://proxy.example:3128"),
        ("api.example", None),
        (".example", None),
        ("other.example", "http://proxy.example:3128"),
    ],
)
def test_no_proxy_exempts_the_api_server(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str, expected: str | None
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", no_proxy)

    assert proxy_from_environment("https://api.example:6443") == expected


def test_without_proxy_variables_there_is_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)

    assert proxy_from_environment("https://api.example:6443") is None
