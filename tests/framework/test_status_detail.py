"""A rejection's detail: worked out only when read, kept through the copies the runtime makes,
and never part of what events and conditions say."""

from __future__ import annotations

from kopf_scheduler.framework.status import Code, Status


def test_the_detail_is_worked_out_once_and_only_when_read() -> None:
    calls: list[int] = []

    def explain() -> str:
        calls.append(1)
        return "request gpu: needs 2, 1 free"

    status = Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims", detail=explain
    )
    assert calls == []
    copied = status.with_plugin("DynamicResources").with_code(Code.UNSCHEDULABLE)
    assert calls == []
    assert copied.detail() == "request gpu: needs 2, 1 free"
    assert copied.detail() == "request gpu: needs 2, 1 free"
    assert calls == [1]
    assert copied.message() == "cannot allocate all claims"


def test_no_detail_reads_empty_and_does_not_change_equality() -> None:
    plain = Status(Code.UNSCHEDULABLE, "node(s) didn't match Pod's node affinity/selector")
    assert plain.detail() == ""
    assert plain == Status(plain.code, *plain.reasons, detail="more")
