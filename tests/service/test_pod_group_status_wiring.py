"""The operator keeps PodGroup status when a profile schedules gangs: the keeper exists, kopf
hands it the PodGroups, the pod watch feeds its census, and it runs beside the loop."""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.service.runner import Operator, RunOptions
from tests.builders import make_pod
from tests.plugins.coscheduling.support import coscheduling_config

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def _member(name: str, node: str = "") -> dict[str, Any]:
    pod = make_pod(name).labels(**{GROUP_LABEL: "trainer"})
    if node:
        pod = pod.node(node)
    raw: dict[str, Any] = pod.obj()
    return raw


async def test_a_gang_profile_keeps_pod_group_status_and_counts_members_from_the_pod_watch() -> (
    None
):
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = Operator(coscheduling_config(), RunOptions(), api)
        keeper = operator.pod_groups
        assert keeper is not None
        deliver = operator.reflectors["Pod"]._deliver
        deliver("ADDED", _member("w0", node="n1"))
        deliver("ADDED", _member("w1"))
        counts = keeper.census.counts("default/trainer")
        assert counts.pods == 2
        assert counts.scheduled == 1
        # The scheduler's own handler still gets the pods.
        assert operator.store.get_pod("default/w1") is not None
        registry = operator._kopf_registry()
        ids = {handler.id for handler in registry._watching.get_all_handlers()}
        assert "pod-group-status" in ids
    finally:
        await api.close()


async def test_without_gangs_there_is_no_keeper_and_pods_go_to_the_handler_alone() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = Operator(default_config(), RunOptions(), api)
        assert operator.pod_groups is None
        registry: kopf.OperatorRegistry = operator._kopf_registry()
        ids = {handler.id for handler in registry._watching.get_all_handlers()}
        assert "pod-group-status" not in ids
    finally:
        await api.close()
