"""Binding, leaving other schedulers' pods alone, unschedulable pods, and queue order.

What an admin checks first on a second scheduler: its pods get bound with a ``Scheduled`` event
from it, everybody else's pods are untouched, a pod that cannot fit says why in exactly the
words kube-scheduler uses, and higher-priority pods are served first.

A malformed pod (say, an unparsable quantity) cannot be created through the API server, which
validates quantities, so that case is covered by the unit tests only.
"""

from __future__ import annotations

from e2e.support import SCHEDULER_NAME
from e2e.support.clusters import Cluster
from e2e.support.env import TestEnv
from e2e.support.kubectl import (
    Kubectl,
    condition,
    events_for,
    node_name,
    occurrences,
    unschedulable_message,
)
from e2e.support.messages import expected_unresolvable_message
from e2e.support.polling import holds_for, wait_until
from e2e.support.schedulers import Schedulers


def test_binds_pods_and_records_scheduled_events(env: TestEnv, schedulers: Schedulers) -> None:
    [node] = env.create_nodes(1)
    names = ["web-0", "web-1", "web-2"]
    env.create(*(env.pod(name, cpu="500m", memory="256Mi") for name in names))

    for name in names:
        assert env.wait_bound(name) == node
        [event] = env.wait_event(name, "Scheduled")
        assert event["type"] == "Normal"
        assert event["action"] == "Binding"
        assert event["reportingController"] == SCHEDULER_NAME
        assert event["note"] == f"Successfully assigned {env.namespace}/{name} to {node}"
        assert occurrences(event) == 1
        pod = env.get_pod(name)
        assert pod is not None
        scheduled = condition(pod, "PodScheduled")
        assert scheduled is not None and scheduled["status"] == "True", scheduled


def test_leaves_pods_of_other_schedulers_alone(
    cluster: Cluster, env: TestEnv, schedulers: Schedulers
) -> None:
    [node] = env.create_nodes(1)
    others = {"unserved": "e2e-no-such-scheduler"}
    if not cluster.serves_default_scheduler():
        others["default"] = "default-scheduler"
    # Created before our own pod: once ours is bound, the scheduler has seen these as well.
    env.create(*(env.pod(f"other-{key}", scheduler=name) for key, name in others.items()))
    env.create(env.pod("ours"))
    assert env.wait_bound("ours") == node
    env.wait_event("ours", "Scheduled")

    def untouched() -> bool:
        pods = env.pods()
        events = env.events()
        for key in others:
            pod = pods[f"other-{key}"]
            if node_name(pod) or (pod.get("status") or {}).get("conditions"):
                return False
            if (pod.get("status") or {}).get("nominatedNodeName"):
                return False
            mine = [
                e
                for e in events_for(events, f"other-{key}")
                if e.get("reportingController") == SCHEDULER_NAME
            ]
            if mine:
                return False
        return True

    assert untouched(), env.watch.summary()
    # And they stay untouched while the scheduler keeps running.
    assert holds_for(untouched, seconds=3), env.watch.summary()


def test_unschedulable_pod_gets_the_upstream_message(
    kube: Kubectl, env: TestEnv, schedulers: Schedulers
) -> None:
    env.create_nodes(1)
    manifest = env.pod("too-big", cpu="5")
    env.create(manifest)

    def message_as_expected() -> tuple[str, str] | None:
        pod = env.get_pod("too-big")
        message = unschedulable_message(pod) if pod else None
        if message is None:
            return None
        expected = expected_unresolvable_message(kube.nodes(), manifest)
        return (message, expected) if message == expected else None

    last: list[object] = []

    def describe() -> object:
        pod = env.get_pod("too-big")
        actual = unschedulable_message(pod) if pod else None
        last[:] = [actual, expected_unresolvable_message(kube.nodes(), manifest)]
        return {"actual": last[0], "expected": last[1]}

    message, _ = wait_until(
        message_as_expected,
        timeout=30,
        what="the exact FailedScheduling message",
        describe=describe,
    )
    pod = env.get_pod("too-big")
    assert pod is not None
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None
    assert scheduled["reason"] == "Unschedulable"
    assert node_name(pod) is None
    assert " Insufficient cpu" in message
    assert message.endswith("Preemption is not helpful for scheduling.")

    [event, *_] = env.wait_event("too-big", "FailedScheduling")
    assert event["type"] == "Warning"
    assert event["action"] == "Scheduling"
    assert event["reportingController"] == SCHEDULER_NAME
    assert event["note"].startswith("0/") and " Insufficient cpu" in event["note"]


def test_higher_priority_pod_is_scheduled_first(env: TestEnv, schedulers: Schedulers) -> None:
    [node] = env.create_nodes(1)
    schedulers.stop_all()
    # One slot (3 of 4 CPUs), two candidates that may not preempt. The low one is older, so a
    # FIFO queue would give it the slot.
    env.create(env.pod("low", cpu="3", priority_class="e2e-p10-never"))
    env.wait_pod("low", lambda p: True, timeout=10, what="created")
    env.create(env.pod("high", cpu="3", priority_class="e2e-p100-never"))
    schedulers.start_all()

    assert env.wait_bound("high") == node
    message = env.wait_unschedulable("low", contains="Insufficient cpu")
    assert (
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
        in message
    )
    low = env.get_pod("low")
    assert low is not None and node_name(low) is None
    assert env.watch.ever_bound_to("low") == set()
