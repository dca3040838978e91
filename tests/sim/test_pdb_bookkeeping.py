"""The in-memory cluster's PodDisruptionBudget status, kept per PDB incrementally, always equals
a recomputation from scratch over every pod (the disruption controller's rule for bare pods),
and is published exactly when it changes."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_scheduler.informer.handlers import MODIFIED
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_node, make_pod

APPS = ("a", "b", "c")


def _pdb(name: str, app: str, bound: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}, **bound},
    }


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(total * int(value[:-1]) / 100)


def _expected(cluster: InMemoryCluster, raw: dict[str, Any]) -> int:
    pdb = PodDisruptionBudget(raw)
    matching = [
        p
        for p in cluster.pods.values()
        if p["metadata"].get("namespace") == pdb.namespace
        and not pdb.selector.matches_nothing
        and pdb.selector.matches(p["metadata"].get("labels") or {})
    ]
    healthy = sum(
        1
        for p in matching
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    )
    if pdb.min_available is not None:
        desired = _scaled(pdb.min_available, len(matching))
    elif pdb.max_unavailable is not None:
        desired = max(0, len(matching) - _scaled(pdb.max_unavailable, len(matching)))
    else:
        desired = len(matching)
    return max(0, healthy - desired)


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("pod"),
            st.integers(0, 6),
            st.sampled_from((*APPS, "")),
            st.sampled_from(["default", "other"]),
            st.booleans(),
        ),
        st.tuples(
            st.just("pdb"),
            st.integers(0, 2),
            st.sampled_from(APPS),
            st.sampled_from(
                [{"minAvailable": 1}, {"minAvailable": "50%"}, {"maxUnavailable": 1}, {}]
            ),
            st.sampled_from(["default", "other"]),
        ),
        st.tuples(st.just("bind"), st.integers(0, 6)),
        st.tuples(st.just("delete"), st.integers(0, 6), st.sampled_from([0, 5])),
        st.tuples(st.just("finish"), st.integers(0, 10)),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(operations=operations)
def test_pdb_status_matches_a_full_recount(operations: list[tuple[Any, ...]]) -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    published: list[tuple[str, int]] = []

    def listen(kind: str, event_type: str, raw: Any) -> None:
        if kind == "PodDisruptionBudget" and event_type == MODIFIED:
            key = f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"
            published.append((key, raw["status"]["disruptionsAllowed"]))

    cluster.subscribe(listen)
    cluster.create(make_node("n1").obj())
    previous: dict[str, Any] = {}
    for operation in operations:
        kind = operation[0]
        if kind == "pod":
            _, number, app, namespace, bound = operation
            builder = make_pod(f"p{number}", namespace).grace(5)
            if app:
                builder.labels(app=app)
            if bound:
                builder.node("n1")
            cluster.create(builder.obj())
        elif kind == "pdb":
            _, number, app, bound, namespace = operation
            cluster.create(_pdb(f"d{number}", app, bound, namespace))
        elif kind in ("bind", "delete"):
            raw = next(
                (r for k, r in cluster.pods.items() if k.endswith(f"/p{operation[1]}")), None
            )
            if raw is None:
                continue
            pod = Pod(raw)
            if kind == "bind":
                if not raw["spec"].get("nodeName"):
                    asyncio.run(cluster.bind(pod, "n1"))
            else:
                raw["spec"]["terminationGracePeriodSeconds"] = operation[2]
                asyncio.run(cluster.delete_pod(pod))
        else:
            clock.advance_to(clock.now() + operation[1])
            cluster.finish_due_deletions()
        for key, raw in cluster.pdbs.items():
            allowed = _expected(cluster, raw)
            assert raw["status"]["disruptionsAllowed"] == allowed, (key, operation)
        current = {
            key: (raw, raw["status"]["disruptionsAllowed"]) for key, raw in cluster.pdbs.items()
        }
        changed = {
            key
            for key, (raw, value) in current.items()
            if key not in previous or previous[key][0] is not raw or previous[key][1] != value
        }
        assert {key for key, _ in published} == changed, operation
        published.clear()
        previous = current
