"""Pod update events and the queueing-hint decision (upstream isPodWorthRequeuing)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from kopf_scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    HintFn,
)
from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.hints import (
    NODE_TAINT_UPDATE,
    HintRegistry,
    QueueingStrategy,
    rejector_group,
)
from kopf_scheduler.queue.pod_events import ASSIGNED_POD_UPDATE, pod_update_events
from tests.builders import PodBuilder, make_node, make_pod
from tests.queue.fakes import (
    NODE_LABEL_UPDATE,
    PDB_ADD,
    failing_hint,
    queue_hint,
    registration,
    skip_hint,
)

POD = make_pod("p").uid("uid-p").pod()
OTHER = make_pod("q").uid("uid-q").pod()
NODE = make_node("n1").node()


def _base() -> PodBuilder:
    return make_pod("p").uid("uid-p").req(cpu="1", memory="1Gi").label("app", "a")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(_base(), _base(), ["UnschedulablePodUpdate"], id="no-specific-change"),
        pytest.param(
            _base(), _base().label("app", "b"), ["UnschedulablePodUpdatePodLabel"], id="label"
        ),
        pytest.param(
            _base(),
            make_pod("p").uid("uid-p").req(cpu="500m", memory="1Gi").label("app", "a"),
            ["UnschedulablePodUpdatePodScaleDown"],
            id="cpu-scaled-down",
        ),
        pytest.param(
            _base(),
            make_pod("p").uid("uid-p").req(memory="1Gi").label("app", "a"),
            ["UnschedulablePodUpdatePodScaleDown"],
            id="request-removed",
        ),
        pytest.param(
            _base(),
            make_pod("p").uid("uid-p").req(cpu="2", memory="1Gi").label("app", "a"),
            ["UnschedulablePodUpdate"],
            id="scale-up-is-generic",
        ),
        pytest.param(
            _base().gate("g1").gate("g2"),
            _base().gate("g2"),
            ["UnschedulablePodUpdate"],
            id="one-gate-of-two-removed",
        ),
        pytest.param(
            _base().gate("g1"),
            _base(),
            ["UnschedulablePodUpdatePodSchedulingGatesEliminated"],
            id="all-gates-removed",
        ),
        pytest.param(
            _base(),
            _base().toleration("k", "v", "NoSchedule", "Equal"),
            ["UnschedulablePodUpdatePodToleration"],
            id="toleration-added",
        ),
        pytest.param(
            _base().gate("g"),
            _base().label("x", "y").toleration("k", "", "", "Exists"),
            [
                "UnschedulablePodUpdatePodLabel",
                "UnschedulablePodUpdatePodSchedulingGatesEliminated",
                "UnschedulablePodUpdatePodToleration",
            ],
            id="several-in-upstream-order",
        ),
        pytest.param(
            _base().node("n1"),
            _base().node("n1").label("app", "b"),
            ["AssignedPodUpdatePodLabel"],
            id="assigned-label",
        ),
        pytest.param(
            _base().node("n1"), _base().node("n1"), ["AssignedPodUpdate"], id="assigned-generic"
        ),
    ],
)
def test_pod_update_events(old: PodBuilder, new: PodBuilder, expected: list[str]) -> None:
    events = pod_update_events(old.pod(), new.pod())
    assert [event.name for event in events] == expected


def test_a_recorded_generated_claim_is_its_own_pod_update_event() -> None:
    old = _base().obj()
    old["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    new = copy.deepcopy(old)
    new["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]
    events = pod_update_events(Pod(old), Pod(new))
    assert [event.name for event in events] == ["UnschedulablePodUpdatePodGeneratedResourceClaim"]


def test_generic_update_events_are_the_shared_constants() -> None:
    assert pod_update_events(_base().pod(), _base().pod()) == [UNSCHEDULED_POD_UPDATE]
    assigned = _base().node("n").pod()
    assert pod_update_events(assigned, assigned) == [ASSIGNED_POD_UPDATE]


def _info(unschedulable: Iterable[str] = (), pending: Iterable[str] = ()) -> QueuedPodInfo:
    info = QueuedPodInfo(POD, 0.0)
    info.unschedulable_plugins = set(unschedulable)
    info.pending_plugins = set(pending)
    return info


def _registry(
    **plugins: list[tuple[ClusterEvent, HintFn | None]],
) -> HintRegistry:
    return HintRegistry(
        {
            "default-scheduler": {
                name: [registration(event, hint) for event, hint in events]
                for name, events in plugins.items()
            }
        }
    )


STANDARD = _registry(
    fooPlugin1=[(NODE_ADD, queue_hint), (ASSIGNED_POD_ADD, queue_hint)],
    fooPlugin2=[(NODE_ADD, skip_hint), (ASSIGNED_POD_ADD, queue_hint)],
    fooPlugin3=[(NODE_ADD, queue_hint), (ASSIGNED_POD_ADD, skip_hint)],
    broken=[(NODE_ADD, failing_hint)],
    defaultHint=[(PDB_ADD, None)],
)


WORTH_REQUEUING_CASES = [
    pytest.param(_info(), NODE_ADD, None, QueueingStrategy.AFTER_BACKOFF, id="no-rejectors"),
    pytest.param(
        _info({"fooPlugin1"}),
        UNSCHEDULABLE_TIMEOUT,
        None,
        QueueingStrategy.AFTER_BACKOFF,
        id="wildcard-event",
    ),
    pytest.param(
        _info({"fooPlugin1"}),
        FORCE_ACTIVATE,
        POD,
        QueueingStrategy.AFTER_BACKOFF,
        id="force-activate-for-this-pod",
    ),
    pytest.param(
        _info({"fooPlugin1"}),
        FORCE_ACTIVATE,
        OTHER,
        QueueingStrategy.SKIP,
        id="force-activate-for-another-pod",
    ),
    pytest.param(
        _info({"fooPlugin1"}),
        UNSCHEDULABLE_TIMEOUT,
        NODE,
        QueueingStrategy.SKIP,
        id="wildcard-carrying-a-non-pod",
    ),
    pytest.param(_info({"fooPlugin1"}), NODE_ADD, NODE, QueueingStrategy.AFTER_BACKOFF, id="queue"),
    pytest.param(_info({"fooPlugin2"}), NODE_ADD, NODE, QueueingStrategy.SKIP, id="skip"),
    pytest.param(
        _info({"fooPlugin2", "fooPlugin3"}),
        NODE_ADD,
        NODE,
        QueueingStrategy.AFTER_BACKOFF,
        id="one-queue-among-skips",
    ),
    pytest.param(
        _info({"unrelated"}),
        NODE_ADD,
        NODE,
        QueueingStrategy.SKIP,
        id="rejector-not-registered",
    ),
    pytest.param(
        _info({"fooPlugin2"}, {"fooPlugin1"}),
        ASSIGNED_POD_ADD,
        POD,
        QueueingStrategy.IMMEDIATELY,
        id="pending-plugin-queue-is-immediate",
    ),
    pytest.param(
        _info({"fooPlugin2"}, {"fooPlugin3"}),
        ASSIGNED_POD_ADD,
        POD,
        QueueingStrategy.AFTER_BACKOFF,
        id="pending-skips-unschedulable-queues",
    ),
    pytest.param(
        _info({"fooPlugin1"}),
        NODE_LABEL_UPDATE,
        NODE,
        QueueingStrategy.SKIP,
        id="event-nobody-registered",
    ),
    pytest.param(
        _info({"broken"}),
        NODE_ADD,
        NODE,
        QueueingStrategy.AFTER_BACKOFF,
        id="raising-hint-counts-as-queue",
    ),
    pytest.param(
        _info({"defaultHint"}),
        PDB_ADD,
        None,
        QueueingStrategy.AFTER_BACKOFF,
        id="no-hint-function-means-queue",
    ),
    pytest.param(
        _info({"fooPlugin1"}),
        NODE_TAINT_UPDATE,
        NODE,
        QueueingStrategy.AFTER_BACKOFF,
        id="node-add-registration-implies-taint-update",
    ),
]


@pytest.mark.parametrize(("info", "event", "new", "expected"), WORTH_REQUEUING_CASES)
def test_worth_requeuing(
    info: QueuedPodInfo, event: ClusterEvent, new: Any, expected: QueueingStrategy
) -> None:
    assert STANDARD.worth_requeuing(info, event, None, new) is expected


@pytest.mark.parametrize(("info", "event", "new", "expected"), WORTH_REQUEUING_CASES)
def test_a_group_is_passed_over_only_where_each_of_its_pods_would_be_skipped(
    info: QueuedPodInfo,
    event: ClusterEvent,
    new: Any,
    expected: QueueingStrategy,
    request: pytest.FixtureRequest,
) -> None:
    """Passed over: none of the group's rejectors registered the event, so no hint is asked."""
    case = request.node.callspec.id
    may = STANDARD.may_requeue(rejector_group(info), event)
    assert may is (case not in ("rejector-not-registered", "event-nobody-registered"))
    if not may:
        assert expected is QueueingStrategy.SKIP


