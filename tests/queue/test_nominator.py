"""The nominator on its own, and the nominations the queue keeps while pods move."""

from __future__ import annotations

import pytest

from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.types import NominatingInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.nominator import Nominator, PodRef
from tests.builders import make_pod
from tests.queue.fakes import make_queue


def _pod(name: str, nominated: str = "", uid: str | None = None, node: str = "") -> Pod:
    builder = make_pod(name).uid(uid or f"uid-{name}")
    if nominated:
        builder = builder.nominated(nominated)
    if node:
        builder = builder.node(node)
    return builder.pod()


def _nominations(nominator: Nominator) -> dict[str, list[str]]:
    return {node: [ref.name for ref in refs] for node, refs in nominator.nominations().items()}


@pytest.mark.parametrize(
    ("status_node", "info", "expected"),
    [
        pytest.param("n1", None, {"n1": ["p"]}, id="nil-info-uses-pod-status"),
        pytest.param("n1", NominatingInfo(), {"n1": ["p"]}, id="noop-uses-pod-status"),
        pytest.param("n1", NominatingInfo.override("n2"), {"n2": ["p"]}, id="override-wins"),
        pytest.param("n1", NominatingInfo.clear(), {}, id="override-empty-clears"),
        pytest.param("", None, {}, id="no-nomination-anywhere"),
        pytest.param(
            "", NominatingInfo.override("n3"), {"n3": ["p"]}, id="override-without-status"
        ),
    ],
)
def test_add_nominated_pod(
    status_node: str, info: NominatingInfo | None, expected: dict[str, list[str]]
) -> None:
    nominator = Nominator()
    nominator.add_nominated_pod(_pod("p", status_node), info)
    assert _nominations(nominator) == expected


def test_add_replaces_previous_nomination() -> None:
    nominator = Nominator()
    pod = _pod("p")
    nominator.add_nominated_pod(pod, NominatingInfo.override("n1"))
    nominator.add_nominated_pod(pod, NominatingInfo.override("n2"))
    nominator.add_nominated_pod(pod, NominatingInfo.override("n2"))
    assert _nominations(nominator) == {"n2": ["p"]}
    assert nominator.nominated_node(pod.uid) == "n2"


@pytest.mark.parametrize(
    ("watch", "expected"),
    [
        pytest.param({"default/p": _pod("p")}, {"n1": ["p"]}, id="pod-exists"),
        pytest.param({}, {}, id="pod-gone-from-watch-cache"),
        pytest.param({"default/p": _pod("p", node="n9")}, {}, id="pod-already-bound"),
    ],
)
def test_lister_check(watch: dict[str, Pod], expected: dict[str, list[str]]) -> None:
    nominator = Nominator(get_pod=watch.get)
    nominator.add_nominated_pod(_pod("p"), NominatingInfo.override("n1"))
    assert _nominations(nominator) == expected


@pytest.mark.parametrize(
    ("remembered", "old_status", "new_status", "expected"),
    [
        pytest.param("n1", "", "", {"n1": ["p"]}, id="race-keeps-in-memory-nomination"),
        pytest.param("n1", "", "n2", {"n2": ["p"]}, id="nomination-added-by-api"),
        pytest.param("n1", "n1", "n2", {"n2": ["p"]}, id="nomination-changed"),
        pytest.param("n1", "n1", "", {}, id="nomination-removed"),
        pytest.param(None, "", "", {}, id="nothing-to-keep"),
    ],
)
def test_update_nominated_pod(
    remembered: str | None, old_status: str, new_status: str, expected: dict[str, list[str]]
) -> None:
    nominator = Nominator()
    old = _pod("p", old_status)
    if remembered is not None:
        nominator.add_nominated_pod(old, NominatingInfo.override(remembered))
    nominator.update_nominated_pod(old, _pod("p", new_status))
    assert _nominations(nominator) == expected


def test_delete_nominated_pod() -> None:
    nominator = Nominator()
    a, b = _pod("a", "n1"), _pod("b", "n1")
    nominator.add_nominated_pod(a, None)
    nominator.add_nominated_pod(b, None)
    nominator.delete_nominated_pod_if_exists(a)
    assert _nominations(nominator) == {"n1": ["b"]}
    nominator.delete_nominated_pod_if_exists(b)
    nominator.delete_nominated_pod_if_exists(b)
    assert _nominations(nominator) == {}
    assert nominator.nominated_node(b.uid) is None


