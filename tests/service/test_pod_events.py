"""Pod watch events: what a pending pod leaving the queue does to the pods waiting for room.

kube-scheduler's informer hands the unscheduled-pod handler a deletion both when a pending pod
is deleted and when it is bound (it stops being an unscheduled pod). If that pod carried a
nomination, the room it held on the nominated node is released for the pods of equal or lower
priority, so those unschedulable pods are offered an assigned-pod deletion event. A pod deleted
while waiting at Permit is rejected there and releases its room for everyone; one deleted while
it is being bound stays in the cache until its binding fails.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED, EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.scheduling_queue import BACKOFF, UNSCHEDULABLE
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod

SCHEDULER = "kopf-scheduler"
WAITING_PRIORITY = 5


def _pending(name: str, priority: int, nominated: str | None) -> dict[str, Any]:
    builder = make_pod(name).scheduler(SCHEDULER).priority(priority).req(cpu="1")
    if nominated is not None:
        builder = builder.nominated(nominated)
    raw = builder.obj()
    raw["metadata"]["resourceVersion"] = "1"
    return raw


def _bound(raw: dict[str, Any], node: str) -> dict[str, Any]:
    bound = {**raw, "spec": {**raw["spec"], "nodeName": node}}
    bound["metadata"] = {**raw["metadata"], "resourceVersion": "2"}
    return bound


def _waiting_for_room(scheduler: Scheduler, handlers: EventHandlers) -> Any:
    """A pending pod that NodeResourcesFit rejected, parked in unschedulablePods."""
    handlers.route("Pod")(ADDED, _pending("waiting", WAITING_PRIORITY, None))
    queue = scheduler.queue
    info = queue.pop()
    assert info is not None and info.pod.name == "waiting"
    info.unschedulable_plugins = {"NodeResourcesFit"}
    assert queue.add_unschedulable_if_not_present(info, queue.scheduling_cycle)
    assert queue.location(info.pod) == UNSCHEDULABLE
    return info.pod


@pytest.mark.parametrize(
    ("leaves", "priority", "nominated", "waiting_ends_in"),
    [
        pytest.param("bound", 10, "n1", BACKOFF, id="bound-higher-nominated"),
        pytest.param("bound", WAITING_PRIORITY, "n1", BACKOFF, id="bound-equal-nominated"),
        pytest.param("bound", 1, "n1", UNSCHEDULABLE, id="bound-lower-nominated"),
        pytest.param("bound", 10, None, UNSCHEDULABLE, id="bound-not-nominated"),
        pytest.param("deleted", 10, "n1", BACKOFF, id="deleted-higher-nominated"),
        pytest.param("deleted", 1, "n1", UNSCHEDULABLE, id="deleted-lower-nominated"),
        pytest.param("deleted", 10, None, UNSCHEDULABLE, id="deleted-not-nominated"),
    ],
)
async def test_a_nominated_pod_leaving_requeues_pods_of_equal_or_lower_priority(
    leaves: str, priority: int, nominated: str | None, waiting_ends_in: str
) -> None:
    scheduler = Simulation(default_config()).start()
    handlers = EventHandlers(scheduler, Store())
    handlers.route("Node")(ADDED, make_node("n1").capacity(cpu="1").obj())
    waiting = _waiting_for_room(scheduler, handlers)
    raw = _pending("nominated", priority, nominated)
    handlers.route("Pod")(ADDED, raw)

    if leaves == "bound":
        handlers.route("Pod")(MODIFIED, _bound(raw, "n1"))
    else:
        handlers.route("Pod")(DELETED, raw)

    assert scheduler.queue.location(waiting) == waiting_ends_in
    assert [p.name for p in scheduler.queue.pending_pods()] == ["waiting"]


class WaitAtPermit:
    name: ClassVar[str] = "WaitAtPermit"

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        return Status(Code.WAIT), 60.0


@pytest.mark.parametrize(
    ("waiting_at_permit", "priority", "nominated", "waiting_ends_in"),
    [
        # Rejected at Permit: every unschedulable pod is offered the event, whatever its
        # priority (NodeResourcesFit still skips it unless the deleted pod was nominated).
        pytest.param(True, 1, "n1", BACKOFF, id="waiting-at-permit-lower-nominated"),
        pytest.param(True, 10, None, UNSCHEDULABLE, id="waiting-at-permit-not-nominated"),
        pytest.param(False, 10, "n1", BACKOFF, id="binding-higher-nominated"),
        pytest.param(False, 1, "n1", UNSCHEDULABLE, id="binding-lower-nominated"),
        pytest.param(False, 10, None, UNSCHEDULABLE, id="binding-not-nominated"),
    ],
)
async def test_an_assumed_pod_deleted(
    waiting_at_permit: bool, priority: int, nominated: str | None, waiting_ends_in: str
) -> None:
    scheduler = Simulation(default_config()).start()
    handlers = EventHandlers(scheduler, Store())
    handlers.route("Node")(ADDED, make_node("n1").capacity(cpu="1").obj())
    waiting = _waiting_for_room(scheduler, handlers)
    raw = _pending("assumed", priority, nominated)
    handlers.route("Pod")(ADDED, raw)
    assumed = Pod(_bound(raw, "n1"))
    scheduler.cache.assume_pod(assumed)
    framework = scheduler.profiles[SCHEDULER]
    if waiting_at_permit:
        framework.plugins.permit.append(WaitAtPermit())
        assert framework.run_permit(CycleState(), assumed, "n1").is_wait()

    handlers.route("Pod")(DELETED, raw)

    assert scheduler.queue.location(waiting) == waiting_ends_in
    # The binding cycle forgets the assumption when it fails, not the watch.
    assert scheduler.cache.is_assumed(assumed)
    waiting_pod = framework.get_waiting_pod(assumed.uid)
    if waiting_at_permit:
        assert waiting_pod is not None
        outcome = waiting_pod.result.result()
        assert outcome.code == Code.UNSCHEDULABLE
        assert outcome.reasons == ("removed",)
