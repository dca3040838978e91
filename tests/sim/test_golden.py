"""Golden outputs of ``kopf-scheduler simulate`` on the bundled preemption demo (seed 0).

The demo is the first thing a newcomer runs, so its table, JSON and explanation output are
pinned byte for byte in ``tests/sim/data/`` (``demo.json``, ``demo.txt``, ``demo-explain.txt``).
The goldens were checked by hand against kube-scheduler's rules; ``test_demo_decisions`` repeats
the essential decisions as plain assertions so a regenerated golden cannot silently accept a
wrong outcome:

- web-1 (2 CPU) can preempt on node-a (db-1, but that breaks the db PDB), node-b (batch-b2) or
  node-c (batch-c1); the first two criteria tie for b and c, and the node whose victims started
  latest wins: node-b (batch-b2 started 23:00, batch-c1 at 21:00).
- web-2 (3 CPU) cannot use node-b any more (web-1 is nominated there), so node-c (batch-c1, no
  PDB violation) beats node-a (both db pods, two violations).
- the db pods are never touched; ``report`` (preemptionPolicy Never via its class) stays Pending
  with upstream's message; ``elsewhere`` belongs to another scheduler and is left alone.
- victims go after their 10 s grace period, so both web pods bind at 10 s of virtual time.

To regenerate the goldens after an intended change, run

    UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/sim/test_golden.py

which writes the files instead of comparing; review the diff before committing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main

DATA = Path(__file__).parent / "data"
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"
REPOSITORY = Path(__file__).resolve().parents[2]

NEVER_MESSAGE = (
    "0/3 nodes are available: 3 Insufficient cpu. "
    "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
)


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = main(["simulate", "--seed", "0", *args])
    out = capsys.readouterr().out
    assert code == 0
    return out


@pytest.mark.parametrize(
    ("args", "golden"),
    [
        pytest.param(("-o", "json"), "demo.json", id="json"),
        pytest.param((), "demo.txt", id="table"),
        pytest.param(("--explain",), "demo-explain.txt", id="table-explain"),
    ],
)
def test_demo_matches_golden(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], golden: str
) -> None:
    out = _simulate(capsys, *args)
    path = DATA / golden
    if UPDATE:
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8")


def _demo_report() -> dict[str, Any]:
    report: dict[str, Any] = json.loads((DATA / "demo.json").read_text(encoding="utf-8"))
    return report


def test_demo_decisions() -> None:
    report = _demo_report()
    pods = {p["name"]: p for p in report["pods"]}
    assert {name: (p["status"], p["node"]) for name, p in pods.items()} == {
        "batch-b1": ("Bound", "node-b"),
        "batch-b2": ("Preempted", "node-b"),
        "batch-c1": ("Preempted", "node-c"),
        "db-0": ("Bound", "node-a"),
        "db-1": ("Bound", "node-a"),
        "elsewhere": ("NotOurs", None),
        "report": ("Pending", None),
        "web-1": ("Bound", "node-b"),
        "web-2": ("Bound", "node-c"),
    }
    assert pods["report"]["message"] == NEVER_MESSAGE
    assert pods["report"]["priority"] == 1000
    assert pods["elsewhere"]["message"] == ""
    assert [
        (p["preemptor"], p["node"], p["victims"], p["pdbViolations"], p["decidedBy"])
        for p in report["preemptions"]
    ] == [
        ("default/web-1", "node-b", ["default/batch-b2"], 0, "LatestStartTime"),
        ("default/web-2", "node-c", ["default/batch-c1"], 0, "FewestPDBViolations"),
    ]
    assert report["summary"] == {
        "bound": 5,
        "pending": 1,
        "preempted": 2,
        "notOurs": 1,
        "virtualSeconds": report["summary"]["virtualSeconds"],
    }
    scheduled = {e["object"]: e["time"] for e in report["events"] if e["reason"] == "Scheduled"}
    assert scheduled == {"default/web-1": 10, "default/web-2": 10}
    assert not any(
        e["object"] in ("default/db-0", "default/db-1", "default/elsewhere")
        for e in report["events"]
    )


def test_demo_json_has_the_documented_shape() -> None:
    report = _demo_report()
    assert {"pods", "preemptions", "events", "summary"} <= set(report)
    for entry in report["pods"]:
        assert {
            "namespace",
            "name",
            "node",
            "nominatedNode",
            "status",
            "priority",
            "message",
        } <= set(entry)
        assert entry["status"] in ("Bound", "Pending", "Preempted", "NotOurs")
    for entry in report["preemptions"]:
        assert {"preemptor", "node", "victims", "pdbViolations"} <= set(entry)
        assert isinstance(entry["victims"], list)
    for entry in report["events"]:
        assert {"type", "reason", "object", "message"} <= set(entry)
    assert {"bound", "pending", "preempted"} <= set(report["summary"])


def test_demo_table_lists_every_pod_once() -> None:
    table = (DATA / "demo.txt").read_text(encoding="utf-8")
    pods_section = table.split("\n\n")[0].splitlines()
    assert pods_section[0] == "PODS"
    assert [line.split()[0] for line in pods_section[2:]] == [
        f"default/{p['name']}" for p in _demo_report()["pods"]
    ]
    assert "EXPLANATIONS" not in table
    assert "EXPLANATIONS" in (DATA / "demo-explain.txt").read_text(encoding="utf-8")


def test_json_stdout_is_only_the_report_in_a_fresh_process() -> None:
    """A fresh process has no logging configured yet: nothing but the report may reach stdout."""
    completed = subprocess.run(
        [sys.executable, "-m", "kopf_scheduler", "simulate", "--seed", "0", "-o", "json"],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY / "operator")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == _demo_report()
