"""The framework runtime from Reserve to PostBind, PreScore and PostFilter: the order plugins
run in, what stops the run, what is skipped, and how a plugin's failure is reported (a
rejection names the plugin, anything else becomes an Error saying where it came from), as
upstream's frameworkImpl does."""

from __future__ import annotations

import asyncio

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import MAX_TIMEOUT_SECONDS, Framework, ProfilePlugins
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import NodeToStatus, PostFilterResult
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.priority_sort import PrioritySort
from tests.builders import make_pod
from tests.clock import FakeClock

POD = make_pod("p").pod()


class Recorder:
    """A plugin at every point from PreScore on, answering what it is told and noting calls."""

    def __init__(self, name: str, calls: list[str], status: Status = SUCCESS) -> None:
        self.name = name  # type: ignore[misc]
        self.calls = calls
        self.status = status
        self.timeout = 0.0

    def _answer(self, point: str) -> Status:
        self.calls.append(f"{point}:{self.name}")
        return self.status

    def pre_score(self, state: CycleState, pod: Pod, nodes: object) -> Status:
        return self._answer("PreScore")

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self._answer("Reserve")

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._answer("Unreserve")

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        return self._answer("Permit"), self.timeout

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self._answer("PreBind")

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self._answer("Bind")

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._answer("PostBind")

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        return None, self._answer("PostFilter")


def _framework(*plugins: Recorder, clock: FakeClock | None = None) -> Framework:
    profile = ProfilePlugins(queue_sort=PrioritySort())
    for attribute in ("pre_score", "reserve", "permit", "pre_bind", "bind", "post_bind"):
        setattr(profile, attribute, list(plugins))
    profile.post_filter = list(plugins)  # type: ignore[arg-type]
    profile.all = list(plugins)  # type: ignore[arg-type]
    handle = Handle(scheduler_name="test", now=(clock or FakeClock()).now)
    return Framework("test", profile, handle)


def test_reserve_runs_in_order_and_unreserve_in_reverse() -> None:
    calls: list[str] = []
    fwk = _framework(Recorder("A", calls), Recorder("B", calls))
    assert fwk.run_reserve(CycleState(), POD, "n1").is_success()
    fwk.run_unreserve(CycleState(), POD, "n1")
    assert calls == ["Reserve:A", "Reserve:B", "Unreserve:B", "Unreserve:A"]


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, "full"), Code.UNSCHEDULABLE, "full", id="reject"),
        pytest.param(
            Status(Code.ERROR, "broken"),
            Code.ERROR,
            'running Reserve plugin "B": broken',
            id="error",
        ),
    ],
)
def test_a_failing_reserve_stops_the_run_and_is_named(
    status: Status, code: Code, message: str
) -> None:
    calls: list[str] = []
    fwk = _framework(Recorder("A", calls), Recorder("B", calls, status), Recorder("C", calls))
    result = fwk.run_reserve(CycleState(), POD, "n1")
    assert (result.code, result.message(), result.plugin) == (code, message, "B")
    assert calls == ["Reserve:A", "Reserve:B"]


def test_permit_collects_every_wait_capped_and_stops_at_a_rejection() -> None:
    calls: list[str] = []
    waiting = Recorder("W", calls, Status(Code.WAIT))
    waiting.timeout = MAX_TIMEOUT_SECONDS * 2
    fwk = _framework(waiting, Recorder("A", calls))

    async def permit() -> Status:
        return fwk.run_permit(CycleState(), POD, "n1")

    status = asyncio.run(permit())
    assert status.code == Code.WAIT
    assert calls == ["Permit:W", "Permit:A"]
    waited = fwk.get_waiting_pod(POD.uid)
    assert waited is not None and waited.pending == {"W": MAX_TIMEOUT_SECONDS}

    calls.clear()
    rejecting = _framework(Recorder("R", calls, Status(Code.UNSCHEDULABLE, "no")), waiting)
    result = rejecting.run_permit(CycleState(), POD, "n1")
    assert (result.code, result.plugin, calls) == (Code.UNSCHEDULABLE, "R", ["Permit:R"])


def test_a_permit_error_says_where_it_came_from() -> None:
    fwk = _framework(Recorder("E", [], Status(Code.ERROR, "boom")))
    result = fwk.run_permit(CycleState(), POD, "n1")
    assert (result.code, result.message()) == (Code.ERROR, 'running Permit plugin "E": boom')


