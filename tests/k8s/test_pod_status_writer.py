"""The pods/status strategic merge patch: path, body, content type and NotFound."""

from __future__ import annotations

from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.pod_status_writer import ApiPodStatusWriter
from kopf_scheduler.ports import NotFoundError, ObjectRef, PodStatusPatch
from tests.builders import make_pod
from tests.k8s.support import reply

PATH = "/api/v1/namespaces/team/pods/web/status"

UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 Insufficient cpu.",
}


@pytest.mark.parametrize(
    ("patch", "body"),
    [
        pytest.param(
            PodStatusPatch(conditions=[UNSCHEDULABLE]),
            {"status": {"conditions": [UNSCHEDULABLE]}},
            id="condition-only",
        ),
        pytest.param(
            PodStatusPatch(nominated_node_name="node-a", set_nominated_node_name=True),
            {"status": {"nominatedNodeName": "node-a"}},
            id="nominate",
        ),
        pytest.param(
            PodStatusPatch(set_nominated_node_name=True),
            {"status": {"nominatedNodeName": None}},
            id="clear-nomination-with-null",
        ),
        pytest.param(
            PodStatusPatch(
                conditions=[UNSCHEDULABLE],
                nominated_node_name="node-a",
                set_nominated_node_name=True,
            ),
            {"status": {"conditions": [UNSCHEDULABLE], "nominatedNodeName": "node-a"}},
            id="condition-and-nomination",
        ),
    ],
)
async def test_patches_the_status_subresource(
    kmock: kmock.RawHandler, api: Api, patch: PodStatusPatch, body: dict[str, Any]
) -> None:
    kmock[f"patch {PATH}"] << {"kind": "Pod", "metadata": {"name": "web"}}
    pod = make_pod("web", "team").pod()

    await ApiPodStatusWriter(api).patch_status(pod, patch)

    requests = list(kmock[f"patch {PATH}"])
    assert len(requests) == 1
    assert requests[0].data == body
    assert requests[0].headers["Content-Type"] == "application/strategic-merge-patch+json"


async def test_accepts_a_pod_named_without_a_parsed_view(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"patch {PATH}"] << {"kind": "Pod"}

    await ApiPodStatusWriter(api).patch_status(
        ObjectRef("team", "web", "u-1"), PodStatusPatch(conditions=[UNSCHEDULABLE])
    )

    assert len(kmock[f"patch {PATH}"]) == 1


async def test_a_missing_pod_raises_not_found(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"patch {PATH}"] << (lambda: reply(404, "NotFound", 'pods "web" not found'))
    pod = make_pod("web", "team").pod()

    with pytest.raises(NotFoundError) as info:
        await ApiPodStatusWriter(api).patch_status(pod, PodStatusPatch(conditions=[UNSCHEDULABLE]))

    assert info.value.message == 'pods "web" not found'
    assert len(kmock[f"patch {PATH}"]) == 1
