"""Nothing under operator/ reads the event loop's private queues or a task's private waiter.

The simulator once decided when to move virtual time by looking at ``loop._ready``; that works
only on CPython's pure-Python loop, breaks silently on another loop (it then never moves time) and
can change with any Python release. It now awaits ``SimulationLoop.idle()`` (sim/loop.py), which
uses the loop's public selector seam. This scan keeps the private attributes out, whether read as
attributes or through ``getattr``/``hasattr`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[1] / "operator"
LOOP_INTERNALS = frozenset({"_ready", "_scheduled", "_run_once", "_fut_waiter"})
"""asyncio's private state: the ready and timer queues, one loop iteration, a task's waiter."""


def internal_uses(source: str, filename: str) -> list[str]:
    """``file:line name`` for every use of a loop internal in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        name: str | None = None
        if isinstance(node, ast.Attribute) and node.attr in LOOP_INTERNALS:
            name = node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in LOOP_INTERNALS
        ):
            name = node.args[1].value
        if name is not None:
            found.append(f"{filename}:{node.lineno} {name}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("ready = getattr(loop, '_ready', None)", id="getattr"),
        pytest.param("n = len(asyncio.get_running_loop()._ready)", id="attribute"),
        pytest.param("timers = loop._scheduled", id="timers"),
        pytest.param("waiter = task._fut_waiter", id="task-waiter"),
    ],
)
def test_the_scan_finds_each_way_of_reading_them(source: str) -> None:
    assert internal_uses(source, "x.py")


def test_the_scan_leaves_public_names_alone() -> None:
    assert internal_uses("loop.call_soon(f); ready = event.is_set(); self.ready = 1", "x.py") == []


def test_operator_reads_no_event_loop_internals() -> None:
    found = [
        use
        for path in sorted(OPERATOR.rglob("*.py"))
        for use in internal_uses(path.read_text(encoding="utf-8"), str(path.relative_to(OPERATOR)))
    ]
    assert found == []
