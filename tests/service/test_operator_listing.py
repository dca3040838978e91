"""The operator's first listing: every collection asked for at once, delivered in order."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api, ListResult
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions


async def test_nodes_and_pods_are_fetched_beside_the_other_kinds_and_delivered_after_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        steps: list[str] = []
        fetches_started = asyncio.Event()

        async def list_other_kinds() -> None:
            # Only done once the node and pod listings are under way: they must not wait.
            await asyncio.wait_for(fetches_started.wait(), 5)
            steps.append("other kinds delivered")

        monkeypatch.setattr(operator.sync, "list_all", list_other_kinds)
        for kind, reflector in operator.reflectors.items():

            async def fetch(kind: str = kind) -> ListResult:
                steps.append(f"{kind} fetched")
                if len(steps) == len(operator.reflectors):
                    fetches_started.set()
                return ListResult([], "1")

            monkeypatch.setattr(reflector, "fetch_listing", fetch)
            monkeypatch.setattr(
                reflector, "deliver_listing", lambda _, kind=kind: steps.append(f"{kind} delivered")
            )

        await operator._list_all()

        assert steps == [
            "Node fetched",
            "Pod fetched",
            "other kinds delivered",
            "Node delivered",
            "Pod delivered",
        ]
    finally:
        await api.close()
