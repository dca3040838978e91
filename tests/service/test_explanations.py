import dataclasses
import json
from collections.abc import Coroutine
from typing import Any

import pytest

from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.config.types import Explanations
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import Diagnosis, NodePluginScores, NodeToStatus
from kopf_scheduler.informer.handlers import EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.ports import ApiError, PodRef, PodStatusPatch
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict, NodeVerdicts, verdicts
from kopf_scheduler.service.explanations import (
    ANNOTATION,
    ExplanationRecorder,
    encode_record,
    stored_verdicts,
)
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_node, make_pod


def _record(
    nodes: int, result: str = "unschedulable", preemption: dict | None = None
) -> AttemptRecord:
    return AttemptRecord(
        pod="ns/p",
        profile="kopf-scheduler",
        cycle=1,
        attempt=1,
        time=0.0,
        result=result,
        message="0/3 nodes are available",
        num_all_nodes=nodes,
        nodes=[
            NodeVerdict(
                f"node-{i:04d}", False, "NodeResourcesFit", "Unschedulable", ("Insufficient cpu",)
            )
            for i in range(nodes)
        ],
        preemption=preemption,
    )


def test_small_record_is_kept_whole() -> None:
    record = _record(3)
    decoded = json.loads(encode_record(record, 16384))
    assert stored_verdicts(decoded) == record.as_dict()["nodes"]
    head = {k: v for k, v in decoded.items() if k not in ("nodes", "rejected")}
    assert head == record.as_dict(with_nodes=False)


def test_rejected_nodes_are_grouped_by_plugin_code_and_reasons() -> None:
    def rejected(node: str, *reasons: str, plugin: str = "NodeResourcesFit") -> NodeVerdict:
        return NodeVerdict(node, False, plugin, "Unschedulable", reasons)

    nodes = [
        rejected("a", "Insufficient cpu"),
        rejected("b", "Insufficient cpu", "Too many pods"),
        rejected("c", "Insufficient cpu"),
        rejected("d", "node(s) had untolerated taint(s)", plugin="TaintToleration"),
        NodeVerdict("e", True, scores={"NodeResourcesFit": 3}, total=3),
        NodeVerdict("f", True, scores={"NodeResourcesFit": 1}, total=1),
    ]
    record = AttemptRecord("ns/p", "kopf-scheduler", 1, 1, 0.0, "unschedulable", nodes=nodes)
    decoded = json.loads(encode_record(record, 16384))
    assert [(g["plugin"], g["reasons"], g["nodes"]) for g in decoded["rejected"]] == [
        ("NodeResourcesFit", ["Insufficient cpu"], ["a", "c"]),
        ("NodeResourcesFit", ["Insufficient cpu", "Too many pods"], ["b"]),
        ("TaintToleration", ["node(s) had untolerated taint(s)"], ["d"]),
    ]
    assert [n["node"] for n in decoded["nodes"]] == ["e", "f"]
    assert sorted(stored_verdicts(decoded), key=lambda v: v["node"]) == [v.as_dict() for v in nodes]


def test_a_node_rejected_like_the_one_before_costs_only_its_name() -> None:
    fifty = encode_record(_record(50), 16384)
    fifty_one = encode_record(_record(51), 16384)
    assert len(fifty_one) - len(fifty) == len('"node-0050"') + 1


@pytest.mark.parametrize("limit", [1024, 4096, 16384])
def test_large_record_is_trimmed_under_the_limit(limit: int) -> None:
    record = _record(2000)
    text = encode_record(record, limit)
    assert len(text.encode()) <= limit
    decoded = json.loads(text)
    kept = stored_verdicts(decoded)
    assert decoded["truncatedNodes"] + len(kept) == 2000
    assert decoded["truncatedNodes"] > 0
    assert decoded["message"] == record.message
    assert kept == [v.as_dict() for v in record.nodes[: len(kept)]]
    # As many verdicts as fit: one more name in the group would not.
    one_more = json.dumps(record.nodes[len(kept)].node)
    assert len(text.encode()) + len(one_more) + 1 > limit


