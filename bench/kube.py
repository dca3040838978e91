"""A small asyncio client for the API server (aiohttp, raw JSON), for creators and watchers.

Raw dicts instead of typed models: decoding a pod into a model costs far more than the
benchmark can afford at thousands of pods per second. Requests carry their own User-Agent so
that they are never mistaken for a scheduler's.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")
MERGE_PATCH = "application/merge-patch+json"
VOLUMES_PATH = "/api/v1/persistentvolumes"
CSI_NODES_PATH = "/apis/storage.k8s.io/v1/csinodes"
RETRY_STATUSES = {429, 500, 502, 503, 504}
GONE = 410
"""The status of a watch whose resourceVersion the server no longer has."""


class ApiError(RuntimeError):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


@dataclass(frozen=True)
class Endpoint:
    server: str
    token: str
    ca_file: str

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)


class Client:
    def __init__(self, endpoint: Endpoint, user_agent: str, connections: int = 32) -> None:
        self.endpoint = endpoint
        self._session = aiohttp.ClientSession(
            base_url=endpoint.server,
            connector=aiohttp.TCPConnector(limit=connections, ssl=endpoint.ssl_context()),
            headers={
                "Authorization": f"Bearer {endpoint.token}",
                "Accept": "application/json",
                "User-Agent": user_agent,
            },
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        )

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        retries: int = 5,
        ok_statuses: Iterable[int] = (),
        content_type: str = "application/json",
    ) -> Any:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else None
        delay = 0.2
        for attempt in range(retries + 1):
            try:
                async with self._session.request(
                    method,
                    path,
                    data=data,
                    params=params,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=120),
                ) as response:
                    text = await response.text()
                    if response.status < 300:
                        return json.loads(text) if text else None
                    if response.status in ok_statuses:
                        return None
                    if response.status in RETRY_STATUSES and attempt < retries:
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, 5.0)
                        continue
                    raise ApiError(response.status, text)
            except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError):
                # A reply cut short (the API server ends a long collection DELETE at its
                # request timeout, midway through the list of what it deleted) is sent again.
                if attempt >= retries:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")

    async def list_all(
        self, path: str, params: Mapping[str, str] | None = None, limit: int = 2000
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item under ``path`` (paginated) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        query = dict(params or {})
        query["limit"] = str(limit)
        resource_version = ""
        while True:
            page = await self.request("GET", path, params=query)
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            resource_version = resource_version or str(metadata.get("resourceVersion", ""))
            token = metadata.get("continue")
            if not token:
                return items, resource_version
            query["continue"] = token

    async def watch(
        self,
        path: str,
        resource_version: str,
        params: Mapping[str, str] | None = None,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """One watch request's events (ends when the server closes it); ``on_open`` is called
        once the server has accepted the watch."""
        query = {
            **(params or {}),
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3600",
        }
        async with self._session.get(
            path, params=query, timeout=aiohttp.ClientTimeout(total=None, sock_read=None)
        ) as response:
            if response.status != 200:
                raise ApiError(response.status, await response.text())
            if on_open is not None:
                on_open()
            buffer = b""
            async for chunk in response.content.iter_any():
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)


async def list_then_watch(
    client: Client,
    path: str,
    on_list: Callable[[list[dict[str, Any]]], None],
    on_event: Callable[[str, dict[str, Any]], None],
    on_open: Callable[[], None] | None = None,
) -> None:
    """Keep up with the objects under ``path`` until cancelled, as an informer does.

    ``on_list`` gets every object of a list: once at the start, and again only when the server
    answers that the version to resume from is gone (410). A watch the server simply ends (its
    timeout, or a watcher it judged slow) is resumed from the last resourceVersion seen,
    bookmarks included, so the objects are not listed and counted again for it.
    """
    items, resource_version = await client.list_all(path)
    on_list(items)
    while True:
        try:
            async for event in client.watch(path, resource_version, on_open=on_open):
                kind = event.get("type", "")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError(int(obj.get("code") or GONE), str(obj.get("message")))
                resource_version = str(
                    (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                )
                if kind != "BOOKMARK":
                    on_event(kind, obj)
        except ApiError as error:
            if error.status != GONE:
                raise
            items, resource_version = await client.list_all(path)
            on_list(items)


async def for_each(
    items: Sequence[T],
    concurrency: int,
    action: Callable[[T], Awaitable[object]],
    rate: float | None = None,
) -> dict[str, Any]:
    """Run ``action`` on every item with ``concurrency`` of them in flight; the rate achieved.
    With ``rate``, item ``i`` starts no sooner than ``i / rate`` seconds after the first, so the
    items arrive at that pace as long as the requests keep up with it."""
    started = time.perf_counter()
    position = 0

    async def worker() -> None:
        nonlocal position
        while position < len(items):
            index = position
            position += 1
            if rate is not None:
                await asyncio.sleep(max(0.0, started + index / rate - time.perf_counter()))
            await action(items[index])

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    seconds = time.perf_counter() - started
    return {
        "count": len(items),
        "seconds": round(seconds, 3),
        "per_second": round(len(items) / seconds, 1) if seconds > 0 else None,
        "concurrency": concurrency,
        "paced_at": rate,
    }


async def create_many(
    client: Client,
    path_of: Callable[[Mapping[str, Any]], str],
    objects: list[dict[str, Any]],
    concurrency: int,
    on_created: Callable[[Mapping[str, Any], float], None] | None = None,
    rate: float | None = None,
) -> dict[str, Any]:
    """POST every object with ``concurrency`` requests in flight, at most ``rate`` a second
    when given (see :func:`for_each`); the rate achieved."""

    async def create(raw: dict[str, Any]) -> None:
        await client.request("POST", path_of(raw), raw, ok_statuses=(409,))
        if on_created is not None:
            on_created(raw, time.time())

    return await for_each(objects, concurrency, create, rate)


def pods_path(raw: Mapping[str, Any]) -> str:
    return f"/api/v1/namespaces/{raw['metadata']['namespace']}/pods"


def nodes_path(_: Mapping[str, Any]) -> str:
    return "/api/v1/nodes"


def claims_path(raw: Mapping[str, Any]) -> str:
    return f"/api/v1/namespaces/{raw['metadata']['namespace']}/persistentvolumeclaims"
