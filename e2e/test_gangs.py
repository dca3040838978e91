"""Gang scheduling (Coscheduling and its PodGroup API) against the real API server and kwok.

What a gang promises, checked from outside through what ``kubectl`` shows:

- all or nothing: a group whose ``minMember`` pods cannot all be placed gets no member bound,
  and after the Permit wait its reservations are given back to other pods;
- no deadlock: two groups that each need most of the cluster end with one of them whole and
  the other entirely pending, never both half placed;
- no livelock: two groups that cannot fit are tried and then left alone, not woken by the room
  each other's failed attempts give back;
- no partial admission next to a busy node (scheduler-plugins issue #930: two nodes, one
  taken by a plain pod, a group of two that needs both);
- preemption for a group evicts exactly the victims it needs, once, even when they take
  longer to go than the Permit wait, and takes the pods a PodDisruptionBudget allows to go
  rather than those it protects; the PodGroup is Running after;
- the Coscheduling guide's PodGroup and Deployment run unchanged but for ``schedulerName``;
- the PodGroup's status (phase and member counts) as scheduler-plugins' controller keeps it;
- a group whose members each need devices (a ResourceClaimTemplate per pod) binds whole or not
  at all, and a group held back leaves no claim allocated.

The scheduler is ``kopf-scheduler run`` with a profile that enables Coscheduling
(:mod:`e2e.support.gangs`), as a second scheduler beside the suite's usual one. The tests run
only when selected with ``-m gangs`` (``make e2e-gangs``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.localcluster import node_ready
from e2e.support import dra, objects
from e2e.support.clusters import Cluster, apply_rbac, service_account_kubeconfig
from e2e.support.dra import TestDevices
from e2e.support.env import TestEnv
from e2e.support.gangs import (
    GANG_CONFIG,
    GANG_SCHEDULER_NAME,
    PERMIT_WAITING_SECONDS,
    PODGROUP_LABEL,
    docs_workload,
    install_podgroup_crd,
    podgroup,
)
from e2e.support.kubectl import Kubectl, condition, node_name, unschedulable_message
from e2e.support.polling import holds_for, wait_until
from e2e.support.schedulers import LocalSchedulers

pytestmark = pytest.mark.gangs

SERVICE_ACCOUNT = "kopf-scheduler"
# Long enough for a rejected group to be retried and held at Permit more than once.
HOLD_SECONDS = 2 * PERMIT_WAITING_SECONDS + 2
BIND_TIMEOUT = 45.0
# Several times the 15-20 s at which two groups that cannot fit used to wake each other.
QUIET_SECONDS = 60.0


@pytest.fixture(scope="module", autouse=True)
def only_when_selected(request: pytest.FixtureRequest) -> None:
    """Skip before anything starts unless ``-m gangs`` selected these scenarios."""
    if "gangs" not in (request.config.option.markexpr or ""):
        pytest.skip("runs only when selected with -m gangs (make e2e-gangs)")


@pytest.fixture(scope="module")
def gang_pool(
    only_when_selected: None,
    cluster: Cluster,
    kube: Kubectl,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalSchedulers]:
    if cluster.is_kind:
        pytest.skip("the gang scheduler runs as a local process, next to the local control plane")
    install_podgroup_crd(kube)
    apply_rbac(kube)
    work: Path = tmp_path_factory.mktemp("gang-scheduler")
    kubeconfig = service_account_kubeconfig(kube, work / "scheduler.kubeconfig", SERVICE_ACCOUNT)
    pool = LocalSchedulers(kube, kubeconfig, work, config=GANG_CONFIG)
    try:
        pool.start(identity="e2e-gang-scheduler")
    except AssertionError:
        for proc in list(pool.processes):  # the one that never got ready
            pool.kill(proc)
        raise
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def gangs(gang_pool: LocalSchedulers, request: pytest.FixtureRequest) -> Iterator[str]:
    """The running gang scheduler; yields its ``schedulerName``."""
    if not gang_pool.processes:
        gang_pool.start(identity="e2e-gang-scheduler")
    gang_pool.begin_test()
    request.node.e2e_schedulers = gang_pool
    yield GANG_SCHEDULER_NAME
    problems = gang_pool.end_test()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


# -- helpers ---------------------------------------------------------------------------------


def _members(env: TestEnv, group: str, count: int, cpu: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [
        env.pod(
            f"{group}-{index}",
            cpu=cpu,
            scheduler=GANG_SCHEDULER_NAME,
            labels={PODGROUP_LABEL: group},
            **kwargs,
        )
        for index in range(count)
    ]


def _names(pods: Sequence[dict[str, Any]]) -> list[str]:
    return [str(pod["metadata"]["name"]) for pod in pods]


def _plain(env: TestEnv, name: str, cpu: str, **kwargs: Any) -> dict[str, Any]:
    return env.pod(name, cpu=cpu, scheduler=GANG_SCHEDULER_NAME, **kwargs)


def _ever_bound(env: TestEnv, names: Sequence[str]) -> list[str]:
    """The pods among ``names`` that the watch has ever seen with a node."""
    return [name for name in names if env.watch.bound(name) is not None]


def _bound_now(env: TestEnv, names: Sequence[str]) -> dict[str, str]:
    pods = env.pods()
    placed = {name: node_name(pods[name]) for name in names if name in pods}
    return {name: node for name, node in placed.items() if node is not None}


def _wait_all_bound(
    env: TestEnv, names: Sequence[str], timeout: float = BIND_TIMEOUT
) -> dict[str, str]:
    def all_bound() -> dict[str, str] | None:
        bound = _bound_now(env, names)
        return bound if len(bound) == len(names) else None

    return wait_until(
        all_bound,
        timeout=timeout,
        what=f"all of {list(names)} bound",
        describe=lambda: env.watch.summary()[-12:],
    )


def _wait_rejected(env: TestEnv, names: Sequence[str]) -> None:
    """Positive evidence that the scheduler has tried the group: a member marked unschedulable."""

    def rejected() -> bool:
        pods = env.pods()
        return any(name in pods and unschedulable_message(pods[name]) for name in names)

    wait_until(
        rejected,
        timeout=30,
        what=f"a member of {list(names)} with PodScheduled=False",
        describe=lambda: env.watch.summary()[-8:],
    )


def _assert_none_bound_for(env: TestEnv, names: Sequence[str], seconds: float) -> None:
    assert holds_for(lambda: not _ever_bound(env, names), seconds=seconds), (
        f"members bound while their group was incomplete: {_ever_bound(env, names)}\n"
        + "\n".join(env.watch.summary())
    )


def _delete_now(env: TestEnv, *names: str) -> None:
    env.kubectl.delete("pod", *names, namespace=env.namespace, grace_period="0", force="true")
    wait_until(
        lambda: not (set(names) & set(env.pods())),
        timeout=30,
        what=f"pods {list(names)} gone",
    )


def _podgroup_status(kube: Kubectl, env: TestEnv, name: str) -> dict[str, Any]:
    group = kube.get("podgroup", name, env.namespace) or {}
    status: dict[str, Any] = group.get("status") or {}
    return status


# -- scenarios -------------------------------------------------------------------------------


def test_group_that_does_not_fit_binds_nothing_and_holds_nothing(env: TestEnv, gangs: str) -> None:
    env.create_nodes(3)
    env.create(podgroup("g", env.namespace, min_member=4))
    members = _members(env, "g", 4, cpu="3")
    env.create(*members)
    names = _names(members)

    _wait_rejected(env, names)
    _assert_none_bound_for(env, names, HOLD_SECONDS)

    # The members that fitted were only reserved: after the Permit wait a plain pod the size
    # of one member finds room.
    env.create(_plain(env, "plain", cpu="3"))
    env.wait_bound("plain", timeout=PERMIT_WAITING_SECONDS + 15)
    assert not _ever_bound(env, names), env.watch.summary()

    _delete_now(env, "plain")
    env.create_nodes(1)
    placed = _wait_all_bound(env, names)
    assert len(set(placed.values())) == 4, placed


def test_competing_groups_do_not_deadlock(env: TestEnv, gangs: str) -> None:
    env.create_nodes(4)
    env.create(podgroup("a", env.namespace, 3), podgroup("b", env.namespace, 3))
    a, b = _members(env, "a", 3, cpu="3"), _members(env, "b", 3, cpu="3")
    # Interleaved, so a scheduler that reserves pod by pod meets both groups at once.
    env.create(*(pod for pair in zip(a, b, strict=True) for pod in pair))
    groups = {"a": _names(a), "b": _names(b)}

    def one_group_whole() -> str | None:
        bound = _bound_now(env, [*groups["a"], *groups["b"]])
        whole = [g for g, names in groups.items() if all(n in bound for n in names)]
        return whole[0] if whole else None

    winner = wait_until(
        one_group_whole,
        timeout=BIND_TIMEOUT,
        what="one of the two groups fully bound",
        describe=lambda: env.watch.summary()[-12:],
    )
    loser = "b" if winner == "a" else "a"
    assert not _ever_bound(env, groups[loser]), env.watch.summary()
    _assert_none_bound_for(env, groups[loser], PERMIT_WAITING_SECONDS + 2)

    _delete_now(env, *groups[winner])
    placed = _wait_all_bound(env, groups[loser])
    assert len(set(placed.values())) == 3, placed


def test_groups_that_cannot_fit_wait_quietly(
    env: TestEnv, gang_pool: LocalSchedulers, gangs: str
) -> None:
    # Each group needs four members of 3 CPUs, three nodes hold three: both fail. The room one
    # group's failed attempt gives back was free when the other failed, and must not wake it:
    # once both have been tried, the scheduler leaves them alone (it retried every 15-20 s).
    env.create_nodes(3)
    env.create(podgroup("a", env.namespace, 4), podgroup("b", env.namespace, 4))
    members = [*_members(env, "a", 4, cpu="3"), *_members(env, "b", 4, cpu="3")]
    env.create(*members)
    names = _names(members)
    _wait_rejected(env, names)

    def attempts() -> int:
        mentions = f"pod={env.namespace}/"
        log = "".join(proc.log_since_mark() for proc in gang_pool.processes)
        return sum(
            1 for line in log.splitlines() if "pod_unschedulable" in line and mentions in line
        )

    def unchanged_for_a_while() -> int | None:
        seen = attempts()
        return seen if holds_for(lambda: attempts() == seen, seconds=10) else None

    # Both groups tried (and the retry that the first failure's room gives the other one).
    settled = wait_until(
        unchanged_for_a_while,
        timeout=90,
        what="the first attempts of both groups to end",
        describe=lambda: f"{attempts()} failed attempts so far, still growing",
    )
    assert settled >= len(names), settled
    assert holds_for(lambda: attempts() == settled, seconds=QUIET_SECONDS), (
        f"{attempts() - settled} more failed attempts after {settled}\n"
        + "\n".join(env.watch.summary()[-12:])
    )
    assert not _ever_bound(env, names), env.watch.summary()


def test_group_is_not_partially_admitted_next_to_a_busy_node(env: TestEnv, gangs: str) -> None:
    # scheduler-plugins issue #930: exactly two nodes, one of them taken by a single pod, and
    # a group of two that needs a whole node per member. The group must stay pending.
    env.create_nodes(2)
    env.create(_plain(env, "single", cpu="3"))
    env.wait_bound("single")
    env.create(podgroup("g", env.namespace, 2))
    members = _members(env, "g", 2, cpu="3")
    env.create(*members)
    names = _names(members)

    _wait_rejected(env, names)
    _assert_none_bound_for(env, names, HOLD_SECONDS)

    _delete_now(env, "single")
    placed = _wait_all_bound(env, names)
    assert len(set(placed.values())) == 2, placed


def test_group_preemption_evicts_exactly_the_victims_it_needs(env: TestEnv, gangs: str) -> None:
    nodes = env.create_nodes(4)
    # Two low-priority pods on every node; each member needs the room of one of them. The
    # victims on half of the nodes go quickly, on the other half they take longer (grace
    # period) than the members wait at Permit.
    slow = PERMIT_WAITING_SECONDS + 3
    lows: dict[str, str] = {}
    for position, node in enumerate(nodes):
        grace = 1 if position % 2 else slow
        for slot in range(2):
            name = f"low-{node.rsplit('-', 1)[-1]}-{slot}"
            env.create(
                _plain(
                    env,
                    name,
                    cpu="2",
                    priority_class="e2e-p10",
                    grace=grace,
                    node_selector={"kubernetes.io/hostname": node},
                )
            )
            lows[name] = node
    for name, node in lows.items():
        assert env.wait_bound(name) == node

    env.create(podgroup("high", env.namespace, 4))
    members = _members(env, "high", 4, cpu="2", priority_class="e2e-p100")
    env.create(*members)
    names = _names(members)

    placed = _wait_all_bound(env, names, timeout=BIND_TIMEOUT + slow)

    # The cluster was full and every low pod frees the room of exactly one member: four
    # victims are the fewest that make room, and each node lost as many as it gained members.
    victims = [name for name in lows if env.watch.terminating(name) is not None]
    history = "\n".join(env.watch.summary())
    assert len(victims) == 4, f"victims {victims}\n{history}"
    for node in nodes:
        gained = sorted(m for m, n in placed.items() if n == node)
        lost = sorted(v for v in victims if lows[v] == node)
        assert len(gained) == len(lost), f"{node}: members {gained}, victims {lost}\n{history}"
    for victim in victims:
        marked = env.watch.with_condition(victim, "DisruptionTarget")
        assert marked is not None, f"{victim} was deleted without a DisruptionTarget condition"
        target = condition(marked.pod, "DisruptionTarget")
        assert target is not None and target["reason"] == "PreemptionByScheduler", target
    # All or nothing here too: no member was bound before the last victim was gone, not even
    # on the nodes whose victims went first.
    gone = [env.watch.deleted(v) for v in victims]
    bound = [env.watch.bound(m) for m in names]
    assert all(gone) and all(bound), history
    last_gone = max(event.index for event in gone if event)
    first_bound = min(event.index for event in bound if event)
    assert last_gone < first_bound, history
    # Nothing was preempted a second time while the group waited for its victims.
    survivors = [name for name in lows if name not in victims]
    assert holds_for(
        lambda: all(env.watch.terminating(name) is None for name in survivors),
        seconds=PERMIT_WAITING_SECONDS + 1,
    ), env.watch.summary()
    current = env.pods()
    assert all(node_name(current[name]) == lows[name] for name in survivors)


def test_group_preemption_spares_guarded_pods_and_waits_out_slow_victims(
    kube: Kubectl, env: TestEnv, gangs: str
) -> None:
    # Two full nodes: on one, two pods a PodDisruptionBudget allows no disruption of; on the
    # other, two pods whose budget allows both to go. Every low pod takes longer to go (grace
    # period) than the members wait at Permit. The group of two must take the second node's
    # pods, and only them, once, and be bound whole after they are gone.
    guarded_node, spare_node = env.create_nodes(2)
    slow = PERMIT_WAITING_SECONDS + 3
    lows: dict[str, str] = {}
    for app, node in (("guarded", guarded_node), ("spare", spare_node)):
        for slot in range(2):
            name = f"{app}-{slot}"
            env.create(
                _plain(
                    env,
                    name,
                    cpu="2",
                    priority_class="e2e-p10",
                    grace=slow,
                    labels={"app": app},
                    node_selector={"kubernetes.io/hostname": node},
                )
            )
            lows[name] = node
    for name, node in lows.items():
        assert env.wait_bound(name) == node
        env.wait_pod(
            name,
            lambda p: (condition(p, "Ready") or {}).get("status") == "True",
            timeout=30,
            what="Ready",
        )
    env.create(
        objects.pdb("guarded", env.namespace, 2, {"app": "guarded"}),
        objects.pdb("spare", env.namespace, 0, {"app": "spare"}),
    )
    for budget, allowed in (("guarded", 0), ("spare", 2)):
        wait_until(
            functools.partial(_budget_observed, kube, env, budget, allowed),
            timeout=30,
            what=f"the disruption controller to observe PDB {budget}",
        )

    env.create(podgroup("high", env.namespace, 2))
    members = _members(env, "high", 2, cpu="2", priority_class="e2e-p100")
    env.create(*members)
    names = _names(members)

    placed = _wait_all_bound(env, names, timeout=BIND_TIMEOUT + slow)

    history = "\n".join(env.watch.summary())
    assert set(placed.values()) == {spare_node}, f"{placed}\n{history}"
    victims = sorted(name for name in lows if env.watch.terminating(name) is not None)
    assert victims == ["spare-0", "spare-1"], f"victims {victims}\n{history}"
    for victim in victims:
        marked = env.watch.with_condition(victim, "DisruptionTarget")
        assert marked is not None, f"{victim} was deleted without a DisruptionTarget condition"
    # Bound whole, and only after the slow victims were gone, without preempting again while
    # the Permit wait ran out.
    gone = [env.watch.deleted(v) for v in victims]
    bound = [env.watch.bound(m) for m in names]
    assert all(gone) and all(bound), history
    assert max(e.index for e in gone if e) < min(e.index for e in bound if e), history
    assert holds_for(
        lambda: all(env.watch.terminating(name) is None for name in ("guarded-0", "guarded-1")),
        seconds=5,
    ), env.watch.summary()

    running = wait_until(
        lambda: _status_with(kube, env, "high", phase="Running", running=2),
        timeout=30,
        what="PodGroup high Running with 2 running",
        describe=lambda: _podgroup_status(kube, env, "high"),
    )
    assert running.get("failed", 0) == 0 and running.get("succeeded", 0) == 0, running


def _budget_observed(kube: Kubectl, env: TestEnv, name: str, allowed: int) -> bool:
    pdb = kube.get("pdb", name, env.namespace)
    if pdb is None:
        return False
    status = pdb.get("status") or {}
    return (
        status.get("observedGeneration") == pdb["metadata"]["generation"]
        and status.get("currentHealthy") == 2
        and status.get("disruptionsAllowed") == allowed
    )


def _status_with(kube: Kubectl, env: TestEnv, name: str, **expected: Any) -> dict[str, Any] | None:
    status = _podgroup_status(kube, env, name)
    return status if all(status.get(k) == v for k, v in expected.items()) else None


def _untainted_node(env: TestEnv) -> str:
    """A node the guide's pods (which carry no toleration or selector) may land on."""
    name = f"e2e-{env.id}-open"
    node = objects.fake_node(name, env.id, cpu="4", memory="8Gi")
    node["spec"].pop("taints")
    env.kubectl.create(node)
    env.node_names.append(name)  # labelled with the test id: deleted with the test's nodes
    wait_until(
        lambda: node_ready(env.kubectl.get("node", name) or {}),
        timeout=60,
        what=f"node {name} Ready",
    )
    return name


