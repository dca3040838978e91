"""PodGroup status writes (merge patch on the status subresource) and Events about PodGroups."""

from __future__ import annotations

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.event_recorder import ApiEventRecorder
from kopf_scheduler.k8s.pod_group_status_writer import ApiPodGroupStatusWriter
from kopf_scheduler.ports import Event, NotFoundError, ObjectRef
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.k8s.support import ok, reply

PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team/podgroups/gang/status"
EVENTS = "/apis/events.k8s.io/v1/namespaces/team/events"


async def test_patches_the_status_subresource_with_a_merge_patch(
    kmock: kmock.RawHandler, api: Api
) -> None:
    stored = {"kind": "PodGroup", "metadata": {"name": "gang"}, "status": {"phase": "Running"}}
    kmock[f"patch {PATH}"] << stored
    patch = {"status": {"phase": "Running", "running": None}}

    result = await ApiPodGroupStatusWriter(api).patch_status("team", "gang", patch)

    (request,) = kmock[f"patch {PATH}"]
    assert request.data == patch
    assert request.headers["Content-Type"] == "application/merge-patch+json"
    assert result == stored


async def test_a_missing_group_raises_not_found(kmock: kmock.RawHandler, api: Api) -> None:
    message = 'podgroups.scheduling.x-k8s.io "gang" not found'
    kmock[f"patch {PATH}"] << (lambda: reply(404, "NotFound", message))

    with pytest.raises(NotFoundError) as info:
        await ApiPodGroupStatusWriter(api).patch_status("team", "gang", {"status": {}})

    assert info.value.message == message


async def test_an_event_about_a_pod_group_references_its_kind(
    kmock: kmock.RawHandler, api: Api
) -> None:
    kmock[f"post {EVENTS}"] << (lambda request: ok(request.data, 201))
    recorder = ApiEventRecorder(api, hostname="host-1", clock=VirtualClock())
    regarding = ObjectRef("team", "gang", "uid-g", "scheduling.x-k8s.io/v1alpha1", "PodGroup")

    await recorder.process(
        Event(
            regarding=regarding,
            type="Normal",
            reason="Running",
            action="UpdatePhase",
            note="8 of minMember 8 pods running or succeeded",
            reporting_controller="kopf-scheduler",
        )
    )

    (request,) = kmock[f"post {EVENTS}"]
    assert request.data["metadata"]["name"].startswith("gang.")
    assert request.data["regarding"] == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "namespace": "team",
        "name": "gang",
        "uid": "uid-g",
    }
