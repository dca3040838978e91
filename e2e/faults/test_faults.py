"""The scheduler through the faults real clusters have, each in the middle of a burst of pods.

Every scenario ends in :meth:`Scenario.finish`: each pod bound exactly once or visibly
unschedulable, none lost, none on a node that cannot hold it, victims only where a preemption
was decided (:mod:`e2e.faults.invariants`), with the figures written to the results file.
Pods request 250m CPU on 2-CPU nodes, so eight fit on a node and a burst larger than the nodes
leaves some pods Pending with ``FailedScheduling``: the unschedulable path is under fault too.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta

import pytest

from e2e.localcluster import LocalCluster
from e2e.support.env import TestEnv
from e2e.support.faultproxy import Faults
from e2e.support.kubectl import is_terminating, node_name, nominated_node
from e2e.support.polling import wait_until
from e2e.support.schedulers import LocalSchedulers, Schedulers
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS

from .conftest import Proxied
from .harness import Burst, Scenario, compact_etcd
from .results import Results

pytestmark = pytest.mark.faults

NODE_CPU = "2"
POD_CPU = "250m"
PER_NODE = 8  # 2 CPU / 250m
RENEW_DEADLINE = 10.0  # the pool's leaderElection.renewDeadline
ETCD_STALL = 20.0
PAUSE = 8.0  # below renewDeadline: the paused leader keeps its Lease and resumes as leader
OUTAGE_AT_SYNC = 70.0
"""Over a minute: by default kopf gives a request up after about that long, which at its start
ended the whole operator."""


def _burst(local: LocalCluster, env: TestEnv, prefix: str, count: int, rate: float) -> Burst:
    pods = [env.pod(f"{prefix}-{index}", cpu=POD_CPU) for index in range(count)]
    return Burst(local, pods, rate).start()


def _delete_now(env: TestEnv, *names: str) -> None:
    env.kubectl.run(
        "delete", "pods", *names, "-n", env.namespace, "--grace-period=0", "--force", "--wait=false"
    )


def test_apiserver_sigkill_and_restart(
    env: TestEnv,
    schedulers: Schedulers,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    scenario = Scenario.begin("kube-apiserver SIGKILL, restarted", env, scheduler_pool, results)
    env.create_nodes(3, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 36, rate=4)
    burst.wait_created(12)
    down = local.restart_apiserver()
    fault_end = time.monotonic()
    burst.join()
    scenario.notes.append(f"API server back after {down:.1f} s; burst retried {burst.retries}x")
    scenario.finish(fault_end, expected_bound=3 * PER_NODE)


def test_etcd_stalled(
    env: TestEnv,
    schedulers: Schedulers,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """Longer than renewDeadline: the leader cannot renew its Lease, exits as kube-scheduler
    does (code 1), and the other replica takes over once etcd answers again."""
    scheduler_pool.start_replicas(2)
    leader = scheduler_pool.by_identity(scheduler_pool.wait_leader())
    assert leader is not None
    scenario = Scenario.begin(f"etcd SIGSTOP {ETCD_STALL:.0f} s", env, scheduler_pool, results)
    env.create_nodes(3, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 36, rate=4)
    burst.wait_created(12)
    local.signal("etcd", signal.SIGSTOP)
    try:
        time.sleep(ETCD_STALL)
    finally:
        local.signal("etcd", signal.SIGCONT)
    fault_end = time.monotonic()
    burst.join()
    scenario.notes.append(f"burst retried {burst.retries}x")
    if not leader.alive():
        assert leader.popen.returncode == 1, leader.popen.returncode
        scheduler_pool.kill(leader)
        scenario.notes.append("the leader exited (Lease not renewed), the other took over")
    scheduler_pool.wait_leader(timeout=60)
    scenario.finish(fault_end, expected_bound=3 * PER_NODE)


def test_watch_expiry_forces_a_relist(
    env: TestEnv,
    schedulers: Schedulers,
    proxied: Proxied,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """The scheduler's watches are cut and held while pods and nodes change and etcd is
    compacted: they can only resume with a 410 and a relist, which must show the new node and
    the freed room."""
    proxied.start("faults-expiry")
    scheduler_pool.wait_leader()
    scenario = Scenario.begin("watch expiry (410, relist)", env, scheduler_pool, results)
    env.create_nodes(3, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 36, rate=4)
    burst.wait_created(20)
    proxied.proxy.partition()
    try:
        bound = sorted(n for n, p in env.pods().items() if node_name(p))[:6]
        _delete_now(env, *bound)
        scenario.deleted_by_test.update(bound)
        env.create_nodes(1, cpu=NODE_CPU)
        burst.wait_created(30)
        revision = compact_etcd(local)
    finally:
        proxied.proxy.heal()
    fault_end = time.monotonic()
    burst.join()
    wait_until(lambda: proxied.proxy.stats["gone"], timeout=30, what="a 410 to a resumed watch")
    scenario.notes.append(
        f"etcd compacted at revision {revision}; 410s seen {proxied.proxy.stats['gone']}"
    )
    scenario.finish(fault_end, expected_bound=36 - len(bound))


PHASES = (
    ("503", Faults(error_rate=0.3, error_status=503)),
    ("500 + 429", Faults(error_rate=0.2, error_status=500, throttle_rate=0.3, retry_after=1)),
    ("resets", Faults(reset_rate=0.2, reset_after_rate=0.1, watch_reset_rate=0.1)),
    ("2 s latency", Faults(latency=2.0)),
)
PHASE_SECONDS = 6.0


def test_api_errors_and_latency(
    env: TestEnv,
    schedulers: Schedulers,
    proxied: Proxied,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    proxied.start("faults-errors")
    scheduler_pool.wait_leader()
    scenario = Scenario.begin("API 5xx, 429, resets, 2 s latency", env, scheduler_pool, results)
    env.create_nodes(4, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 40, rate=2)
    burst.wait_created(4)
    for _, faults in PHASES:
        with proxied.proxy.injecting(faults):
            time.sleep(PHASE_SECONDS)
    fault_end = time.monotonic()
    burst.join()
    stats = proxied.proxy.stats.snapshot()
    for kind in ("status_503", "status_500", "status_429", "reset_before", "delayed"):
        assert stats.get(kind), (kind, stats)
    shown = ("status_503", "status_500", "status_429", "reset_before", "reset_after", "delayed")
    scenario.notes.append(", ".join(f"{k} {stats.get(k, 0)}" for k in shown))
    scenario.finish(fault_end, expected_bound=4 * PER_NODE)


def _bound_lines_after(text: str, moment: datetime) -> list[str]:
    """``pod_bound`` lines of a console log stamped after ``moment`` (UTC)."""
    late = []
    for line in text.splitlines():
        if "pod_bound" not in line:
            continue
        stamp = datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))
        if stamp > moment:
            late.append(line)
    return late


def test_leader_partition(
    env: TestEnv,
    schedulers: Schedulers,
    proxied: Proxied,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """The leader loses the API server; it must stop binding within renewDeadline, before its
    Lease can expire, and the follower (direct) takes over; no pod is bound by both."""
    cut_off = proxied.start("faults-partitioned")
    assert scheduler_pool.wait_leader() == cut_off.identity
    follower = scheduler_pool.start("faults-follower")
    scenario = Scenario.begin("leader partition", env, scheduler_pool, results)
    env.create_nodes(3, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 36, rate=3)
    burst.wait_created(10)
    partitioned_at = datetime.now(UTC)
    started = time.monotonic()
    proxied.proxy.partition()

    def stepped_down() -> bool:
        body = cut_off.readyz()
        return not cut_off.alive() or not (body and body.get("leader"))

    wait_until(stepped_down, timeout=RENEW_DEADLINE + 5, what="the cut-off leader to step down")
    stepped_down_after = time.monotonic() - started
    new = scheduler_pool.wait_leader(other_than=cut_off.identity, timeout=45)
    assert new == follower.identity
    took_over_after = time.monotonic() - started
    assert stepped_down_after < took_over_after
    burst.join()
    proxied.proxy.heal()
    fault_end = time.monotonic()
    late = _bound_lines_after(
        cut_off.log_since_mark(), partitioned_at + timedelta(seconds=RENEW_DEADLINE)
    )
    assert not late, late
    scenario.notes.append(
        f"old leader stepped down after {stepped_down_after:.1f} s, "
        f"follower took over after {took_over_after:.1f} s"
    )
    scenario.finish(fault_end, expected_bound=3 * PER_NODE)
    # Like kube-scheduler, a replica that lost its Lease exits (code 1) to start clean. Its
    # shutdown may still be waiting on the unreachable API server for its bounded grace here.
    assert cut_off.popen.wait(timeout=60) == 1, cut_off.popen.returncode
    scheduler_pool.kill(cut_off)


def test_api_gone_for_a_minute_as_the_caches_sync(
    env: TestEnv, proxied: Proxied, scheduler_pool: LocalSchedulers
) -> None:
    """The API server goes away (every connection reset) the moment the initial LISTs are all
    answered, before kopf's discovery, the watches and the first Lease request: the replica must
    ride the minute out (not exit), then lead and bind."""
    listed = [("GET", kind.path) for kind in WATCHED_KINDS if not kind.plugin]
    proxied.proxy.partition_after_all(listed, hold=False)
    replica = proxied.start("faults-gone-at-sync")  # returns once its /readyz says synced
    assert proxied.proxy.partitioned
    back = time.monotonic() + OUTAGE_AT_SYNC
    while time.monotonic() < back:
        assert replica.alive(), (
            f"exited with {replica.popen.returncode} during the outage:\n"
            + replica.log_since_mark()[-4000:]
        )
        time.sleep(1)
    proxied.proxy.heal()
    assert replica.alive(), replica.log_since_mark()[-4000:]
    assert scheduler_pool.wait_leader(timeout=90) == replica.identity
    env.create_nodes(1, cpu=NODE_CPU)
    env.create(env.pod("after-the-outage", cpu=POD_CPU))
    env.wait_bound("after-the-outage", timeout=60)
    assert replica.alive()
    log = replica.log_since_mark()
    assert "Traceback" not in log
    assert proxied.proxy.stats["refused"] > 0


CUT_KINDS = frozenset(
    {
        "discovery",
        "list pods",
        "list nodes",
        "list poddisruptionbudgets",
        "watch pods",
        "watch nodes",
        "watch poddisruptionbudgets",
        "update leases",
        "create pods/binding",
        "patch pods/status",
        "create events",
        "delete pods",
    }
)
"""The kinds of request that must have had a reply cut off mid-body: kopf's discovery, lists
and watches, the scheduler's own lists and watches, the Lease, and every write of a preemption."""


