"""Operating the scheduler: leader fail-over and a restart in the middle of work.

Two replicas campaign for the Lease; killing the leader without a chance to release it must
hand the work to the other one within the lease duration plus a retry, and no pod may be lost
or bound twice. A graceful restart while pods are queued and a preemption is in flight must
rebuild everything from a fresh LIST: every pod ends bound or visibly unschedulable.
"""

from __future__ import annotations

import time

from e2e.support import SCHEDULER_NAME
from e2e.support.env import TestEnv
from e2e.support.kubectl import (
    condition,
    events_for,
    is_terminating,
    node_name,
    nominated_node,
    occurrences,
    unschedulable_message,
)
from e2e.support.polling import wait_until
from e2e.support.schedulers import Schedulers

FAILOVER_LIMIT = 30.0  # leaseDuration 15 s + retryPeriod 2 s, with room for a slow machine


def _pods(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{index}" for index in range(count)]


def test_leader_failover_binds_every_pod_exactly_once(env: TestEnv, schedulers: Schedulers) -> None:
    [node] = env.create_nodes(1)
    identities = schedulers.start_replicas(2)
    assert len(identities) >= 2

    before = _pods("before", 4)
    env.create(*(env.pod(name) for name in before))
    for name in before:
        assert env.wait_bound(name) == node

    # Created right before the kill: the leader may be half-way through binding them.
    racing = _pods("racing", 4)
    env.create(*(env.pod(name) for name in racing))
    killed_at = time.monotonic()
    old = schedulers.kill_leader()
    during = _pods("during", 4)
    env.create(*(env.pod(name) for name in during))
    new = schedulers.wait_leader(other_than=old, timeout=FAILOVER_LIMIT + 10)
    took_over_after = time.monotonic() - killed_at
    assert new != old
    assert took_over_after < FAILOVER_LIMIT, f"fail-over took {took_over_after:.1f}s"
    print(f"fail-over from {old} to {new} took {took_over_after:.1f}s")

    after = _pods("after", 4)
    env.create(*(env.pod(name) for name in after))
    everyone = before + racing + during + after
    for name in everyone:
        assert env.wait_bound(name, timeout=30) == node

    # Events are posted asynchronously, as kube-scheduler's are: a pod the killed leader bound in
    # its last moments may never get its Scheduled event. Every pod bound after the takeover must
    # have exactly one, and no pod may have two (that would be a second binding).
    lossy = set(racing)

    def scheduled_counts() -> dict[str, int]:
        events = env.events()
        return {name: len(events_for(events, name, "Scheduled")) for name in everyone}

    def settled() -> bool:
        counts = scheduled_counts()
        return all(counts[n] == 1 or (n in lossy and counts[n] == 0) for n in everyone)

    wait_until(
        settled,
        timeout=15,
        what="one Scheduled event per pod (at most one for pods bound at the kill)",
        describe=scheduled_counts,
    )
    events = env.events()
    for name in everyone:
        assert env.watch.ever_bound_to(name) == {node}
        assert not events_for(events, name, "FailedScheduling"), events_for(events, name)
        found = events_for(events, name, "Scheduled")
        if not found and name in lossy:
            continue
        [scheduled] = found
        assert occurrences(scheduled) == 1, scheduled
        assert scheduled["reportingController"] == SCHEDULER_NAME
        assert scheduled["note"] == f"Successfully assigned {env.namespace}/{name} to {node}"


def test_restart_mid_queue_leaves_no_pod_behind(env: TestEnv, schedulers: Schedulers) -> None:
    busy, full, small = env.create_nodes(2) + env.create_nodes(1, cpu="1")
    # busy: two low-priority pods with a 10 s grace period; full: one pod of the preemptor's own
    # priority (not a victim); small: room only for small pods.
    lows = _pods("low", 2)
    env.create(
        *(
            env.pod(name, cpu="2", priority_class="e2e-p10", grace=10, node_selector=_on(busy))
            for name in lows
        ),
        env.pod("peer", cpu="4", priority_class="e2e-p100", node_selector=_on(full)),
    )
    for name in [*lows, "peer"]:
        env.wait_bound(name)

    env.create(env.pod("high", cpu="2", priority_class="e2e-p100"))
    env.wait_pod("high", lambda p: nominated_node(p) == busy, timeout=30, what="nominated")
    env.watch.wait_first(lambda e: is_terminating(e.pod), timeout=15, what="a victim terminating")

    # Work queued right before the restart: pods that fit on the small node, and pods that
    # fit nowhere and may not preempt.
    fits = _pods("fits", 4)
    stuck = _pods("stuck", 2)
    env.create(
        *(env.pod(name, cpu="100m") for name in fits),
        *(env.pod(name, cpu="1500m", priority_class="e2e-p10-never") for name in stuck),
    )
    schedulers.restart()

    assert env.wait_bound("high", timeout=45) == busy
    for name in fits:
        assert env.wait_bound(name, timeout=30) == small
    for name in stuck:
        message = env.wait_unschedulable(name, timeout=30)
        assert message.startswith("0/") and "Insufficient cpu" in message, message

    def settled() -> bool:
        for pod in env.pods().values():
            if is_terminating(pod):
                continue
            if node_name(pod):
                continue
            if not unschedulable_message(pod):
                return False
        return True

    wait_until(settled, timeout=30, what="every pod bound or PodScheduled=False with a message")
    pods = env.pods()
    victims = [name for name in lows if env.watch.terminating(name) is not None]
    assert len(victims) == 1, env.watch.summary()
    for name, pod in pods.items():
        assert len(env.watch.ever_bound_to(name)) <= 1, name
        if not node_name(pod):
            scheduled = condition(pod, "PodScheduled")
            assert scheduled is not None and scheduled["status"] == "False", (name, scheduled)
            assert scheduled.get("message"), (name, scheduled)


def _on(node: str) -> dict[str, str]:
    return {"kubernetes.io/hostname": node}
