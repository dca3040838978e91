"""Which pod version an event is about, as the event recorder sees it.

kube-scheduler reports each event about the pod object it popped from its queue, with that
object's resourceVersion in the reference, and client-go folds a repeat into the series of an
earlier event when the references are equal, whatever the notes say. The scheduler here writes
one thing kube-scheduler never writes, the explanation annotation after each failed attempt; that
write must not make a new pod version in the events' eyes, or a repeat that kube-scheduler folds
would come out as an event of its own.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import MODIFIED
from kopf_scheduler.model.pod import EXPLANATION_ANNOTATION
from kopf_scheduler.ports import Event
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod


def _explanation_only(raw: dict[str, Any]) -> None:
    raw["metadata"].setdefault("annotations", {})[EXPLANATION_ANNOTATION] = '{"attempt":1}'


def _label(raw: dict[str, Any]) -> None:
    raw["metadata"]["labels"] = {"app": "other"}


def _explanation_and_label(raw: dict[str, Any]) -> None:
    _explanation_only(raw)
    _label(raw)


@pytest.mark.parametrize(
    ("write", "same_version"),
    [
        pytest.param(None, True, id="nothing-written"),
        pytest.param(_explanation_only, True, id="our-explanation-only"),
        pytest.param(_label, False, id="a-label"),
        pytest.param(_explanation_and_label, False, id="our-explanation-and-a-label"),
    ],
)
async def test_failed_attempts_report_the_pod_version_before_our_explanation(
    write: Any, same_version: bool
) -> None:
    sim = Simulation(default_config())
    recorded: list[Event] = []
    record = sim.cluster.record

    def keep(event: Event) -> None:
        recorded.append(event)
        record(event)

    sim.cluster.record = keep  # type: ignore[method-assign]
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="1", memory="1Gi", pods=10).obj())
    sim.apply(make_pod("big").scheduler("kopf-scheduler").req(cpu="2").obj())
    await sim.run_until_quiet()
    before = [e for e in recorded if e.reason == "FailedScheduling"][-1]
    if write is not None:
        raw = copy.deepcopy(sim.cluster.pods["default/big"])
        write(raw)
        raw["metadata"]["resourceVersion"] = "100000"
        sim.cluster.pods["default/big"] = raw
        assert sim.handlers is not None
        sim.handlers.route("Pod")(MODIFIED, raw)
    # A new node requeues the pod; it fails again (with another message, which is no matter).
    count = len(recorded)
    sim.apply(make_node("n2").capacity(cpu="1", memory="1Gi", pods=10).obj())
    await sim.run_until_quiet()
    after = next(e for e in recorded[count:] if e.reason == "FailedScheduling")

    assert before.regarding_revision
    assert (before.regarding_revision == after.regarding_revision) is same_version
