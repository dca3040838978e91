"""Victim deletion: the UID precondition, no grace override, and what counts as gone."""

from __future__ import annotations

import logging

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.deleter import ApiPodDeleter
from kopf_scheduler.ports import ApiError
from tests.builders import make_pod
from tests.k8s.support import reply

PATH = "/api/v1/namespaces/team/pods/victim"


async def test_deletes_with_a_uid_precondition_and_no_grace_period(
    kmock: kmock.RawHandler, api: Api
) -> None:
    kmock[f"delete {PATH}"] << {"kind": "Pod", "metadata": {"name": "victim"}}
    pod = make_pod("victim", "team").uid("u-7").grace(45).pod()

    await ApiPodDeleter(api).delete_pod(pod)

    requests = list(kmock[f"delete {PATH}"])
    assert len(requests) == 1
    assert requests[0].data == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u-7"},
    }
    assert "gracePeriodSeconds" not in requests[0].data


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        pytest.param(404, "NotFound", 'pods "victim" not found', id="already-deleted"),
        pytest.param(
            409,
            "Conflict",
            "Precondition failed: UID in precondition: u-7, UID in object meta: u-8",
            id="name-reused-by-another-pod",
        ),
    ],
)
async def test_gone_victims_count_as_done(
    kmock: kmock.RawHandler,
    api: Api,
    caplog: pytest.LogCaptureFixture,
    code: int,
    reason: str,
    message: str,
) -> None:
    kmock[f"delete {PATH}"] << (lambda: reply(code, reason, message))
    pod = make_pod("victim", "team").uid("u-7").pod()

    with caplog.at_level(logging.DEBUG, logger="kopf_scheduler.k8s.deleter"):
        await ApiPodDeleter(api).delete_pod(pod)

    assert len(kmock[f"delete {PATH}"]) == 1
    assert [r.levelno for r in caplog.records if r.name == "kopf_scheduler.k8s.deleter"] == [
        logging.DEBUG
    ]


async def test_other_failures_are_raised(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"delete {PATH}"] << (lambda: reply(403, "Forbidden", "cannot delete pods"))
    pod = make_pod("victim", "team").pod()

    with pytest.raises(ApiError) as info:
        await ApiPodDeleter(api).delete_pod(pod)

    assert (info.value.status, info.value.reason) == (403, "Forbidden")
