"""How the operator wires its API budget: bindings, events and the Lease each get a limiter;
volume binding writes through the binding budget into what the watches fill; and how it ends:
a component that stops on its own stops the whole process, and shutdown runs once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.ratelimit import TokenBucket, limiter_for
from kopf_scheduler.k8s.real_clocks import WallClock
from kopf_scheduler.k8s.storage_writer import ApiStorageWriter
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions
from tests.storage_builders import make_class


async def test_events_have_a_budget_of_their_own_with_the_same_settings() -> None:
    config = default_config()
    connection = config.client_connection
    api = Api(
        ApiClient(Configuration(host="http://127.0.0.1:9")),
        limiter=limiter_for(connection.qps, connection.burst),
    )
    try:
        operator = build_operator(config, RunOptions(), api)

        events_limiter = operator.events._api.limiter
        assert events_limiter is not api.limiter
        assert isinstance(events_limiter, TokenBucket)
        assert (events_limiter.qps, events_limiter.burst) == (connection.qps, connection.burst)
        assert operator.events._api.client is api.client  # one connection pool
    finally:
        await api.close()


async def test_volume_binding_writes_share_the_binding_budget_and_the_watched_storage() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)

        handle = operator.scheduler.profiles["kopf-scheduler"].handle
        assert isinstance(handle.storage_writer, ApiStorageWriter)
        assert handle.storage_writer._api is api
        operator.route("StorageClass")("ADDED", make_class("fast").obj())
        assert "fast" in handle.storage.classes  # what the watches fill
    finally:
        await api.close()


async def test_leadership_is_reported_as_client_gos_leader_election_gauge() -> None:
    config = default_config()
    assert config.leader_election.leader_elect
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        metrics = PrometheusMetrics()
        operator = build_operator(config, RunOptions(), api, metrics=metrics)
        elector = operator.elector
        assert elector is not None
        sample = metrics.registry.get_sample_value
        labels = {"name": config.leader_election.resource_name}

        assert sample("leader_election_master_status", labels) == 0
        assert not operator.scheduler.active  # a follower until the Lease is won
        elector._on_started()
        assert sample("leader_election_master_status", labels) == 1
        assert operator.scheduler.active
        elector._on_stopped()
        assert sample("leader_election_master_status", labels) == 0
        assert not operator.scheduler.active
    finally:
        await api.close()


async def test_healthz_watches_the_lease_renewals_and_the_scheduling_loop() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)

        checks = {check.name: check for check in operator.health._checks}
        assert list(checks) == ["ping", "leaderElection", "scheduling-loop"]
        operator.scheduler.last_advanced = WallClock().now() - 3600
        assert checks["scheduling-loop"].problem() is not None
    finally:
        await api.close()


async def test_the_api_client_reports_to_the_operators_metrics() -> None:
    metrics = PrometheusMetrics()
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")), metrics=metrics)
    try:
        operator = build_operator(default_config(), RunOptions(), api, metrics=metrics)

        assert operator.health._registry is metrics.registry
        assert operator.events._api.metrics is metrics  # the events' own budget, same sink
    finally:
        await api.close()


async def _idle_forever() -> None:
    await asyncio.Event().wait()


async def _fail() -> None:
    raise RuntimeError("watch broke")


async def _return() -> None:
    return None


@pytest.mark.parametrize(
    ("ending", "failed", "lost_lease"),
    [
        pytest.param(("pod-watch", _fail), True, False, id="a-component-fails"),
        pytest.param(("leader-election", _return), False, True, id="the-lease-is-lost"),
    ],
)
async def test_a_component_that_ends_on_its_own_stops_the_operator_with_an_error(
    ending: tuple[str, Callable[[], Coroutine[Any, Any, None]]], failed: bool, lost_lease: bool
) -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        name, body = ending
        idle = asyncio.create_task(_idle_forever(), name="node-watch")
        operator._components = [idle, asyncio.create_task(body(), name=name)]

        await asyncio.wait_for(operator._supervise(), 5)

        assert operator.stop.is_set()  # kopf's stop flag: kopf stops and runs its cleanup
        assert (operator._failed, operator._lost_lease) == (failed, lost_lease)
        await operator.shutdown()
        assert idle.cancelled()
    finally:
        await api.close()


async def test_shutdown_stops_popping_and_the_watches_once() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        watch = asyncio.create_task(_idle_forever(), name="pod-watch")
        operator._components = [watch]
        operator.scheduler.active = True

        await operator.shutdown()
        await operator.shutdown()  # kopf's cleanup, then the operator's own exit path

        assert watch.cancelled()
        assert operator.stop.is_set()
        assert not operator.scheduler.active
    finally:
        await api.close()