def test_coscheduling_guide_workload_runs_unchanged(
    kube: Kubectl, env: TestEnv, gangs: str
) -> None:
    _untainted_node(env)
    for manifest in docs_workload(gangs):
        kube.run("apply", "-n", env.namespace, "-f", "-", input=yaml.safe_dump(manifest))

    def members(count: int) -> list[str] | None:
        names = [
            str(pod["metadata"]["name"])
            for pod in kube.items("pods", env.namespace, f"{PODGROUP_LABEL}=pg1")
        ]
        return sorted(names) if len(names) == count else None

    first = wait_until(lambda: members(2), timeout=30, what="the Deployment's 2 pods")
    _wait_rejected(env, first)
    _assert_none_bound_for(env, first, HOLD_SECONDS)

    kube.run("scale", "-n", env.namespace, "deployment/pause", "--replicas=3")
    every = wait_until(lambda: members(3), timeout=30, what="the Deployment's 3 pods")
    _wait_all_bound(env, every)


def test_podgroup_status_follows_its_members(kube: Kubectl, env: TestEnv, gangs: str) -> None:
    # Ours only: scheduler-plugins writes this status from its separate controller binary.
    env.create_nodes(2)
    env.create(podgroup("g", env.namespace, 2))
    members = _members(env, "g", 2, cpu="1")
    env.create(members[0])

    def status_is(**expected: Any) -> dict[str, Any] | None:
        status = _podgroup_status(kube, env, "g")
        return status if all(status.get(k) == v for k, v in expected.items()) else None

    wait_until(
        lambda: status_is(phase="Pending"),
        timeout=30,
        what="PodGroup g Pending",
        describe=lambda: _podgroup_status(kube, env, "g"),
    )
    _assert_none_bound_for(env, ["g-0"], PERMIT_WAITING_SECONDS)

    env.create(members[1])
    _wait_all_bound(env, _names(members))
    running = wait_until(
        lambda: status_is(phase="Running", running=2),
        timeout=30,
        what="PodGroup g Running with 2 running",
        describe=lambda: _podgroup_status(kube, env, "g"),
    )
    assert running.get("succeeded", 0) == 0 and running.get("failed", 0) == 0, running
    # The members have no owner, so no workload occupies the group.
    assert not running.get("occupiedBy"), running

    _delete_now(env, "g-1")
    wait_until(
        lambda: status_is(phase="Pending", running=1),
        timeout=30,
        what="PodGroup g back to Pending with 1 running",
        describe=lambda: _podgroup_status(kube, env, "g"),
    )