def test_nominated_pods_for_node_uses_lookup_or_stub() -> None:
    current = make_pod("a").uid("uid-a").priority(7).req(cpu="1").pod()
    nominator = Nominator(lookup={"default/a": current}.get)
    nominator.add_nominated_pod(_pod("a"), NominatingInfo.override("n1"))
    nominator.add_nominated_pod(_pod("b"), NominatingInfo.override("n1"))
    pods = nominator.nominated_pods_for_node("n1")
    assert pods[0] is current
    stub = pods[1]
    assert (stub.name, stub.namespace, stub.uid, stub.priority) == ("b", "default", "uid-b", 0)
    assert stub.requests.is_zero()
    assert nominator.nominated_pods_for_node("other") == []
    assert PodRef("b", "default", "uid-b").key == "default/b"


# Through the queue ----------------------------------------------------------------------------

HIGH = make_pod("hpp", "ns1").uid("hppns1").priority(1000).pod()
HIGH_NOMINATED = make_pod("hpp", "ns1").uid("hppns1").priority(1000).nominated("node1").pod()
MEDIUM = make_pod("mpp", "ns2").uid("mppns2").priority(500).nominated("node1").pod()
LOW = make_pod("up", "ns1").uid("upns1").priority(0).nominated("node1").pod()


def test_add_registers_nominations_from_pod_status() -> None:
    """Upstream TestPriorityQueue_Add."""
    h = make_queue(watch=[MEDIUM, LOW, HIGH])
    for pod in (MEDIUM, LOW, HIGH):
        h.queue.add(pod)
    assert _nominations(h.queue.nominator) == {"node1": ["mpp", "up"]}
    for expected in (HIGH, MEDIUM, LOW):
        h.pop(expected)
    assert _nominations(h.queue.nominator) == {"node1": ["mpp", "up"]}


def test_nominated_pods_for_node_returns_queued_objects() -> None:
    """Upstream TestPriorityQueue_NominatedPodsForNode: queued pods, in-flight ones as stubs."""
    h = make_queue()
    for pod in (MEDIUM, LOW, HIGH):
        h.queue.add(pod)
    h.pop(HIGH)
    assert h.queue.nominated_pods_for_node("node1") == [MEDIUM, LOW]
    popped = h.pop(MEDIUM)
    stub, low = h.queue.nominated_pods_for_node("node1")
    assert stub is not MEDIUM
    assert (stub.uid, stub.priority) == (MEDIUM.uid, 0)
    assert low is LOW
    h.fail(popped, "plugin")
    assert h.queue.nominated_pods_for_node("node1")[0] is MEDIUM


def test_update_adds_and_keeps_nomination() -> None:
    h = make_queue()
    h.queue.update(HIGH, HIGH_NOMINATED)
    assert h.where(HIGH) == "active"
    assert _nominations(h.queue.nominator) == {"node1": ["hpp"]}
    # A later update without a nomination on either side keeps the in-memory one.
    h.queue.update(HIGH, HIGH)
    assert _nominations(h.queue.nominator) == {"node1": ["hpp"]}


def test_delete_forgets_nomination() -> None:
    """Upstream TestPriorityQueue_Delete."""
    h = make_queue()
    h.queue.update(HIGH, HIGH_NOMINATED)
    h.queue.add(LOW)
    h.queue.delete(HIGH_NOMINATED)
    assert h.where(LOW) == "active"
    assert h.where(HIGH) is None
    assert _nominations(h.queue.nominator) == {"node1": ["up"]}
    h.queue.delete(LOW)
    assert _nominations(h.queue.nominator) == {}


def test_failure_handler_nomination_checks_watch_cache() -> None:
    h = make_queue(watch=[HIGH])
    h.queue.add_nominated_pod(HIGH, NominatingInfo.override("node2"))
    h.queue.add_nominated_pod(LOW, NominatingInfo.override("node2"))  # not in the watch cache
    assert _nominations(h.queue.nominator) == {"node2": ["hpp"]}
    h.queue.delete_nominated_pod_if_exists(HIGH)
    assert h.queue.nominated_pods_for_node("node2") == []


def test_queue_serves_as_the_plugins_nominator() -> None:
    h = make_queue()
    handle = Handle(nominator=h.queue)
    h.queue.add(MEDIUM)
    assert handle.nominator.nominated_pods_for_node("node1") == [MEDIUM]
    handle.nominator.add_nominated_pod(HIGH, NominatingInfo.override("node1"))
    assert handle.nominator.nominated_pods_for_node("node1")[1].uid == HIGH.uid
    handle.nominator.delete_nominated_pod_if_exists(MEDIUM)
    assert [pod.uid for pod in handle.nominator.nominated_pods_for_node("node1")] == [HIGH.uid]
