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
    record = _record(3).as_dict()
    assert json.loads(encode_record(record, 16384)) == record


@pytest.mark.parametrize("limit", [1024, 4096, 16384])
def test_large_record_is_trimmed_under_the_limit(limit: int) -> None:
    record = _record(2000).as_dict()
    text = encode_record(record, limit)
    assert len(text.encode()) <= limit
    decoded = json.loads(text)
    assert decoded["truncatedNodes"] + len(decoded["nodes"]) == 2000
    assert decoded["truncatedNodes"] > 0
    assert decoded["message"] == record["message"]


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
