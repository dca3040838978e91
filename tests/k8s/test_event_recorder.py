"""Events: the events.k8s.io/v1 body, series aggregation with its rate bound, best-effort sending
with a bounded queue, drops counted and told, and writes tried again while the server throttles."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.event_recorder import ApiEventRecorder, truncate_note
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.ports import Event, ObjectRef
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_pod
from tests.k8s.support import START, drive, ok, reply, status

EVENTS = "/apis/events.k8s.io/v1/namespaces/team/events"
NAME = f"web.{int(START * 1e9):x}"
CREATE = f"post {EVENTS}"
PATCH = f"patch {EVENTS}/{NAME}"

WEB = ObjectRef("team", "web", "uid-web")


def failed(
    note: str = "0/3 nodes are available: 3 Insufficient cpu.", pod: Any = WEB, revision: str = "7"
) -> Event:
    return Event(
        regarding=pod,
        type="Warning",
        reason="FailedScheduling",
        action="Scheduling",
        note=note,
        reporting_controller="my-scheduler",
        regarding_revision=revision,
    )


def logged(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    """The fields of each structlog line named ``event``."""
    return [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg.get("event") == event
    ]


@pytest.fixture
def vclock() -> VirtualClock:
    return VirtualClock(start=START)


@pytest.fixture
def recorder(api: Api, vclock: VirtualClock) -> ApiEventRecorder:
    return ApiEventRecorder(api, hostname="host-1", clock=vclock)


@pytest.fixture
def server(kmock: kmock.RawHandler) -> kmock.RawHandler:
    kmock[f"post {EVENTS}"] << (lambda request: ok(request.data, 201))
    kmock["patch", re.compile(f"{EVENTS}/[^/]+")] << (lambda request: ok({"kind": "Event"}))
    return kmock


async def test_the_event_body(server: kmock.RawHandler, recorder: ApiEventRecorder) -> None:
    await recorder.process(failed())

    requests = list(server[CREATE])
    assert len(requests) == 1
    assert requests[0].data == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": NAME, "namespace": "team"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "my-scheduler",
        "reportingInstance": "my-scheduler-host-1",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available: 3 Insufficient cpu.",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "team",
            "name": "web",
            "uid": "uid-web",
        },
    }


async def test_a_related_pod_is_referenced(
    server: kmock.RawHandler, recorder: ApiEventRecorder
) -> None:
    victim = make_pod("victim", "team").uid("uid-v").pod()
    preemptor = make_pod("web", "team").uid("uid-p").pod()

    await recorder.process(
        Event(
            regarding=victim,
            type="Normal",
            reason="Preempted",
            action="Preempting",
            note="Preempted by pod uid-p on node node-a",
            reporting_controller="my-scheduler",
            related=preemptor,
        )
    )

    [request] = server[CREATE]
    body = request.data
    assert body["metadata"]["name"].startswith("victim.")
    assert body["regarding"]["uid"] == "uid-v"
    assert body["related"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "team",
        "name": "web",
        "uid": "uid-p",
    }


async def test_events_in_the_same_nanosecond_get_distinct_names(
    server: kmock.RawHandler, recorder: ApiEventRecorder
) -> None:
    await recorder.process(failed("first", revision="7"))
    await recorder.process(failed("second", revision="8"))

    names = [r.data["metadata"]["name"] for r in server[CREATE]]
    assert len(set(names)) == 2


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        pytest.param("short", "short", id="short"),
        pytest.param("x" * 1024, "x" * 1024, id="at-limit"),
        pytest.param("x" * 1030, "x" * 1024, id="cut"),
        pytest.param("é" * 600, "é" * 512, id="multibyte-not-split"),
    ],
)
def test_truncate_note(note: str, expected: str) -> None:
    assert truncate_note(note) == expected


async def test_a_repeat_after_the_patch_interval_patches_the_series(
    server: kmock.RawHandler, recorder: ApiEventRecorder, vclock: VirtualClock
) -> None:
    await recorder.process(failed())
    vclock.advance_to(START + 30)
    await recorder.process(failed())

    assert len(server[CREATE]) == 1
    patches = list(server[PATCH])
    assert len(patches) == 1
    assert patches[0].data == {
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:30.000000Z"}
    }
    assert patches[0].headers["Content-Type"] == "application/merge-patch+json"


async def test_repeats_within_the_patch_interval_wait_for_the_flush(
    server: kmock.RawHandler, recorder: ApiEventRecorder, vclock: VirtualClock
) -> None:
    await recorder.process(failed())
    for offset in (1, 2, 5, 10):
        vclock.advance_to(START + offset)
        await recorder.process(failed())
    assert len(server[CREATE]) == 1
    assert len(server[PATCH]) == 0

    vclock.advance_to(START + 29)
    await recorder.flush()
    assert len(server[PATCH]) == 0

    vclock.advance_to(START + 30)
    await recorder.flush()
    vclock.advance_to(START + 90)
    await recorder.flush()

    assert [r.data for r in server[PATCH]] == [
        {"series": {"count": 5, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}}
    ]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(failed(revision="8"), id="the-pod-written-since"),
        pytest.param(
            failed(note="0/3 nodes are available: 3 Insufficient memory.", revision="8"),
            id="another-note-about-the-pod-written-since",
        ),
        pytest.param(failed(pod=ObjectRef("team", "web", "uid-new")), id="recreated-pod"),
        pytest.param(failed(pod=ObjectRef("team", "api", "uid-api")), id="other-pod"),
        pytest.param(
            Event(WEB, "Normal", "Scheduled", "Binding", "assigned", "my-scheduler"), id="reason"
        ),
    ],
)
async def test_a_different_event_is_not_a_repeat(
    server: kmock.RawHandler,
    recorder: ApiEventRecorder,
    vclock: VirtualClock,
    other: Event,
) -> None:
    await recorder.process(failed())
    vclock.advance_to(START + 60)
    await recorder.process(other)

    assert len(server[CREATE]) == 2
    assert len(server[PATCH]) == 0


@pytest.mark.parametrize(
    ("notes", "created_notes", "count"),
    [
        pytest.param(["a", "a"], ["a"], 2, id="same-note"),
        # kube-scheduler v1.34.10 (client-go's events broadcaster) keys a series on the object
        # reference, resourceVersion included, not on the note: a pod that fails again with
        # another message before anything wrote to it keeps the first message.
        pytest.param(["a", "b"], ["a"], 2, id="another-note-same-pod-version"),
        pytest.param(["a", "b", "a", "c"], ["a"], 4, id="several-notes-same-pod-version"),
    ],
)
async def test_repeats_about_the_same_pod_version_join_one_series_whatever_the_note(
    server: kmock.RawHandler,
    recorder: ApiEventRecorder,
    vclock: VirtualClock,
    notes: list[str],
    created_notes: list[str],
    count: int,
) -> None:
    for offset, note in enumerate(notes):
        vclock.advance_to(START + 30 * offset)
        await recorder.process(failed(note, revision="7"))
    await recorder.flush(final=True)

    assert [r.data["note"] for r in server[CREATE]] == created_notes
    assert [r.data["series"]["count"] for r in server[PATCH]][-1] == count
    assert all("note" not in r.data for r in server[PATCH])


async def test_a_repeat_after_the_series_window_starts_a_new_event(
    server: kmock.RawHandler, recorder: ApiEventRecorder, vclock: VirtualClock
) -> None:
    await recorder.process(failed())
    vclock.advance_to(START + 10)
    await recorder.process(failed())
    vclock.advance_to(START + 10 + 601)
    await recorder.process(failed())

    # The unsent count of the old series is written before it is forgotten.
    assert [r.data["series"]["count"] for r in server[PATCH]] == [2]
    assert len(server[CREATE]) == 2


async def test_an_expired_event_object_is_created_again_with_its_count(
    kmock: kmock.RawHandler, recorder: ApiEventRecorder, vclock: VirtualClock
) -> None:
    kmock[CREATE] << (lambda request: ok(request.data, 201))
    kmock[PATCH] << (lambda: reply(404, "NotFound", f'events.events.k8s.io "{NAME}" not found'))

    await recorder.process(failed())
    vclock.advance_to(START + 40)
    await recorder.process(failed())

    creates = list(kmock[CREATE])
    assert len(creates) == 2
    assert creates[1].data["metadata"]["name"] == NAME
    assert creates[1].data["series"] == {
        "count": 2,
        "lastObservedTime": "2026-01-01T00:00:40.000000Z",
    }


async def test_failures_are_logged_not_raised(
    kmock: kmock.RawHandler,
    recorder: ApiEventRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kmock[CREATE] << (lambda: reply(403, "Forbidden", "cannot create events"))

    with caplog.at_level(logging.WARNING, logger="kopf_scheduler.k8s.events"):
        await recorder.process(failed())

    assert len(kmock[CREATE]) == 1
    [failure] = logged(caplog, "event_write_failed")
    assert "cannot create events" in failure["reason"]


async def test_record_never_blocks_and_drops_when_full(api: Api, vclock: VirtualClock) -> None:
    recorder = ApiEventRecorder(api, hostname="h", clock=vclock, queue_size=2)

    for index in range(5):
        recorder.record(failed(f"note {index}"))

    assert recorder.dropped == 3


async def test_background_sending_and_stop_drains_the_queue(
    server: kmock.RawHandler, api: Api, vclock: VirtualClock
) -> None:
    recorder = ApiEventRecorder(api, hostname="h", clock=vclock)
    recorder.record(failed("queued before start", revision="1"))
    await recorder.start()
    recorder.record(failed("one", revision="2"))
    recorder.record(failed("one", revision="2"))
    recorder.record(failed("two", revision="3"))

    await recorder.stop()

    # Several senders work at once, so the creations may arrive in any order.
    created = {r.data["note"]: r.data["metadata"]["name"] for r in server[CREATE]}
    assert sorted(created) == ["one", "queued before start", "two"]
    assert len(server[CREATE]) == 3
    # The repeat of "one" was still waiting for its patch interval: stop writes its count.
    patches = list(server["patch"])
    assert [r.data["series"]["count"] for r in patches] == [2]
    assert patches[0].url.path == f"{EVENTS}/{created['one']}"
    recorder.record(failed("after stop"))
    assert recorder.dropped == 1


async def test_the_periodic_flush_writes_pending_counts(
    server: kmock.RawHandler, api: Api, vclock: VirtualClock
) -> None:
    recorder = ApiEventRecorder(api, hostname="h", clock=vclock, flush_interval=5)
    await recorder.start()
    try:
        recorder.record(failed())
        recorder.record(failed())
        await drive(vclock, lambda: len(server[PATCH]) == 1)
    finally:
        await recorder.stop()

    assert len(server[CREATE]) == 1
    assert [r.data["series"]["count"] for r in server[PATCH]] == [2]
    assert vclock.now() >= START + 30


async def test_several_events_are_sent_at_once(kmock: kmock.RawHandler, api: Api) -> None:
    in_flight = 0
    most_in_flight = 0
    release = asyncio.Event()

    async def slow_server(request: kmock.Request) -> Any:
        nonlocal in_flight, most_in_flight
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        await release.wait()
        in_flight -= 1
        return ok(request.data, 201)

    kmock[f"post {EVENTS}"] << slow_server
    recorder = ApiEventRecorder(api, hostname="host-1", senders=4)
    await recorder.start()
    for index in range(6):
        recorder.record(failed(pod=ObjectRef("team", f"web-{index}", f"uid-{index}")))
    for _ in range(200):
        if most_in_flight >= 4:
            break
        await asyncio.sleep(0.01)
    release.set()
    await recorder.stop()

    assert most_in_flight == 4
    assert len(kmock[f"post {EVENTS}"]) == 6
    assert recorder.dropped == 0


def dropped_metric(metrics: PrometheusMetrics, reason: str) -> float:
    value = metrics.registry.get_sample_value(
        "kopf_scheduler_events_dropped_total", {"reason": reason}
    )
    return value or 0.0


def throttled() -> kmock.Response:
    return kmock.Response(
        status=429,
        payload=status(429, "TooManyRequests", "the server is handling too many requests"),
        headers={"Retry-After": "1"},
    )


async def test_under_429s_the_queue_stays_bounded_and_every_event_is_sent_or_counted(
    kmock: kmock.RawHandler, api: Api, vclock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """More 429s than a request's own retries cover: the sink tries again ten seconds later."""
    kmock[CREATE][:24] << throttled
    kmock[CREATE] << (lambda request: ok(request.data, 201))
    metrics = PrometheusMetrics()
    recorder = ApiEventRecorder(
        api, hostname="h", clock=vclock, queue_size=5, senders=2, metrics=metrics
    )
    await recorder.start()
    most_queued = 0
    with caplog.at_level(logging.WARNING, logger="kopf_scheduler.k8s.events"):
        for index in range(30):
            recorder.record(failed(pod=ObjectRef("team", f"web-{index}", f"uid-{index}")))
            most_queued = max(most_queued, recorder.queued)
            await asyncio.sleep(0)

        def created() -> int:
            return max(0, len(kmock[CREATE]) - 24)

        try:
            await drive(vclock, lambda: created() + recorder.dropped == 30)
        finally:
            await recorder.stop()

    assert most_queued <= 5
    assert recorder.dropped > 0
    assert dropped_metric(metrics, "queue_full") == recorder.dropped
    assert dropped_metric(metrics, "send_failed") == 0
    assert created() == 30 - recorder.dropped
    assert len({r.data["regarding"]["name"] for r in kmock[CREATE]}) == created()
    assert len(logged(caplog, "events_dropped")) == 1  # every drop happened within one interval


