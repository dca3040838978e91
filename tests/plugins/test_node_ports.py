"""NodePorts: host-port conflicts (with the 0.0.0.0 wildcard), the PreFilter skip, and the
pod-deleted queueing hint; cases follow upstream's node_ports_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import node_ports
from kopf_scheduler.plugins.node_ports import REASON_PORTS, NodePorts
from tests.builders import PodBuilder, make_node, make_pod, node_info


def _pod(*ports: str, name: str = "p") -> PodBuilder:
    """A pod with host ports given as ``PROTOCOL/IP/PORT``."""
    builder = make_pod(name)
    for spec in ports:
        protocol, ip, port = spec.split("/")
        builder.host_port(int(port), protocol, ip)
    return builder


def _plugin() -> NodePorts:
    return node_ports.new(None, Handle())


CONFLICT = Status(Code.UNSCHEDULABLE, REASON_PORTS)


@pytest.mark.parametrize(
    ("wanted", "existing", "expected"),
    [
        pytest.param(["UDP/127.0.0.1/8080"], [["UDP/127.0.0.1/9090"]], None, id="other-port"),
        pytest.param(["UDP/127.0.0.1/8080"], [["UDP/127.0.0.1/8080"]], CONFLICT, id="same-udp"),
        pytest.param(["TCP/127.0.0.1/8080"], [["TCP/127.0.0.1/8080"]], CONFLICT, id="same-tcp"),
        pytest.param(["TCP/127.0.0.1/8080"], [["TCP/127.0.0.2/8080"]], None, id="different-ip"),
        pytest.param(["UDP/127.0.0.1/8080"], [["TCP/127.0.0.1/8080"]], None, id="diff-protocol"),
        pytest.param(
            ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            [["UDP/127.0.0.1/8080"]],
            CONFLICT,
            id="second-udp-port-conflict",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            [["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"]],
            CONFLICT,
            id="first-tcp-port-conflict",
        ),
        pytest.param(
            ["TCP/0.0.0.0/8001"], [["TCP/127.0.0.1/8001"]], CONFLICT, id="wanted-wildcard-ip"
        ),
        pytest.param(
            ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
            [["TCP/127.0.0.1/8001"]],
            CONFLICT,
            id="tcp-conflict-via-wildcard",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001"], [["TCP/0.0.0.0/8001"]], CONFLICT, id="existing-wildcard-ip"
        ),
        pytest.param(
            ["UDP/127.0.0.1/8001"], [["TCP/0.0.0.0/8001"]], None, id="wildcard-other-protocol"
        ),
        pytest.param(
            ["UDP/127.0.0.1/8001"],
            [["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"]],
            CONFLICT,
            id="udp-conflict-via-wildcard",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001"],
            [["TCP/127.0.0.1/8001"], ["TCP/127.0.0.1/8002"]],
            CONFLICT,
            id="conflict-with-one-of-many-pods",
        ),
    ],
)
def test_filter(wanted: list[str], existing: list[list[str]], expected: Status | None) -> None:
    plugin = _plugin()
    pod = _pod(*wanted).pod()
    node = make_node("m1")
    info = node_info(node, *(_pod(*ports, name=f"e{i}") for i, ports in enumerate(existing)))
    state = CycleState()
    result, pre_status = plugin.pre_filter(state, pod, [info])
    assert result is None
    assert pre_status.is_success()
    status = plugin.filter(state, pod, info)
    if expected is None:
        assert status.is_success()
    else:
        assert status == expected
        assert status.code == Code.UNSCHEDULABLE


def test_pre_filter_skips_pod_without_host_ports() -> None:
    pod = make_pod("p").container(ports=[{"containerPort": 80}]).pod()
    result, status = _plugin().pre_filter(CycleState(), pod, [])
    assert result is None
    assert status.code == Code.SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    status = _plugin().filter(CycleState(), _pod("TCP/0.0.0.0/80").pod(), node_info(make_node("n")))
    assert status.code == Code.ERROR


def test_freed_port_makes_pod_fit() -> None:
    plugin = _plugin()
    holder = _pod("TCP/0.0.0.0/80", name="holder").node("n").pod()
    info = node_info(make_node("n"), holder)
    pod = _pod("TCP/0.0.0.0/80").pod()
    state = CycleState()
    plugin.pre_filter(state, pod, [info])
    assert plugin.filter(state, pod, info) == CONFLICT
    info.remove_pod(holder)
    assert plugin.filter(state.clone(), pod, info).is_success()


def _sidecar_pod(name: str, port: int, sidecar: bool) -> Pod:
    raw = make_pod(name).obj()
    init: dict[str, Any] = {
        "name": "init",
        "image": "init",
        "ports": [{"containerPort": port, "hostPort": port}],
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    raw["spec"]["initContainers"] = [init]
    return Pod(raw)


def test_sidecar_init_container_port_conflicts() -> None:
    plugin = _plugin()
    info = node_info(make_node("n"), _sidecar_pod("existing", 9000, True).assigned_to("n"))
    pod = _sidecar_pod("p", 9000, True)
    state = CycleState()
    _, pre_status = plugin.pre_filter(state, pod, [info])
    assert pre_status.is_success()
    assert plugin.filter(state, pod, info) == CONFLICT
    assert not node_ports.fits(pod, info)


def test_plain_init_container_port_is_ignored() -> None:
    info = node_info(make_node("n"), _sidecar_pod("existing", 9000, False).assigned_to("n"))
    pod = _sidecar_pod("p", 9000, False)
    _, pre_status = _plugin().pre_filter(CycleState(), pod, [info])
    assert pre_status.code == Code.SKIP
    assert node_ports.fits(pod, info)


def _hint() -> Any:
    for registration in _plugin().events_to_register():
        if registration.event.resource is EventResource.POD:
            assert registration.hint is not None
            return registration.hint
    raise AssertionError("no pod event")


WANTS_8080 = make_pod("p").host_port(8080).pod()


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        pytest.param("not-a-pod", QueueingHint.QUEUE, id="wrong-old-object"),
        pytest.param(make_pod("d").host_port(8080).pod(), QueueingHint.QUEUE_SKIP, id="unsched"),
        pytest.param(make_pod("d").node("n").pod(), QueueingHint.QUEUE_SKIP, id="no-host-port"),
        pytest.param(
            make_pod("d").node("n").host_port(8081).pod(),
            QueueingHint.QUEUE_SKIP,
            id="unrelated-host-port",
        ),
        pytest.param(
            make_pod("d").node("n").host_port(8080).pod(), QueueingHint.QUEUE, id="released-port"
        ),
        pytest.param(
            make_pod("d").nominated("n").host_port(8080).pod(),
            QueueingHint.QUEUE,
            id="nominated-pod-released-port",
        ),
        pytest.param(
            make_pod("d").node("n").host_port(8080, "UDP").pod(),
            QueueingHint.QUEUE_SKIP,
            id="other-protocol",
        ),
    ],
)
def test_hint_pod_deleted(deleted: Any, expected: QueueingHint) -> None:
    assert _hint()(WANTS_8080, deleted, None) is expected


def test_events_to_register() -> None:
    events = {r.event.resource: (r.event.action, r.hint) for r in _plugin().events_to_register()}
    assert events[EventResource.POD][0] == ActionType.DELETE
    assert events[EventResource.NODE] == (ActionType.ADD, None)
    assert set(events) == {EventResource.POD, EventResource.NODE}
