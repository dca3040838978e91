"""The PodScheduled condition of a failed attempt carries the generation the scheduler saw, as
kube-scheduler v1.34 writes it (PodObservedGenerationTracking is on by default there)."""

from __future__ import annotations

from kopf_scheduler.scheduler.failure import REASON_UNSCHEDULABLE, failure_status_patch
from tests.builders import make_pod

NOW = 1_800_000_000.0
MESSAGE = "0/1 nodes are available: 1 Insufficient cpu."


def test_the_condition_records_the_pods_generation() -> None:
    pod = make_pod("p").generation(4).pod()
    patch = failure_status_patch(pod, REASON_UNSCHEDULABLE, MESSAGE, None, NOW)
    assert patch is not None
    (condition,) = patch.conditions
    assert condition["observedGeneration"] == 4
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        REASON_UNSCHEDULABLE,
        MESSAGE,
    )


def test_without_a_generation_none_is_written() -> None:
    patch = failure_status_patch(make_pod("p").pod(), REASON_UNSCHEDULABLE, MESSAGE, None, NOW)
    assert patch is not None
    assert "observedGeneration" not in patch.conditions[0]


def test_a_new_generation_alone_does_not_patch_again() -> None:
    # Upstream compares status, reason, message and times, not the observed generation.
    pod = (
        make_pod("p")
        .generation(5)
        .condition("PodScheduled", "False", REASON_UNSCHEDULABLE, MESSAGE)
        .pod()
    )
    assert failure_status_patch(pod, REASON_UNSCHEDULABLE, MESSAGE, None, NOW) is None