def test_a_wait_ends_with_a_timeout_naming_the_plugin_that_waited_least() -> None:
    clock = FakeClock(100.0)
    long_wait = Recorder("Long", [], Status(Code.WAIT))
    long_wait.timeout = 30.0
    short_wait = Recorder("Short", [], Status(Code.WAIT))
    short_wait.timeout = 5.0
    fwk = _framework(long_wait, short_wait, clock=clock)

    async def wait() -> Status:
        assert fwk.run_permit(CycleState(), POD, "n1").code == Code.WAIT
        return await fwk.wait_on_permit(POD, clock.sleep)

    status = asyncio.run(wait())
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "Short")
    assert status.message() == "rejected due to timeout after waiting 5s at plugin Short"
    assert fwk.get_waiting_pod(POD.uid) is None


def test_pre_bind_skips_skip_and_stops_at_the_first_failure() -> None:
    calls: list[str] = []
    fwk = _framework(
        Recorder("S", calls, Status(Code.SKIP)),
        Recorder("E", calls, Status(Code.ERROR, "api down")),
        Recorder("C", calls),
    )
    result = asyncio.run(fwk.run_pre_bind(CycleState(), POD, "n1"))
    assert (result.code, result.message(), result.plugin) == (
        Code.ERROR,
        'running PreBind plugin "E": api down',
        "E",
    )
    assert calls == ["PreBind:S", "PreBind:E"]


def test_bind_goes_to_the_first_plugin_that_does_not_skip() -> None:
    calls: list[str] = []
    fwk = _framework(
        Recorder("S", calls, Status(Code.SKIP)),
        Recorder("B", calls),
        Recorder("Never", calls),
    )
    assert asyncio.run(fwk.run_bind(CycleState(), POD, "n1")).is_success()
    assert calls == ["Bind:S", "Bind:B"]


def test_bind_with_every_plugin_skipping_is_a_skip() -> None:
    fwk = _framework(Recorder("S", [], Status(Code.SKIP)))
    assert asyncio.run(fwk.run_bind(CycleState(), POD, "n1")).code == Code.SKIP


def test_a_bind_error_says_where_it_came_from() -> None:
    fwk = _framework(Recorder("B", [], Status(Code.ERROR, "conflict")))
    result = asyncio.run(fwk.run_bind(CycleState(), POD, "n1"))
    assert (result.code, result.message()) == (Code.ERROR, 'running Bind plugin "B": conflict')


def test_post_bind_tells_every_plugin_in_order() -> None:
    calls: list[str] = []
    fwk = _framework(Recorder("A", calls), Recorder("B", calls))
    fwk.run_post_bind(CycleState(), POD, "n1")
    assert calls == ["PostBind:A", "PostBind:B"]


def test_pre_score_remembers_skips_and_wraps_failures() -> None:
    calls: list[str] = []
    state = CycleState()
    fwk = _framework(
        Recorder("S", calls, Status(Code.SKIP)),
        Recorder("F", calls, Status(Code.UNSCHEDULABLE, "odd")),
        Recorder("C", calls),
    )
    result = fwk.run_pre_score(state, POD, [])
    assert (result.code, result.message()) == (Code.ERROR, 'running PreScore plugin "F": odd')
    assert state.skip_score_plugins == {"S"}
    assert calls == ["PreScore:S", "PreScore:F"]


def test_post_filter_joins_rejections_until_one_succeeds() -> None:
    calls: list[str] = []
    fwk = _framework(
        Recorder("A", calls, Status(Code.UNSCHEDULABLE, "a says no")),
        Recorder("B", calls, Status(Code.UNSCHEDULABLE, "b says no")),
    )
    _, status = fwk.run_post_filter(CycleState(), POD, NodeToStatus())
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE,
        ("a says no", "b says no"),
        "A",
    )

    calls.clear()
    first_wins = _framework(Recorder("OK", calls), Recorder("Never", calls))
    _, status = first_wins.run_post_filter(CycleState(), POD, NodeToStatus())
    assert (status.code, status.plugin, calls) == (Code.SUCCESS, "OK", ["PostFilter:OK"])