def test_unknown_profile_requeues_after_backoff() -> None:
    info = QueuedPodInfo(make_pod("x").scheduler("elsewhere").pod(), 0.0)
    info.unschedulable_plugins = {"fooPlugin1"}
    assert STANDARD.worth_requeuing(info, NODE_ADD, None, NODE) is QueueingStrategy.AFTER_BACKOFF


def test_hints_receive_pod_and_objects() -> None:
    seen: list[tuple[Pod, Any, Any]] = []

    def hint(pod: Pod, old: Any, new: Any) -> Any:
        seen.append((pod, old, new))
        return skip_hint(pod, old, new)

    registry = _registry(plugin=[(ASSIGNED_POD_DELETE, hint)])
    registry.worth_requeuing(_info({"plugin"}), ASSIGNED_POD_DELETE, OTHER, None)
    assert seen == [(POD, OTHER, None)]


@pytest.mark.parametrize(
    ("registered", "incoming", "expected"),
    [
        pytest.param(NODE_ADD, NODE_ADD, True, id="same-event"),
        pytest.param(NODE_ADD, NODE_LABEL_UPDATE, False, id="other-action"),
        pytest.param(
            ClusterEvent(EventResource.POD, ActionType.ADD), ASSIGNED_POD_ADD, True, id="pod-any"
        ),
        pytest.param(NODE_ADD, UNSCHEDULABLE_TIMEOUT, True, id="wildcard-always"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE),
            NODE_LABEL_UPDATE,
            True,
            id="any-update-covers-label-update",
        ),
    ],
)
def test_is_event_of_interest(
    registered: ClusterEvent, incoming: ClusterEvent, expected: bool
) -> None:
    registry = _registry(plugin=[(registered, None)])
    assert registry.is_event_of_interest(incoming) is expected


def test_registrations_build() -> None:
    registry = HintRegistry(
        {
            "a": {
                "WithAdd": [ClusterEventWithHint(NODE_ADD)],
                "WithAddAndTaint": [
                    ClusterEventWithHint(
                        ClusterEvent(
                            EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT
                        )
                    )
                ],
                "NoEvents": [],
            },
            "b": {"WithAdd": [ClusterEventWithHint(PDB_ADD)]},
        }
    )
    assert [(r.plugin, r.event) for r in registry.registrations("a")] == [
        ("WithAdd", NODE_ADD),
        ("WithAdd", NODE_TAINT_UPDATE),
        (
            "WithAddAndTaint",
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        ),
    ]
    # Gating-plugin events are the union over profiles.
    assert registry.plugin_events("WithAdd") == [NODE_ADD, NODE_TAINT_UPDATE, PDB_ADD]
    assert registry.plugin_events("NoEvents") == []
    assert registry.gating_plugin_interested("WithAdd", PDB_ADD)
    assert not registry.gating_plugin_interested("NoEvents", UNSCHEDULABLE_TIMEOUT)