def test_preemption_node_statuses_go_before_verdicts_and_candidates_last() -> None:
    preemption = {
        "outcome": "NoCandidate",
        "node_statuses": {f"node-{i:04d}": "Insufficient cpu" for i in range(1000)},
        "candidates": [{"node": f"node-{i:04d}", "victims": ["a", "b"]} for i in range(40)],
    }
    record = _record(50, preemption=preemption)

    roomy = json.loads(encode_record(record, 16384))
    assert "node_statuses" not in roomy["preemption"]
    assert len(roomy["preemption"]["candidates"]) == 40
    assert len(stored_verdicts(roomy)) == 50
    assert roomy["truncatedNodes"] == 0

    tight = json.loads(encode_record(record, 1024))
    assert "candidates" not in tight["preemption"]
    assert tight["preemption"]["outcome"] == "NoCandidate"


@dataclasses.dataclass
class StoredPod:
    """The pod as the recorder sees it in the cache: what a write stored shows up on it."""

    namespace: str = "ns"
    name: str = "p"
    uid: str = "u"
    resource_version: str = "1"
    explanation: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _stored(pod: StoredPod):
    return lambda key: pod


class FakeWriter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str | None]]] = []
        self.refuse = False

    async def annotate(self, pod, annotations) -> None:
        if self.refuse:
            raise ApiError(503, "ServiceUnavailable")
        self.calls.append((pod.key, annotations))
        pod.explanation = annotations[ANNOTATION]
        pod.resource_version = str(int(pod.resource_version) + 1)


@pytest.mark.parametrize(
    ("mode", "result", "preemption", "written"),
    [
        pytest.param("failures", "unschedulable", None, True, id="failure-written"),
        pytest.param("failures", "scheduled", None, False, id="success-skipped"),
        pytest.param(
            "failures", "scheduled", {"outcome": "Nominated"}, True, id="preemption-written"
        ),
        pytest.param("all", "scheduled", None, True, id="all-writes-successes"),
        pytest.param("none", "unschedulable", None, False, id="none-writes-nothing"),
    ],
)
async def test_recorder_writes_what_the_mode_asks(mode, result, preemption, written) -> None:
    writer = FakeWriter()
    pending = []
    recorder = ExplanationRecorder(
        Explanations(annotate=mode), writer, pending.append, _stored(StoredPod())
    )
    recorder(_record(2, result, preemption))
    for coroutine in pending:
        await coroutine
    assert bool(writer.calls) is written
    if written:
        key, annotations = writer.calls[0]
        assert key == "ns/p"
        assert json.loads(annotations[ANNOTATION])["result"] == result


async def test_a_pod_failing_the_same_way_is_written_again_only_after_the_refresh() -> None:
    writer = FakeWriter()
    pending = []
    recorder = ExplanationRecorder(Explanations(), writer, pending.append, _stored(StoredPod()))

    async def attempt(number: int, time: float, message: str = "0/3 nodes are available") -> None:
        record = _record(2)
        record.attempt, record.cycle, record.time, record.message = number, number, time, message
        recorder(record)
        while pending:
            await pending.pop()

    def written() -> list[tuple[int, str]]:
        records = [json.loads(annotations[ANNOTATION]) for _, annotations in writer.calls]
        return [(record["attempt"], record["message"]) for record in records]

    await attempt(1, 0.0)
    await attempt(2, 1.0)
    await attempt(3, 29.0)
    assert written() == [(1, "0/3 nodes are available")]
    await attempt(4, 29.5, "0/3 nodes are available: 3 Insufficient cpu")
    await attempt(5, 30.5)
    await attempt(6, 31.0)
    await attempt(7, 61.0)
    assert written() == [
        (1, "0/3 nodes are available"),
        (4, "0/3 nodes are available: 3 Insufficient cpu"),
        (5, "0/3 nodes are available"),
        (7, "0/3 nodes are available"),
    ]
    writer.refuse = True
    await attempt(8, 70.0, "another")
    writer.refuse = False
    await attempt(9, 71.0, "another")
    assert written()[-1] == (9, "another")


