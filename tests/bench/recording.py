"""A stand-in for the benchmark's API client that answers the helpers' requests and records them,
so the objects a benchmark would create, patch or list are checked without an API server."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Raw = dict[str, Any]


class RecordingClient:
    """Answers like an API server for the requests the helpers make, and records them."""

    def __init__(self, lists: Mapping[str, list[Raw]] | None = None) -> None:
        self.calls: list[tuple[str, str, Any, str]] = []
        self.lists = dict(lists or {})
        self._uids = iter(range(1000))

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
        self.calls.append((method, path, body, content_type))
        if method == "POST":
            return {**body, "metadata": {**body["metadata"], "uid": f"uid-{next(self._uids)}"}}
        return None

    async def list_all(
        self, path: str, params: Mapping[str, str] | None = None, limit: int = 2000
    ) -> tuple[list[Raw], str]:
        return self.lists.get(path, []), "1"
