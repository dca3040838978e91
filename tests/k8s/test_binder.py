"""The Binding request, and which 409 answers count as a pod already where we want it."""

from __future__ import annotations

import kmock
import pytest

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.binder import ApiBinder, already_bound_to
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.ports import ApiError, ConflictError, NotFoundError
from tests.builders import make_pod
from tests.clock import FakeClock
from tests.k8s.support import reply

PATH = "/api/v1/namespaces/team/pods/web/binding"


def assigned(node: str) -> str:
    # The API server's wording (pods/binding storage): a Conflict wrapping the assignment check.
    return (
        f'Operation cannot be fulfilled on pods/binding "web": '
        f'pod web is already assigned to node "{node}"'
    )


async def test_posts_a_binding_naming_pod_uid_and_node(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"post {PATH}"] << 201 << {"kind": "Status", "status": "Success", "code": 201}
    pod = make_pod("web", "team").uid("u-1").pod()

    await ApiBinder(api).bind(pod, "node-a")

    requests = list(kmock[f"post {PATH}"])
    assert len(requests) == 1
    assert requests[0].data == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "team", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    assert requests[0].headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("code", "reason", "message", "raised"),
    [
        pytest.param(409, "Conflict", assigned("node-b"), ConflictError, id="409-other-node"),
        pytest.param(
            409,
            "Conflict",
            'Operation cannot be fulfilled on pods/binding "web": '
            "pod web is being deleted, cannot be assigned to a host",
            ConflictError,
            id="409-being-deleted",
        ),
        pytest.param(
            409,
            "Conflict",
            "Precondition failed: UID in precondition: u-1, UID in object meta: u-2",
            ConflictError,
            id="409-uid-precondition",
        ),
        pytest.param(404, "NotFound", 'pods "web" not found', NotFoundError, id="404"),
        pytest.param(403, "Forbidden", "cannot create pods/binding", ApiError, id="403"),
    ],
)
async def test_failures_are_raised(
    kmock: kmock.RawHandler,
    api: Api,
    code: int,
    reason: str,
    message: str,
    raised: type[ApiError],
) -> None:
    kmock[f"post {PATH}"] << (lambda: reply(code, reason, message))
    pod = make_pod("web", "team").uid("u-1").pod()

    with pytest.raises(raised) as info:
        await ApiBinder(api).bind(pod, "node-a")

    assert info.value.status == code
    assert info.value.message == message
    assert len(kmock[f"post {PATH}"]) == 1


async def test_already_assigned_to_the_same_node_is_success(
    kmock: kmock.RawHandler, api: Api
) -> None:
    kmock[f"post {PATH}"] << (lambda: reply(409, "Conflict", assigned("node-a")))
    pod = make_pod("web", "team").pod()

    await ApiBinder(api).bind(pod, "node-a")

    assert len(kmock[f"post {PATH}"]) == 1


async def test_a_binding_retried_after_a_lost_reply_lands_as_success(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    # The first request binds the pod but its reply is a 503 (e.g. from a proxy); the retry
    # then meets the pod already assigned to the same node.
    kmock[f"post {PATH}"][:1] << (lambda: reply(503, "ServiceUnavailable", "try later"))
    kmock[f"post {PATH}"] << (lambda: reply(409, "Conflict", assigned("node-a")))
    pod = make_pod("web", "team").pod()

    await ApiBinder(api).bind(pod, "node-a")

    assert len(kmock[f"post {PATH}"]) == 2
    assert clock.sleeps == [0.2]


async def test_a_binding_is_timed_once_with_its_retries(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    metrics = PrometheusMetrics()
    api.metrics = metrics
    kmock[f"post {PATH}"][:1] << (lambda: reply(503, "ServiceUnavailable", "try later"))
    kmock[f"post {PATH}"] << 201 << {"kind": "Status", "status": "Success", "code": 201}

    await ApiBinder(api).bind(make_pod("web", "team").pod(), "node-a")

    registry = metrics.registry
    assert registry.get_sample_value(f"{m.BINDING_REQUEST_DURATION}_count") == 1
    assert registry.get_sample_value(f"{m.BINDING_REQUEST_DURATION}_sum") == pytest.approx(
        sum(clock.sleeps)
    )


@pytest.mark.parametrize(
    ("error", "node"),
    [
        pytest.param(ConflictError(assigned("n1")), "n1", id="quoted-node"),
        pytest.param(ConflictError(assigned("")), "", id="empty-node"),
        pytest.param(ConflictError("the object has been modified"), None, id="other-409"),
        pytest.param(ApiError(500, "InternalError", assigned("n1")), None, id="not-a-409"),
    ],
)
def test_already_bound_to(error: ApiError, node: str | None) -> None:
    assert already_bound_to(error) == node
