"""What a user reads when no node fits, with DynamicResources' PostFilter ahead of
DefaultPreemption as in kube-scheduler v1.34's default profile.

- A Filter rejection: DynamicResources adds ``no new claims to deallocate`` and DefaultPreemption
  runs after it; the FitError joins both.
- A PreFilter rejection (UnschedulableAndUnresolvable): DynamicResources' PreFilter, ordered
  last, never ran, so its PostFilter fails with ``not found``; DefaultPreemption is not tried.
- A pod whose ResourceClaim names a DeviceClass that does not exist: turned away by
  DynamicResources' own PreFilter, then preemption finds no node where it could help (the text
  kube-scheduler v1.34.10 gives on a live cluster).
"""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim.runner import Simulation
from tests.builders import PodBuilder, make_node, make_pod

SCHED = "kopf-scheduler"

_CONFLICTING_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                        {"key": "metadata.name", "operator": "In", "values": ["n2"]},
                    ]
                }
            ]
        }
    }
}


def _pending(name: str) -> PodBuilder:
    return make_pod(name).scheduler(SCHED).priority(100)


SHARED_GPU = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "shared-gpu", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
}


def _with_claim(builder: PodBuilder) -> dict[str, Any]:
    raw = builder.obj()
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-gpu"}]
    return raw


@pytest.mark.parametrize(
    ("pending", "message", "preemption_tried"),
    [
        pytest.param(
            _pending("p").priority(0).req(cpu="2").obj(),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            True,
            id="filter-rejection",
        ),
        pytest.param(
            _pending("p").req(cpu="2").affinity(_CONFLICTING_AFFINITY).obj(),
            "0/1 nodes are available: pod affinity terms conflict. not found",
            False,
            id="prefilter-rejection",
        ),
        pytest.param(
            _with_claim(_pending("p").req(cpu="500m")),
            "0/1 nodes are available: request gpu: device class gpu does not exist. "
            "no new claims to deallocate, preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling.",
            True,
            id="claim-naming-a-missing-device-class",
        ),
    ],
)
async def test_failed_scheduling_message(
    pending: dict[str, Any], message: str, preemption_tried: bool
) -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="2", memory="4Gi", pods=10).obj())
    sim.apply(make_pod("resident").req(cpu="1").priority(0).node("n1").obj())
    sim.apply(SHARED_GPU)
    sim.apply(pending)
    await sim.run_until_quiet()

    raw = sim.cluster.pods["default/p"]
    assert "nodeName" not in raw["spec"]
    assert "default/resident" not in sim.cluster.deleted
    [scheduled] = [c for c in raw["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    failures = [e.message for e in sim.cluster.events if e.reason == "FailedScheduling"]
    assert failures and set(failures) == {message}
    attempts = [a for a in sim.attempts if a.pod == "default/p"]
    assert attempts and all(a.result == "unschedulable" for a in attempts)
    assert [a.preemption is not None for a in attempts] == [preemption_tried] * len(attempts)