async def test_an_event_refused_on_its_last_try_is_counted(
    kmock: kmock.RawHandler, api: Api, vclock: VirtualClock
) -> None:
    kmock[CREATE] << throttled
    metrics = PrometheusMetrics()
    recorder = ApiEventRecorder(api, hostname="h", clock=vclock, sink_tries=3, metrics=metrics)
    await recorder.start()
    try:
        recorder.record(failed())
        await drive(vclock, lambda: recorder.dropped == 1)
    finally:
        await recorder.stop()

    assert len(kmock[CREATE]) == 3 * 5  # three tries of the sink, each with the client's retries
    assert dropped_metric(metrics, "send_failed") == 1


async def test_drops_are_told_at_most_once_per_interval_with_their_count(
    api: Api, vclock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = PrometheusMetrics()
    recorder = ApiEventRecorder(
        api, hostname="h", clock=vclock, queue_size=1, metrics=metrics, drop_log_interval=10
    )
    with caplog.at_level(logging.WARNING, logger="kopf_scheduler.k8s.events"):
        for index in range(30):
            recorder.record(failed(f"note {index}"))
        vclock.advance_to(START + 9)
        recorder.record(failed("still within the interval"))
        vclock.advance_to(START + 10)
        recorder.record(failed("after the interval"))

    reports = logged(caplog, "events_dropped")
    assert len(reports) == len(caplog.records) == 2
    assert (reports[0]["since_last_report"], reports[0]["in_all"]) == (1, 1)
    assert (reports[1]["since_last_report"], reports[1]["in_all"]) == (30, 31)
    assert recorder.queued == 1
    assert dropped_metric(metrics, "queue_full") == 31
