"""The API side of preemption, synchronous and asynchronous: DisruptionTarget patches,
deletions, Preempted events, nomination clearing, the PreEnqueue gate and failure handling.

Re-expresses upstream's TestPreempt (patched == deleted victims, DisruptionTarget condition),
TestPreEnqueue and the async-preemption behaviour of preemption.go, with fake ports recording
every call.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus, NominatingInfo, PostFilterResult
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import ApiError, NotFoundError
from kopf_scheduler.preemption.executor import (
    METRIC_GOROUTINES_DURATION,
    METRIC_GOROUTINES_EXECUTION,
    METRIC_PREEMPTION_VICTIMS,
    run_to_completion,
)
from kopf_scheduler.preemption.record import OUTCOME_ERROR, PREEMPTION_RECORD
from tests.builders import make_node, make_pod, node_info
from tests.preemption.support import HIGH, LOW, MID, Env, make_env

NOW = 1_800_000_000.0
NOW_TEXT = "2027-01-15T08:00:00Z"
GATED = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for the preemption for this pod to be finished"
)
CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "default-scheduler: preempting to accommodate a higher priority pod",
    "lastTransitionTime": NOW_TEXT,
}
CLEAR_NOMINATION = {"status": {"nominatedNodeName": None}}


def _victim(name: str, prio: int = LOW, **kw: Any) -> Any:
    builder = make_pod(name).uid(f"uid-{name}").priority(prio).req(cpu="300m")
    if kw.get("terminating"):
        builder = builder.terminating()
    return builder


def _env(victims: list[Any], *, asynchronous: bool = True, cpu: str = "1", **kw: Any) -> Env:
    """One node, ``victims`` on it; the preemptor (1 CPU) needs all of them gone."""
    info = node_info(make_node("node1").capacity(cpu=cpu, memory="1Gi", pods=32), *victims)
    return make_env([info], async_preemption=asynchronous, now=NOW, **kw)


def _preemptor(name: str = "p", prio: int = HIGH, scheduler: str = "default-scheduler") -> Pod:
    return make_pod(name).uid(f"uid-{name}").priority(prio).req(cpu="1").scheduler(scheduler).pod()


def _nominate(env: Env, name: str, prio: int, *, in_status: bool = True) -> Pod:
    builder = make_pod(name).uid(f"uid-{name}").priority(prio)
    if in_status:
        builder = builder.nominated("node1")
    pod = builder.pod()
    env.add_pod(pod)
    env.nominator.nominate(pod, "node1")
    return pod


def test_run_to_completion_rejects_suspension() -> None:
    async def suspends() -> None:
        await asyncio.sleep(0)

    async def returns() -> int:
        return 7

    assert run_to_completion(returns()) == 7
    with pytest.raises(RuntimeError, match="asynchronous mode"):
        run_to_completion(suspends())


# Synchronous --------------------------------------------------------------------------------


def test_sync_preemption_patches_deletes_and_records_events() -> None:
    env = _env([_victim("v1"), _victim("v2", MID)], asynchronous=False)
    preemptor = _preemptor()
    low = _nominate(env, "low", LOW)
    _nominate(env, "equal", HIGH)
    _nominate(env, "memory-only", LOW, in_status=False)
    result, status, _ = env.post_filter(preemptor)
    assert status.is_success()
    assert result == PostFilterResult(NominatingInfo.override("node1"))
    assert env.spawned == []
    # Most important victim first.
    assert env.deleter.deleted == ["default/v2", "default/v1"]
    assert env.patches_of("default/v1") == [{"status": {"conditions": [CONDITION]}}]
    assert env.patches_of("default/v2") == [{"status": {"conditions": [CONDITION]}}]
    assert [
        (e.regarding.name, e.type, e.reason, e.action, e.note) for e in env.recorder.events
    ] == [
        ("v2", "Normal", "Preempted", "Preempting", "Preempted by pod uid-p on node node1"),
        ("v1", "Normal", "Preempted", "Preempting", "Preempted by pod uid-p on node node1"),
    ]
    assert all(e.related is preemptor or e.related == preemptor for e in env.recorder.events)
    assert {e.reporting_controller for e in env.recorder.events} == {"default-scheduler"}
    # Only the lower-priority pod nominated (in its status) to the node is cleared.
    assert env.patches_of(low.key) == [CLEAR_NOMINATION]
    assert env.patches_of("default/equal") == []
    assert env.patches_of("default/memory-only") == []
    assert env.metrics.observed(METRIC_PREEMPTION_VICTIMS) == [2]
    assert env.plugin.pre_enqueue(preemptor).is_success()


def test_condition_message_names_the_preemptors_scheduler() -> None:
    env = _env([_victim("v1")], asynchronous=False, scheduler_name="other")
    preemptor = _preemptor(scheduler="my-scheduler")
    env.post_filter(preemptor)
    (body,) = env.patches_of("default/v1")
    condition = body["status"]["conditions"][0]
    assert condition["message"] == "my-scheduler: preempting to accommodate a higher priority pod"
    assert env.recorder.events[0].reporting_controller == "other"


def test_condition_records_the_victims_generation() -> None:
    # v1.34 has PodObservedGenerationTracking on: the condition says which generation it saw.
    env = _env([_victim("v1").generation(3), _victim("v2", MID)], asynchronous=False)
    env.post_filter(_preemptor())
    (v1,) = env.patches_of("default/v1")
    (v2,) = env.patches_of("default/v2")
    assert v1 == {"status": {"conditions": [{**CONDITION, "observedGeneration": 3}]}}
    assert v2 == {"status": {"conditions": [CONDITION]}}  # no generation kept, none written


def test_existing_identical_condition_is_not_patched_again() -> None:
    victim = _victim("v1").condition(
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )
    env = _env([victim], asynchronous=False)
    env.post_filter(_preemptor())
    assert env.patches_of("default/v1") == []
    assert env.deleter.deleted == ["default/v1"]


MARKED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "default-scheduler: preempting to accommodate a higher priority pod",
}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("condition", "patched"),
    [
        pytest.param(MARKED, False, id="marked-by-an-earlier-preemption"),
        pytest.param(None, True, id="terminating-for-another-reason"),
    ],
)
async def test_terminating_victims_are_preempted_again(
    asynchronous: bool, condition: dict[str, str] | None, patched: bool
) -> None:
    """A victim already terminating is deleted again and gets a second Preempted event; only
    the DisruptionTarget condition is not written twice."""
    terminating = _victim("terminating", MID, terminating=True)
    if condition is not None:
        terminating = terminating.condition(
            condition["type"], condition["status"], condition["reason"], condition["message"]
        )
    env = _env([terminating, _victim("v1")], asynchronous=asynchronous)
    _, status, state = env.post_filter(_preemptor())
    await env.run_spawned()
    assert status.is_success()
    assert state.read(PREEMPTION_RECORD).victims == ("default/terminating", "default/v1")
    assert env.deleter.deleted == ["default/terminating", "default/v1"]
    expected_patches = [{"status": {"conditions": [CONDITION]}}] if patched else []
    assert env.patches_of("default/terminating") == expected_patches
    assert [e.regarding.name for e in env.recorder.events] == ["terminating", "v1"]


@pytest.mark.parametrize(
    ("fail_patch", "fail_delete", "code", "deleted", "events"),
    [
        pytest.param(
            ApiError(500, "InternalError", "etcd is sad"),
            None,
            Code.ERROR,
            [],
            [],
            id="patch-error-fails",
        ),
        pytest.param(NotFoundError("gone"), None, Code.SUCCESS, [], [], id="patch-not-found-done"),
        pytest.param(
            None,
            ApiError(403, "Forbidden", "no"),
            Code.ERROR,
            [],
            [],
            id="delete-error-fails",
        ),
        pytest.param(None, NotFoundError("gone"), Code.SUCCESS, [], [], id="delete-not-found-done"),
    ],
)
def test_sync_api_failures(
    fail_patch: Exception | None,
    fail_delete: Exception | None,
    code: Code,
    deleted: list[str],
    events: list[str],
) -> None:
    env = _env([_victim("v1")], asynchronous=False)
    if fail_patch is not None:
        env.writer.fail["default/v1"] = fail_patch
    if fail_delete is not None:
        env.deleter.fail["default/v1"] = fail_delete
    low = _nominate(env, "low", LOW)
    result, status, state = env.post_filter(_preemptor())
    assert status.code == code
    assert env.deleter.deleted == deleted
    assert [e.regarding.name for e in env.recorder.events] == events
    if code == Code.ERROR:
        assert result is None
        assert status.message().startswith("preemption: ")
        assert state.read(PREEMPTION_RECORD).outcome == OUTCOME_ERROR
        assert env.patches_of(low.key) == []
        assert env.metrics.observed(METRIC_PREEMPTION_VICTIMS) == []
    else:
        assert result == PostFilterResult(NominatingInfo.override("node1"))
        assert env.patches_of(low.key) == [CLEAR_NOMINATION]


def test_sync_nomination_clearing_errors_are_ignored() -> None:
    env = _env([_victim("v1")], asynchronous=False)
    low = _nominate(env, "low", LOW)
    env.writer.fail[low.key] = ApiError(500, "InternalError")
    _, status, _ = env.post_filter(_preemptor())
    assert status.is_success()
    assert env.deleter.deleted == ["default/v1"]


def test_sync_mode_with_a_suspending_port_is_an_error() -> None:
    env = _env([_victim("v1")], asynchronous=False)

    class SlowDeleter:
        async def delete_pod(self, pod: Pod) -> None:
            await asyncio.sleep(0)

    env.handle.pod_deleter = SlowDeleter()
    result, status, _ = env.post_filter(_preemptor())
    assert result is None
    assert status.code == Code.ERROR
    assert "asynchronous mode" in status.message()


# Asynchronous -------------------------------------------------------------------------------


async def test_async_preemption_gates_until_done() -> None:
    env = _env([_victim("v1"), _victim("v2", MID), _victim("v3")])
    preemptor = _preemptor()
    low = _nominate(env, "low", LOW)
    gate_during_delete: list[tuple[str, bool]] = []
    env.deleter.on_delete.append(
        lambda victim: gate_during_delete.append(
            (victim.name, not env.plugin.pre_enqueue(preemptor).is_success())
        )
    )
    result, status, _ = env.post_filter(preemptor)
    # PostFilter returns at once: nomination, nothing deleted yet, the preemptor gated.
    assert status.is_success()
    assert result == PostFilterResult(NominatingInfo.override("node1"))
    assert env.deleter.deleted == []
    assert env.writer.patches == []
    assert len(env.spawned) == 1
    assert env.plugin.pre_enqueue(preemptor) == GATED
    assert env.metrics.observed(METRIC_PREEMPTION_VICTIMS) == [3]

    await env.run_spawned()

    assert sorted(env.deleter.deleted) == ["default/v1", "default/v2", "default/v3"]
    # The last victim (least important: v3) is deleted last, after the others.
    assert env.deleter.deleted[-1] == "default/v3"
    # Gated while the others go; open before the last victim's API calls.
    assert gate_during_delete == [("v2", True), ("v1", True), ("v3", False)]
    assert env.patches_of(low.key) == [CLEAR_NOMINATION]
    assert {e.regarding.name for e in env.recorder.events} == {"v1", "v2", "v3"}
    assert env.plugin.pre_enqueue(preemptor).is_success()
    assert env.activated == []
    assert env.metrics.count(METRIC_GOROUTINES_EXECUTION, result="success") == 1
    assert [
        labels for name, _, labels in env.metrics.observations if name == METRIC_GOROUTINES_DURATION
    ] == [{"result": "success"}]


@pytest.mark.parametrize(
    ("fail", "deleted", "events"),
    [
        pytest.param(
            {"delete:default/v2": ApiError(500, "InternalError")},
            ["default/v1"],
            ["v1"],
            id="non-last-victim-fails-last-skipped",
        ),
        pytest.param(
            {"delete:default/v3": ApiError(500, "InternalError")},
            ["default/v2", "default/v1"],
            ["v2", "v1"],
            id="last-victim-fails",
        ),
        pytest.param(
            {"patch:default/low": ApiError(500, "InternalError")},
            ["default/v2", "default/v1", "default/v3"],
            ["v2", "v1", "v3"],
            id="nomination-clearing-fails-victims-still-go",
        ),
    ],
)
async def test_async_failure_reactivates_the_preemptor(
    fail: dict[str, Exception], deleted: list[str], events: list[str]
) -> None:
    env = _env([_victim("v1"), _victim("v2", MID), _victim("v3")])
    preemptor = _preemptor()
    _nominate(env, "low", LOW)
    for target, error in fail.items():
        verb, key = target.split(":")
        (env.deleter.fail if verb == "delete" else env.writer.fail)[key] = error
    _, status, _ = env.post_filter(preemptor)
    assert status.is_success()
    await env.run_spawned()
    assert env.deleter.deleted == deleted
    assert [e.regarding.name for e in env.recorder.events] == events
    assert env.activated == ["default/p"]
    assert env.metrics.count(METRIC_GOROUTINES_EXECUTION, result="error") == 1
    assert env.metrics.count(METRIC_GOROUTINES_EXECUTION, result="success") == 0
    assert env.plugin.pre_enqueue(preemptor).is_success()


async def test_async_all_victims_terminating_preempts_them_again() -> None:
    env = _env([_victim("v1", terminating=True), _victim("v2", terminating=True)])
    preemptor = _preemptor()
    low = _nominate(env, "low", LOW)
    result, status, _ = env.post_filter(preemptor)
    assert status.is_success()
    assert result == PostFilterResult(NominatingInfo.override("node1"))
    assert len(env.spawned) == 1
    assert env.plugin.pre_enqueue(preemptor) == GATED
    await env.run_spawned()
    assert env.deleter.deleted == ["default/v1", "default/v2"]
    assert [e.regarding.name for e in env.recorder.events] == ["v1", "v2"]
    assert env.patches_of(low.key) == [CLEAR_NOMINATION]
    assert env.plugin.pre_enqueue(preemptor).is_success()
    assert env.metrics.observed(METRIC_PREEMPTION_VICTIMS) == [2]


def test_spawn_failure_is_an_error_and_not_gated() -> None:
    env = _env([_victim("v1")])

    def refuse(coroutine: Any) -> None:
        coroutine.close()
        raise RuntimeError("no background task runner")

    env.handle.spawn = refuse
    preemptor = _preemptor()
    result, status, _ = env.post_filter(preemptor)
    assert result is None
    assert status.code == Code.ERROR
    assert status.message() == "preemption: no background task runner"
    assert env.plugin.pre_enqueue(preemptor).is_success()


@pytest.mark.parametrize(
    ("preempting", "gated"),
    [
        pytest.param(False, False, id="not-preempting"),
        pytest.param(True, True, id="preempting"),
    ],
)
def test_is_pod_running_preemption(preempting: bool, gated: bool) -> None:
    env = _env([])
    preemptor = _preemptor()
    executor = env.plugin.evaluator.executor
    if preempting:
        executor.preempting.add(preemptor.uid)
    assert executor.is_pod_running_preemption(preemptor.uid) is gated
    assert env.plugin.pre_enqueue(preemptor) == (GATED if gated else Status(Code.SUCCESS))


@pytest.mark.parametrize(
    "victim_names",
    [
        pytest.param(["v1"], id="single-victim"),
        pytest.param(["v1", "v2", "v3"], id="three-victims"),
    ],
)
async def test_gate_opens_before_the_last_victims_api_calls(victim_names: list[str]) -> None:
    """The preemptor leaves the preempting set before its last victim is patched and deleted,
    so the deletion of that victim, whenever it is seen, finds the preemptor ungated."""
    env = _env([_victim(name, MID - index) for index, name in enumerate(victim_names)])
    preemptor = _preemptor()
    gated_at: list[tuple[str, str, bool]] = []

    def record(verb: str) -> Any:
        return lambda victim: gated_at.append(
            (verb, victim.name, not env.plugin.pre_enqueue(preemptor).is_success())
        )

    env.writer.on_patch.append(record("patch"))
    env.deleter.on_delete.append(record("delete"))
    env.post_filter(preemptor)
    assert env.plugin.pre_enqueue(preemptor) == GATED
    await env.run_spawned()
    last = victim_names[-1]
    assert sorted(gated_at) == sorted(
        [(verb, name, name != last) for name in victim_names for verb in ("patch", "delete")]
    )


async def test_waiting_pod_victim_is_rejected_without_api_calls() -> None:
    env = _env([_victim("waiting"), _victim("v1", MID)])

    class WaitForever:
        name: ClassVar[str] = "WaitForever"

        def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
            return Status(Code.WAIT), 60.0

    env.framework.plugins.permit.append(WaitForever())
    waiting = env.store["default/waiting"]
    assert env.framework.run_permit(CycleState(), waiting, "node1").is_wait()
    _, status, _ = env.post_filter(_preemptor())
    assert status.is_success()
    await env.run_spawned()
    waiting_pod = env.framework.get_waiting_pod(waiting.uid)
    assert waiting_pod is not None
    outcome = waiting_pod.result.result()
    assert outcome.code == Code.UNSCHEDULABLE
    assert outcome.reasons == ("preempted",)
    assert outcome.plugin == "DefaultPreemption"
    assert env.deleter.deleted == ["default/v1"]
    assert env.patches_of("default/waiting") == []
    assert {e.regarding.name for e in env.recorder.events} == {"waiting", "v1"}


def test_second_attempt_waits_for_terminating_victims() -> None:
    """After preempting, the retry finds its victims terminating on the nominated node."""
    env = _env([_victim("v1")], asynchronous=False)
    preemptor = _preemptor()
    result, status, _ = env.post_filter(preemptor)
    assert status.is_success()
    assert result is not None and result.nominating_info is not None
    # The victim is now terminating with the condition the scheduler wrote.
    victim = (
        _victim("v1", terminating=True)
        .condition("DisruptionTarget", "True", "PreemptionByScheduler")
        .node("node1")
        .pod()
    )
    retry_env = _env([], asynchronous=False)
    retry_env.handle.snapshot.node_info_list[:] = []
    info = node_info(make_node("node1").capacity(cpu="1", memory="1Gi", pods=32), victim)
    retry_env.handle.snapshot.node_info_list.append(info)
    retry_env.handle.snapshot.node_info_map = {"node1": info}
    nominated = make_pod("p").uid("uid-p").priority(HIGH).req(cpu="1").nominated("node1").pod()
    retry_env.add_pod(nominated)
    again, status, _ = retry_env.post_filter(
        nominated, NodeToStatus({"node1": Status(Code.UNSCHEDULABLE, "Insufficient cpu")})
    )
    assert again is None
    assert status.message() == (
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert retry_env.deleter.deleted == []