def test_group_of_device_pods_binds_whole_once_the_devices_are_there(
    env: TestEnv, devices: TestDevices, gangs: str
) -> None:
    # Three members that each need four GPUs: one node of eight holds two of them, and the
    # group gets nothing (no pod bound, no claim left allocated) until a second node comes.
    [first] = env.create_nodes(1)
    devices.publish([first])
    env.create(devices.template("four-gpus", count=4))
    env.create(podgroup("g", env.namespace, min_member=3))
    members = [
        dra.with_claims(pod, templates={dra.CLAIM_ENTRY: "four-gpus"})
        for pod in _members(env, "g", 3, cpu="100m")
    ]
    env.create(*members)
    names = _names(members)

    _wait_rejected(env, names)
    _assert_none_bound_for(env, names, HOLD_SECONDS)
    claims = _member_claims(env, names)
    assert all(not (c.get("status") or {}).get("allocation") for c in claims.values()), claims

    # The driver's slice is there before the node: the node's arrival is then the one event
    # that makes the group schedulable again.
    second = f"e2e-{env.id}-{len(env.node_names)}"
    devices.publish([second])
    assert env.create_nodes(1) == [second]
    bound = _wait_all_bound(env, names)
    assert set(bound.values()) == {first, second}
    taken: list[tuple[str, str]] = []
    for name, claim in _member_claims(env, names, allocated=True).items():
        results = dra.allocated_devices(claim)
        assert len(results) == 4
        assert {pool for _, _, pool, _ in results} == {bound[name]}
        assert dra.reserved_for(claim) == [name]
        taken += [(pool, device) for _, _, pool, device in results]
    assert len(set(taken)) == 12


def _member_claims(
    env: TestEnv, names: Sequence[str], allocated: bool = False
) -> dict[str, dict[str, Any]]:
    """Each member's claim, made by the resource-claim controller (allocated, if asked)."""

    def found() -> dict[str, dict[str, Any]] | None:
        pods = env.pods()
        claims: dict[str, dict[str, Any]] = {}
        for name in names:
            claim_name = dra.pod_claim_name(pods.get(name) or {}, dra.CLAIM_ENTRY)
            claim = (
                env.kubectl.get("resourceclaim", claim_name, env.namespace) if claim_name else None
            )
            if claim is None or (allocated and not dra.allocated_devices(claim)):
                return None
            claims[name] = claim
        return claims

    return wait_until(found, timeout=30, what=f"the claims of {list(names)}")
