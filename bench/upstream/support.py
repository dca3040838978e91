"""Which of upstream's ops the runner carries out, and why it cannot carry out the others.

A workload runs only when every op of its template is one the runner carries out in full; any
other workload is reported with each op it cannot run and the reason, never run in part. The
same check serves ``--list`` (no cluster needed) and the runner itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.upstream.suite import OP_FIELDS, Op, SuiteError, Workload, nested_op_fields

SUPPORTED = frozenset(
    {
        "createNodes",
        "createNamespaces",
        "createPods",
        "createPodSets",
        "createAny",
        "updateAny",
        "deletePods",
        "churn",
        "barrier",
        "sleep",
        "startCollectingMetrics",
        "stopCollectingMetrics",
        "createResourceDriver",
        "allocResourceClaims",
    }
)

UNSUPPORTED_REASONS: Mapping[str, str] = {
    "createResourceClaims": (
        "not used by the six configs of v1.34.10; the runner does not implement it"
    ),
}


@dataclass(frozen=True)
class Blocker:
    """Why one op (or the workload as a whole, at ``index`` -1) cannot be run."""

    index: int
    opcode: str
    reason: str

    def __str__(self) -> str:
        where = f"op {self.index} {self.opcode}" if self.index >= 0 else self.opcode
        return f"{where}: {self.reason}"


def op_blockers(op: Op) -> list[Blocker]:
    if op.opcode not in OP_FIELDS:
        return [Blocker(op.index, op.opcode, "not an op kind of scheduler_perf v1.34.10")]
    if op.opcode not in SUPPORTED:
        return [Blocker(op.index, op.opcode, UNSUPPORTED_REASONS[op.opcode])]
    if op.unknown_fields:
        fields = ", ".join(op.unknown_fields)
        return [Blocker(op.index, op.opcode, f"fields the runner does not know: {fields}")]
    if op.opcode == "createPodSets":
        nested = Op(op.index, "createPods", nested_op_fields(op))
        return [Blocker(op.index, op.opcode, b.reason) for b in op_blockers(nested)]
    return []


def blockers(workload: Workload) -> list[Blocker]:
    """Everything that keeps ``workload`` from running as upstream runs it (none: it runs)."""
    found: list[Blocker] = []
    test_case = workload.test_case
    if test_case.scheduler_config is not None:
        found.append(
            Blocker(-1, "schedulerConfigPath", "both schedulers run their default profiles")
        )
    for key in (*test_case.unknown_keys, *workload.unknown_keys):
        found.append(Blocker(-1, key, "a test case or workload key the runner does not know"))
    for op in test_case.ops:
        found.extend(op_blockers(op))
    if not found:
        try:
            workload.ops()
        except SuiteError as error:
            found.append(Blocker(-1, "params", str(error)))
    return found