async def test_a_pod_failing_for_the_same_reasons_on_other_nodes_is_not_written_again() -> None:
    writer = FakeWriter()
    pending = []
    recorder = ExplanationRecorder(Explanations(), writer, pending.append, _stored(StoredPod()))

    async def attempt(nodes: int, time: float, preemption: dict) -> None:
        record = _record(nodes, preemption=preemption)
        record.time = time
        record.message = f"0/{nodes} nodes are available: {nodes} Insufficient cpu."
        recorder(record)
        while pending:
            await pending.pop()

    unfound = {"outcome": "NoCandidates", "nominated_node": "", "victims": ()}
    await attempt(3, 0.0, {**unfound, "offset": 0})
    await attempt(5, 1.0, {**unfound, "offset": 4})
    assert len(writer.calls) == 1
    await attempt(5, 2.0, {"outcome": "Nominated", "nominated_node": "node-0001", "victims": ()})
    assert len(writer.calls) == 2


async def test_a_status_patch_carries_a_record_only_when_one_is_due() -> None:
    writer = FakeWriter()
    pending = []
    pod = StoredPod()
    recorder = ExplanationRecorder(Explanations(), writer, pending.append, lambda key: pod)
    cpu = "0/3 nodes are available: 3 Insufficient cpu"

    def attempt(number: int, time: float, patch: PodStatusPatch | None, message: str = cpu) -> None:
        record = _record(2)
        record.attempt, record.time, record.status_patch = number, time, patch
        record.message = message
        recorder(record)

    def condition_patch() -> PodStatusPatch:
        return PodStatusPatch(conditions=[{"type": "PodScheduled", "status": "False"}])

    def went_through(patch: PodStatusPatch) -> None:
        pod.explanation = patch.annotations[ANNOTATION]
        pod.resource_version = str(int(pod.resource_version) + 1)

    first = condition_patch()
    attempt(1, 0.0, first)
    assert pending == []
    assert json.loads(first.annotations[ANNOTATION])["attempt"] == 1
    assert first.body()["metadata"] == {"annotations": first.annotations}
    # The pod is still seen at the version the patch was sent against (the watch lags): it
    # cannot show the record yet, and a patch going out meanwhile does not take it again.
    lagging = condition_patch()
    attempt(2, 0.5, lagging)
    assert lagging.annotations == {}
    went_through(first)

    # Nothing new and no patch going out: nothing is written before the refresh.
    attempt(3, 1.0, None)
    assert pending == []
    # A patch going out because the counts in the message changed: the record stays out of it.
    counts = condition_patch()
    attempt(4, 2.0, counts, cpu.replace("3 Insufficient", "2 Insufficient"))
    assert counts.annotations == {}
    assert "metadata" not in counts.body()
    # Other reasons: the record is due and goes along.
    other = condition_patch()
    attempt(5, 3.0, other, "0/3 nodes are available: 3 Too many pods")
    assert json.loads(other.annotations[ANNOTATION])["attempt"] == 5
    # That patch failed: a newer version of the pod shows up without the record, which goes
    # with the next patch again.
    pod.resource_version = str(int(pod.resource_version) + 1)
    retried = condition_patch()
    attempt(6, 4.0, retried, "0/3 nodes are available: 3 Too many pods")
    assert json.loads(retried.annotations[ANNOTATION])["attempt"] == 6
    went_through(retried)
    attempt(7, 33.0, None, "0/3 nodes are available: 3 Too many pods")
    assert pending == []
    attempt(8, 34.5, None, "0/3 nodes are available: 3 Too many pods")
    for coroutine in pending:
        await coroutine
    assert [json.loads(a[ANNOTATION])["attempt"] for _, a in writer.calls] == [8]