def test_replies_cut_off_mid_body(
    env: TestEnv,
    proxied: Proxied,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """The first reply of every kind of request is cut off mid-body (headers and half the body,
    then a reset, as when the API server stops while answering), from the replica's start on:
    it must not exit, and must preempt, bind and report as usual."""
    proxied.proxy.faults = Faults(cut_each_kind_once=True)
    replica = proxied.start("faults-cut-replies")
    assert scheduler_pool.wait_leader() == replica.identity
    scenario = Scenario.begin("replies cut off mid-body", env, scheduler_pool, results)
    scenario.preemption_expected = True
    target, _ = env.create_nodes(2, cpu=NODE_CPU)
    on_target = {"kubernetes.io/hostname": target}
    env.create(env.pod("low", cpu="2", priority_class="e2e-p10", node_selector=on_target))
    env.wait_bound("low")
    burst = _burst(local, env, "p", PER_NODE + 4, rate=4)
    burst.wait_created(3)
    env.create(env.pod("high", cpu="1", priority_class="e2e-p100", node_selector=on_target))
    fault_end = time.monotonic()
    burst.join()
    assert env.wait_bound("high", timeout=60) == target
    cut = {key.removeprefix("cut ") for key in proxied.proxy.stats.snapshot() if key[:4] == "cut "}
    assert cut >= CUT_KINDS, sorted(CUT_KINDS - cut)
    assert replica.alive(), replica.log_since_mark()[-4000:]
    assert "Traceback" not in replica.log_since_mark()
    scenario.notes.append(f"{len(cut)} kinds of request cut once each")
    # The victim's 2 CPU go to the preemptor and four of the burst; the other node takes eight.
    verdict = scenario.finish(fault_end, expected_bound=1 + PER_NODE + 4)
    assert verdict.victims == 1


def test_leader_sigkill_mid_preemption(
    env: TestEnv,
    schedulers: Schedulers,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """Victims terminating, the preemptor nominated, not yet bound: the leader is killed and
    the new leader completes the preemption without choosing another victim."""
    scheduler_pool.start_replicas(2)
    scenario = Scenario.begin("leader SIGKILL mid-preemption", env, scheduler_pool, results)
    scenario.preemption_expected = True
    target, other = env.create_nodes(2, cpu=NODE_CPU)
    on_target = {"kubernetes.io/hostname": target}
    lows = [f"low-{index}" for index in range(2)]
    env.create(
        *(
            env.pod(name, cpu="1", priority_class="e2e-p10", grace=15, node_selector=on_target)
            for name in lows
        )
    )
    for name in lows:
        env.wait_bound(name)
    burst = Burst(
        local,
        [
            env.pod(f"p-{i}", cpu=POD_CPU, node_selector={"kubernetes.io/hostname": other})
            for i in range(12)
        ],
        rate=3,
    ).start()
    burst.wait_created(3)
    env.create(env.pod("high", cpu="1", priority_class="e2e-p100", node_selector=on_target))
    env.wait_pod("high", lambda p: nominated_node(p) == target, timeout=30, what="nominated")
    env.watch.wait_first(lambda e: is_terminating(e.pod), timeout=15, what="a victim terminating")
    assert node_name(env.get_pod("high") or {}) is None
    old = scheduler_pool.kill_leader()
    scenario.killed_at = time.monotonic()
    new = scheduler_pool.wait_leader(other_than=old)
    fault_end = time.monotonic()
    burst.join()
    assert env.wait_bound("high", timeout=60) == target
    scenario.notes.append(f"{old} killed, {new} took over")
    verdict = scenario.finish(fault_end, expected_bound=2 + PER_NODE)
    assert verdict.victims == 1


def test_scheduler_paused_while_nodes_go(
    env: TestEnv,
    schedulers: Schedulers,
    scheduler_pool: LocalSchedulers,
    local: LocalCluster,
    results: Results,
) -> None:
    """SIGSTOP while a node is deleted (and its pods), another added and bound pods deleted;
    after SIGCONT no pod may land on the deleted node and the freed room must be used."""
    leader = scheduler_pool.by_identity(scheduler_pool.wait_leader())
    assert leader is not None
    scenario = Scenario.begin(f"scheduler SIGSTOP {PAUSE:.0f} s", env, scheduler_pool, results)
    gone, kept, _ = env.create_nodes(3, cpu=NODE_CPU)
    burst = _burst(local, env, "p", 36, rate=3)
    burst.wait_created(18)
    leader.popen.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        env.kubectl.run("delete", "node", gone, "--wait=false")
        pods = env.pods()
        doomed = sorted(n for n, p in pods.items() if node_name(p) == gone)
        freed = sorted(n for n, p in pods.items() if node_name(p) == kept)[:3]
        if doomed or freed:
            _delete_now(env, *doomed, *freed)
        scenario.deleted_by_test.update(doomed, freed)
        env.create_nodes(1, cpu=NODE_CPU)
        time.sleep(max(0.0, PAUSE - (time.monotonic() - started)))
    finally:
        leader.popen.send_signal(signal.SIGCONT)
    fault_end = time.monotonic()
    burst.join()
    # A binding to the deleted node that the API server applied before the deletion is legal
    # (the pod GC removes the pod); one applied after it is what the judge looks for.
    scenario.deleted_by_test.update(n for n in burst.names if gone in env.watch.ever_bound_to(n))
    live = 36 - len(scenario.deleted_by_test)
    scenario.notes.append(f"deleted {gone} with {len(doomed)} pods, freed {len(freed)} on {kept}")
    scenario.finish(fault_end, expected_bound=min(live, 3 * PER_NODE))
