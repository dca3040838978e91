import json

import pytest

from kopf_scheduler.config.types import Explanations
from kopf_scheduler.ports import ObjectRef
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict
from kopf_scheduler.service.explanations import ANNOTATION, ExplanationRecorder, encode_record


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
    assert json.loads(encode_record(record, 16384)) == record.as_dict()


@pytest.mark.parametrize("limit", [1024, 4096, 16384])
def test_large_record_is_trimmed_under_the_limit(limit: int) -> None:
    record = _record(2000)
    text = encode_record(record, limit)
    assert len(text.encode()) <= limit
    decoded = json.loads(text)
    assert decoded["truncatedNodes"] + len(decoded["nodes"]) == 2000
    assert decoded["truncatedNodes"] > 0
    assert decoded["message"] == record.message
    assert decoded["nodes"] == [v.as_dict() for v in record.nodes[: len(decoded["nodes"])]]
    # As many verdicts as fit: one more would not.
    one_more = json.dumps(record.nodes[len(decoded["nodes"])].as_dict(), separators=(",", ":"))
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
    assert len(roomy["nodes"]) == 50
    assert roomy["truncatedNodes"] == 0

    tight = json.loads(encode_record(record, 1024))
    assert "candidates" not in tight["preemption"]
    assert tight["preemption"]["outcome"] == "NoCandidate"


class FakeWriter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str | None]]] = []

    async def annotate(self, pod, annotations) -> None:
        self.calls.append((pod.key, annotations))


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
        Explanations(annotate=mode), writer, pending.append, lambda key: ObjectRef("ns", "p", "u")
    )
    recorder(_record(2, result, preemption))
    for coroutine in pending:
        await coroutine
    assert bool(writer.calls) is written
    if written:
        key, annotations = writer.calls[0]
        assert key == "ns/p"
        assert json.loads(annotations[ANNOTATION])["result"] == result
