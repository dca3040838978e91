"""kopf's PodGroup watch: one event handler, no writes of kopf's own, events to the keeper."""

from __future__ import annotations

from typing import Any

import kopf

from kopf_scheduler.gangs.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.kopf_watches.pod_group_status import register_pod_group_status
from tests.gangs.support import FakeClock, FakeEvents, FakeWriter, raw_pod_group


def keeper_and_writer() -> tuple[PodGroupStatusKeeper, FakeWriter]:
    writer = FakeWriter()
    keeper = PodGroupStatusKeeper(
        writer, FakeEvents(), FakeClock(), is_leader=lambda: True, reporting_controller="s"
    )
    return keeper, writer


async def test_podgroups_are_watched_by_an_event_handler_only() -> None:
    registry = kopf.OperatorRegistry()
    keeper, _ = keeper_and_writer()

    register_pod_group_status(registry, keeper)

    (handler,) = registry._watching.get_all_handlers()
    selector = handler.selector
    assert selector is not None
    assert (selector.group, selector.version, selector.plural) == (
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
    )
    assert registry._spawning.get_all_handlers() == []  # no timers: no finalizers
    assert registry._changing.get_all_handlers() == []


async def test_listed_modified_and_deleted_groups_reach_the_keeper() -> None:
    registry = kopf.OperatorRegistry()
    keeper, writer = keeper_and_writer()
    register_pod_group_status(registry, keeper)
    (handler,) = registry._watching.get_all_handlers()
    listed: dict[str, Any] = raw_pod_group("listed", min_member=1)
    gone: dict[str, Any] = raw_pod_group("gone", min_member=1)
    for raw in (listed, gone):
        writer.hold(raw)

    await handler.fn(event={"type": None, "object": listed})
    await handler.fn(event={"type": "MODIFIED", "object": gone})
    await handler.fn(event={"type": "DELETED", "object": gone})
    await handler.fn(event={"type": "MODIFIED", "object": None})
    await keeper.tick()

    assert [name for _, name, _ in writer.patches] == ["listed"]
