"""Preemption against the real API server, disruption controller and graceful deletion.

kwok deletes a terminating pod when its grace period ends, like a kubelet, so the victims of
these scenarios stay visible (terminating, with the DisruptionTarget condition) for their
grace period, and the preemptor must wait for them to be gone before it is bound.

The scenarios that take ``scheduler_name`` hold kube-scheduler v1.34.10's behaviour:
``E2E_SCHEDULER=upstream`` runs them against it (``schedulerName: default-scheduler``), the
default against the project's scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from e2e.support import SCHEDULER_NAME, objects
from e2e.support.env import TestEnv
from e2e.support.kubectl import (
    Kubectl,
    condition,
    events_for,
    is_terminating,
    node_name,
    nominated_node,
    unschedulable_message,
)
from e2e.support.messages import NO_VICTIMS, expected_message
from e2e.support.polling import holds_for, wait_until
from e2e.support.schedulers import Schedulers
from e2e.support.watch import WatchEvent

DISRUPTION_MESSAGE = f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod"


def _on(node: str) -> dict[str, str]:
    return {"kubernetes.io/hostname": node}


def _fill(
    env: TestEnv, node: str, prefix: str, count: int, cpu: str, grace: int, **kw: Any
) -> list[str]:
    """``count`` low-priority pods pinned to ``node``, bound before this returns."""
    names = [f"{prefix}-{index}" for index in range(count)]
    env.create(
        *(
            env.pod(
                name, cpu=cpu, priority_class="e2e-p10", grace=grace, node_selector=_on(node), **kw
            )
            for name in names
        )
    )
    for name in names:
        assert env.wait_bound(name) == node
    return names


def _start_time(env: TestEnv, name: str) -> datetime:
    pod = env.wait_pod(
        name, lambda p: bool((p.get("status") or {}).get("startTime")), timeout=30, what="started"
    )
    return datetime.fromisoformat(pod["status"]["startTime"].replace("Z", "+00:00"))


def _has_disruption_target(event: WatchEvent) -> bool:
    return condition(event.pod, "DisruptionTarget") is not None


def _assert_preempted_by_us(
    env: TestEnv, victim: str, preemptor: Mapping[str, Any], node: str
) -> None:
    marked = env.watch.with_condition(victim, "DisruptionTarget")
    assert marked is not None, f"{victim} never had a DisruptionTarget condition"
    target = condition(marked.pod, "DisruptionTarget")
    assert target is not None
    assert target["status"] == "True"
    assert target["reason"] == "PreemptionByScheduler"
    assert target["message"] == DISRUPTION_MESSAGE
    [event] = env.wait_event(victim, "Preempted")
    assert event["type"] == "Normal"
    assert event["reportingController"] == SCHEDULER_NAME
    uid = preemptor["metadata"]["uid"]
    assert event["note"] == f"Preempted by pod {uid} on node {node}"
    related = event.get("related") or {}
    assert related.get("name") == preemptor["metadata"]["name"], related


def test_preemption_evicts_a_victim_then_binds(env: TestEnv, schedulers: Schedulers) -> None:
    [node] = env.create_nodes(1)
    lows = _fill(env, node, "low", 2, cpu="2", grace=5)
    env.create(env.pod("high", cpu="2", priority_class="e2e-p100"))

    nominated = env.watch.wait_first(
        lambda e: nominated_node(e.pod) == node, name="high", timeout=30, what="high nominated"
    )
    preemptor = nominated.pod
    first_mark = env.watch.wait_first(
        _has_disruption_target, timeout=15, what="a victim marked with DisruptionTarget"
    )
    victim = first_mark.name
    assert victim in lows
    [survivor] = [name for name in lows if name != victim]

    _assert_preempted_by_us(env, victim, preemptor, node)
    assert env.wait_bound("high", timeout=30) == node
    [scheduled] = env.wait_event("high", "Scheduled")
    assert scheduled["note"] == f"Successfully assigned {env.namespace}/high to {node}"

    # Bound only after the victim was gone (watch order is the API server's order), and that
    # took the victim's grace period.
    deleted = env.watch.deleted(victim)
    bound = env.watch.bound("high")
    assert deleted is not None and bound is not None, env.watch.summary()
    assert deleted.index < bound.index, env.watch.summary()
    assert bound.received - first_mark.received >= 3.5, env.watch.summary()
    # One victim was enough: the other low pod was never touched.
    assert env.watch.terminating(survivor) is None
    assert env.watch.with_condition(survivor, "DisruptionTarget") is None
    survivor_pod = env.get_pod(survivor)
    assert survivor_pod is not None and node_name(survivor_pod) == node


def test_preemption_avoids_pdb_protected_victims(
    kube: Kubectl, env: TestEnv, schedulers: Schedulers
) -> None:
    guarded_node, free_node = env.create_nodes(2)
    # The unprotected pods start first. Without the PDB the tie-breaker "victims started
    # latest" would pick the guarded node, so only the PDB criterion steers the choice.
    free = _fill(env, free_node, "free", 2, cpu="2", grace=5, labels={"app": "free"})
    started = [_start_time(env, name) for name in free]
    wait_until(
        lambda: datetime.now(UTC).replace(microsecond=0) > max(started),
        timeout=5,
        what="the next second",
        interval=0.05,
    )
    guarded = _fill(env, guarded_node, "guarded", 2, cpu="2", grace=5, labels={"app": "guarded"})
    assert min(_start_time(env, name) for name in guarded) > max(started)
    for name in guarded:
        env.wait_pod(
            name,
            lambda p: (condition(p, "Ready") or {}).get("status") == "True",
            timeout=30,
            what="Ready",
        )
    env.create(objects.pdb("guarded", env.namespace, 2, {"app": "guarded"}))

    def observed() -> dict[str, Any] | None:
        pdb = kube.get("pdb", "guarded", env.namespace)
        if pdb is None:
            return None
        status = pdb.get("status") or {}
        ok = (
            status.get("observedGeneration") == pdb["metadata"]["generation"]
            and status.get("currentHealthy") == 2
            and status.get("disruptionsAllowed") == 0
        )
        return pdb if ok else None

    wait_until(observed, timeout=30, what="the disruption controller to observe the PDB")

    env.create(env.pod("high", cpu="2", priority_class="e2e-p100"))
    nominated = env.watch.wait_first(
        lambda e: nominated_node(e.pod) is not None, name="high", timeout=30, what="high nominated"
    )
    assert nominated_node(nominated.pod) == free_node, env.watch.summary()
    assert env.wait_bound("high", timeout=30) == free_node
    for name in guarded:
        assert env.watch.terminating(name) is None, f"PDB-protected {name} was preempted"
        assert env.watch.with_condition(name, "DisruptionTarget") is None
    victims = [name for name in free if env.watch.terminating(name) is not None]
    assert len(victims) == 1, env.watch.summary()
    _assert_preempted_by_us(env, victims[0], nominated.pod, free_node)


def test_preemption_policy_never_does_not_preempt(env: TestEnv, schedulers: Schedulers) -> None:
    [node] = env.create_nodes(1)
    lows = _fill(env, node, "low", 2, cpu="2", grace=5)
    env.create(env.pod("polite", cpu="2", priority_class="e2e-p100-never"))

    message = env.wait_unschedulable(
        "polite",
        contains="no new claims to deallocate, preemption: not eligible due to "
        "preemptionPolicy=Never.",
    )
    assert "Insufficient cpu" in message

    def nothing_preempted() -> bool:
        pods = env.pods()
        return (
            all(not is_terminating(pods[name]) for name in lows)
            and all(condition(pods[name], "DisruptionTarget") is None for name in lows)
            and nominated_node(pods["polite"]) is None
            and node_name(pods["polite"]) is None
        )

    assert nothing_preempted(), env.watch.summary()
    assert holds_for(nothing_preempted, seconds=2), env.watch.summary()
    events = env.events()
    assert not [e for e in events if e.get("reason") == "Preempted"]
    assert all(env.watch.terminating(name) is None for name in lows)
    assert events_for(events, "polite", "FailedScheduling")


def test_higher_priority_preemptor_clears_a_lower_nomination(
    env: TestEnv, schedulers: Schedulers
) -> None:
    [node] = env.create_nodes(1)
    lows = _fill(env, node, "low", 2, cpu="2", grace=30)

    env.create(env.pod("mid", cpu="2", priority_class="e2e-p50"))
    env.wait_pod("mid", lambda p: nominated_node(p) == node, timeout=30, what="nominated")
    mid_nominated = env.watch.nominated("mid")
    assert mid_nominated is not None
    mark = env.watch.wait_first(_has_disruption_target, timeout=15, what="mid's victim")
    first_victim = mark.name
    [untouched] = [name for name in lows if name != first_victim]
    assert env.watch.terminating(untouched) is None

    # The whole node: mid's victim is already terminating, the other low pod is not, so this
    # preemption has a fresh victim and takes the node over from mid.
    env.create(env.pod("top", cpu="4", priority_class="e2e-p100"))
    env.wait_pod("top", lambda p: nominated_node(p) == node, timeout=30, what="nominated")
    # Cleared by top's preemption itself, long before the 30 s grace periods end (a retry of
    # mid after the victims are gone would clear it too, but far too late).
    cleared = env.watch.wait_first(
        lambda e: e.index > mid_nominated.index and nominated_node(e.pod) is None,
        name="mid",
        timeout=15,
        what="mid's nomination cleared",
    )
    for name in lows:
        deleted = env.watch.deleted(name)
        assert deleted is None or cleared.index < deleted.index, env.watch.summary()
    top_bound = env.watch.bound("top")
    assert top_bound is None or cleared.index < top_bound.index, env.watch.summary()
    env.watch.wait_first(
        lambda e: is_terminating(e.pod), name=untouched, timeout=15, what="top's victim"
    )
    top = env.get_pod("top")
    assert top is not None
    _assert_preempted_by_us(env, untouched, top, node)

    def mid_stays_cleared() -> bool:
        mid = env.get_pod("mid")
        return mid is not None and nominated_node(mid) is None and node_name(mid) is None

    assert holds_for(mid_stays_cleared, seconds=2), env.watch.summary()


# Scenarios that also run against kube-scheduler v1.34.10 (E2E_SCHEDULER=upstream) -----------


def _fill_started_after(
    env: TestEnv, earlier: list[str], node: str, prefix: str, **kw: Any
) -> list[str]:
    """:func:`_fill`, once the clock is past every start time of ``earlier`` (second precision),
    so that the new pods started strictly later."""
    started = [_start_time(env, name) for name in earlier]
    wait_until(
        lambda: datetime.now(UTC).replace(microsecond=0) > max(started),
        timeout=5,
        what="the next second",
        interval=0.05,
    )
    names = _fill(env, node, prefix, **kw)
    assert min(_start_time(env, name) for name in names) > max(started)
    return names


def _preempted_notes(env: TestEnv, victim: str) -> list[str]:
    return sorted(str(event["note"]) for event in env.pod_events(victim, "Preempted"))


def _assert_victims_of(
    env: TestEnv, victims: list[str], preemptors: list[Mapping[str, Any]], node: str
) -> None:
    """Each victim was preempted by each of ``preemptors``, once, on ``node``."""
    expected = sorted(f"Preempted by pod {p['metadata']['uid']} on node {node}" for p in preemptors)
    for victim in victims:
        wait_until(
            lambda victim=victim: _preempted_notes(env, victim) == expected,
            timeout=15,
            what=f"{victim}'s Preempted events",
            describe=lambda victim=victim: _preempted_notes(env, victim),
        )


def _bound_after_victims(env: TestEnv, name: str, victims: list[str]) -> WatchEvent:
    bound = env.watch.bound(name)
    assert bound is not None, env.watch.summary()
    for victim in victims:
        deleted = env.watch.deleted(victim)
        assert deleted is not None and deleted.index < bound.index, env.watch.summary()
    return bound


def test_burst_of_two_preemptors(env: TestEnv, scheduler_name: str) -> None:
    """Two preemptors of one priority, created together, each need a whole node.

    The first takes the node whose victims started last (the last tie-breaker of candidate
    selection), the second the other one, since the first's nomination holds the first node.
    The first node's victims go quickly: their deletion requeues both preemptors, which pop by
    priority, and the second, whose own victims still terminate on its nominated node, is told
    so. Both end on their nominated nodes once their victims are gone.
    """
    early_node, late_node = env.create_nodes(2)
    early = _fill(env, early_node, "early", 2, cpu="2", grace=10, scheduler=scheduler_name)
    late = _fill_started_after(
        env, early, late_node, "late", count=2, cpu="2", grace=2, scheduler=scheduler_name
    )
    env.create(
        *(
            env.pod(name, cpu="4", priority_class="e2e-p100", scheduler=scheduler_name)
            for name in ("first", "second")
        )
    )

    first = env.watch.wait_first(
        lambda e: nominated_node(e.pod) is not None, name="first", timeout=30, what="nominated"
    )
    second = env.watch.wait_first(
        lambda e: nominated_node(e.pod) is not None, name="second", timeout=30, what="nominated"
    )
    assert nominated_node(first.pod) == late_node, env.watch.summary()
    assert nominated_node(second.pod) == early_node, env.watch.summary()

    assert env.wait_bound("first", timeout=30) == late_node
    assert env.wait_bound("second", timeout=30) == early_node
    first_bound = _bound_after_victims(env, "first", late)
    second_bound = _bound_after_victims(env, "second", early)
    assert first_bound.index < second_bound.index, env.watch.summary()
    _assert_victims_of(env, late, [first.pod], late_node)
    _assert_victims_of(env, early, [second.pod], early_node)
    waiting = [
        event
        for event in env.pod_events("second", "FailedScheduling")
        if str(event["note"]).endswith(
            "preemption: not eligible due to a terminating pod on the nominated node."
        )
    ]
    assert waiting, env.pod_events("second")


def test_takeover_preempts_terminating_victims_again(
    kube: Kubectl, env: TestEnv, scheduler_name: str
) -> None:
    """A higher preemptor whose victims are all terminating already preempts them again.

    ``mid`` preempts the whole node; while its victims terminate, ``top`` wants the same node.
    Its victims are the same two pods: they are deleted again and get a second Preempted event,
    and ``mid``, nominated to the node with a lower priority, loses its nomination right away
    and learns that the node is taken (``top``'s nomination counts against it). Once the victims
    are gone, ``top`` is bound and ``mid`` finds nothing it may preempt.
    """
    [node] = env.create_nodes(1)
    lows = _fill(env, node, "low", 2, cpu="2", grace=15, scheduler=scheduler_name)
    mid_manifest = env.pod("mid", cpu="4", priority_class="e2e-p50", scheduler=scheduler_name)
    env.create(mid_manifest)
    mid = env.wait_pod("mid", lambda p: nominated_node(p) == node, timeout=30, what="nominated")
    for name in lows:
        env.watch.wait_first(
            lambda e: is_terminating(e.pod), name=name, timeout=15, what=f"{name} terminating"
        )
    env.create(env.pod("top", cpu="4", priority_class="e2e-p100", scheduler=scheduler_name))
    top = env.wait_pod("top", lambda p: nominated_node(p) == node, timeout=30, what="nominated")
    _assert_victims_of(env, lows, [mid, top], node)

    taken = expected_message(
        kube.nodes(), mid_manifest, {node: "Insufficient cpu"}, {node: "Insufficient cpu"}
    )
    told = env.watch.wait_first(
        lambda e: nominated_node(e.pod) is None and unschedulable_message(e.pod) == taken,
        name="mid",
        timeout=15,
        what="mid's nomination cleared, and told the node is taken",
    )
    for name in lows:
        deleted = env.watch.deleted(name)
        assert deleted is None or told.index < deleted.index, env.watch.summary()

    assert env.wait_bound("top", timeout=30) == node
    _bound_after_victims(env, "top", lows)
    no_victims = expected_message(
        kube.nodes(), mid_manifest, {node: "Insufficient cpu"}, {node: NO_VICTIMS}
    )
    env.wait_pod(
        "mid",
        lambda p: unschedulable_message(p) == no_victims and nominated_node(p) is None,
        timeout=15,
        what="no victims left for mid",
    )
