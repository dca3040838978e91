"""The PodGroup view: scheduler-plugins' fields read as they are, malformed ones named."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL, PodGroup, pod_group_key


def _raw(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "u-1",
            "creationTimestamp": "2026-01-02T03:04:05Z",
        },
        "spec": spec,
        "status": status or {},
    }


def test_reads_spec_and_status() -> None:
    group = PodGroup(
        _raw(
            {
                "minMember": 3,
                "minResources": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 2},
                "scheduleTimeoutSeconds": 30,
            },
            {
                "phase": "Scheduling",
                "scheduled": 2,
                "running": 1,
                "succeeded": 0,
                "failed": 1,
                "occupiedBy": "ml/job",
                "scheduleStartTime": "2026-01-02T03:05:00Z",
            },
        )
    )
    assert (group.key, group.uid, group.min_member) == ("ml/train", "u-1", 3)
    assert group.creation_timestamp == 1767323045.0
    assert group.min_resources is not None
    assert group.min_resources.milli_cpu == 1500
    assert group.min_resources.memory == 1024**3
    assert group.min_resources.scalar == {"nvidia.com/gpu": 2}
    assert group.schedule_timeout_seconds == 30
    assert (group.phase, group.scheduled, group.running, group.failed) == ("Scheduling", 2, 1, 1)
    assert group.occupied_by == "ml/job"
    assert group.schedule_start_time == 1767323100.0


def test_optional_fields_default_to_absent() -> None:
    group = PodGroup(_raw({}))
    assert (group.min_member, group.min_resources, group.schedule_timeout_seconds) == (
        0,
        None,
        None,
    )
    assert (group.phase, group.scheduled, group.schedule_start_time) == ("", 0, None)


def test_a_zero_schedule_timeout_is_allowed_as_the_crd_allows_it() -> None:
    # The plugin then waits its permitWaitingTimeSeconds, as scheduler-plugins does.
    assert PodGroup(_raw({"scheduleTimeoutSeconds": 0})).schedule_timeout_seconds == 0


@pytest.mark.parametrize(
    ("spec", "status", "message"),
    [
        pytest.param(
            {"minMember": "3"}, {}, "spec.minMember: must be an integer, got '3'", id="str"
        ),
        pytest.param({"minMember": -1}, {}, "spec.minMember: must be at least 0, got -1", id="neg"),
        pytest.param(
            {"minResources": {"cpu": "lots"}},
            {},
            "spec.minResources.cpu",
            id="quantity",
        ),
        pytest.param(
            {"scheduleTimeoutSeconds": -5},
            {},
            "spec.scheduleTimeoutSeconds: must be at least 0, got -5",
            id="timeout",
        ),
        pytest.param({}, {"scheduled": True}, "status.scheduled: must be an integer", id="bool"),
        pytest.param({}, {"scheduleStartTime": "soon"}, "status.scheduleStartTime", id="timestamp"),
    ],
)
def test_malformed_fields_are_named(
    spec: dict[str, Any], status: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidObjectError) as raised:
        PodGroup(_raw(spec, status))
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_an_object_without_a_name_is_rejected() -> None:
    with pytest.raises(InvalidObjectError, match=r"^metadata.name: "):
        PodGroup({"metadata": {}, "spec": {"minMember": 1}})


def test_group_key_of_a_pod() -> None:
    assert pod_group_key("ml", {POD_GROUP_LABEL: "train"}) == "ml/train"
    assert pod_group_key("ml", {POD_GROUP_LABEL: ""}) is None
    assert pod_group_key("ml", {"app": "x"}) is None