async def test_a_failed_attempt_sends_its_record_in_the_condition_patch() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    patches: list[PodStatusPatch] = []

    class RecordingStatusWriter:
        async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
            patches.append(patch)
            await cluster.patch_status(pod, patch)

    store = Store()
    writer = FakeWriter()
    pending: list[Coroutine[Any, Any, None]] = []
    ports = Ports(clock, cluster, RecordingStatusWriter(), cluster, cluster, storage_writer=cluster)
    scheduler = build_scheduler(
        default_config(),
        ports,
        ClusterView(store.get_pod, store.list_pdbs, store.storage),
        on_attempt=ExplanationRecorder(Explanations(), writer, pending.append, store.get_pod),
    )
    handlers = EventHandlers(scheduler, store)
    routes = {"Node": handlers.route("Node"), "Pod": handlers.route("Pod")}
    cluster.subscribe(lambda kind, event_type, raw: routes[kind](event_type, raw))
    cluster.create(make_node("n1").capacity(cpu="1").obj())
    cluster.create(make_pod("big").req(cpu="4").scheduler("kopf-scheduler").obj())

    assert scheduler.schedule_one()
    await scheduler.drain()

    assert pending == []
    assert writer.calls == []
    assert len(patches) == 1
    assert patches[0].conditions[0]["reason"] == "Unschedulable"
    stored = cluster.pods["default/big"]["metadata"]["annotations"][ANNOTATION]
    assert json.loads(stored)["result"] == "unschedulable"


def _diagnosed_verdicts(rejected: int, feasible: int) -> NodeVerdicts:
    diagnosis = Diagnosis(NodeToStatus())
    for i in range(rejected):
        diagnosis.node_to_status.set(
            f"node-{i:04d}",
            Status(Code.UNSCHEDULABLE, "Insufficient cpu", plugin="NodeResourcesFit"),
        )
    names = [f"fit-{i:04d}" for i in range(feasible)]
    scores = [
        NodePluginScores(name, {"NodeResourcesFit": 50 + i}, 50 + i) for i, name in enumerate(names)
    ]
    return verdicts(diagnosis, names, scores)


def test_verdicts_are_the_full_list_in_order_rejected_first() -> None:
    lazy = _diagnosed_verdicts(3, 2)
    assert len(lazy) == 5
    assert [v.node for v in lazy] == ["node-0000", "node-0001", "node-0002", "fit-0000", "fit-0001"]
    assert lazy[0] == NodeVerdict(
        "node-0000", False, "NodeResourcesFit", "Unschedulable", ("Insufficient cpu",)
    )
    assert lazy[-1] == NodeVerdict("fit-0001", True, scores={"NodeResourcesFit": 51}, total=51)
    assert lazy[1:3] == [lazy[1], lazy[2]]
    assert lazy == list(lazy)


def test_iterating_verdicts_builds_each_once_without_indexing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Packing a record walks the verdicts in order; the walk does not go through indexing."""
    lazy = _diagnosed_verdicts(3, 1)
    first = list(lazy)

    def no_indexing(self: NodeVerdicts, index: object) -> NodeVerdict:
        raise AssertionError("iterated by index")

    monkeypatch.setattr(NodeVerdicts, "__getitem__", no_indexing)
    again = list(lazy)
    assert [v.node for v in again] == ["node-0000", "node-0001", "node-0002", "fit-0000"]
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_encoding_builds_only_the_verdicts_that_fit() -> None:
    lazy = _diagnosed_verdicts(5000, 0)
    record = AttemptRecord("ns/p", "kopf-scheduler", 1, 1, 0.0, "unschedulable", nodes=lambda: lazy)
    decoded = json.loads(encode_record(record, 4096))
    kept = len(stored_verdicts(decoded))
    assert 0 < kept < 5000 and decoded["truncatedNodes"] == 5000 - kept
    built = sum(1 for slot in lazy._built if slot is not None)
    # Beyond those kept, only the few measured and found not to fit: the first try, without
    # room for truncatedNodes, fits a name or two more than the second.
    assert built <= kept + 5
