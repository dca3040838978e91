"""The node × plugin matrix ``capacity -o html`` draws: gathered from the same attempts as the
count, consistent with the count's own answer, and every user-given name escaped on the page."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from typing import Any

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.capacity import CapacityResult, count_copies
from kopf_scheduler.sim.capacity_html import render_capacity_html, render_drain_html
from kopf_scheduler.sim.drain import find_removable_nodes
from kopf_scheduler.sim.scenario import load_scenario
from kopf_scheduler.sim.templates import load_template
from tests.sim.support import node, pod, write_yaml

Raw = dict[str, Any]
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
HOSTILE = "web<script>alert(1)</script>"


def _cluster() -> list[Raw]:
    return [
        node("a", cpu="4"),
        node("b", cpu="3"),
        node("tainted", cpu="8", taints=[TAINT]),
        pod("busy-a", cpu="1500m", node_name="a"),
    ]


def _count(tmp_path: Path, cluster: list[Raw], name: str = "web", **options: Any) -> CapacityResult:
    scenario = load_scenario([write_yaml(tmp_path / "cluster.yaml", cluster)])
    template = load_template(
        write_yaml(tmp_path / "web.yaml", [pod(name, cpu="1", scheduler=None)])
    )
    return sim_loop.run(count_copies(default_config(), scenario, [template], **options))


def test_the_matrix_is_gathered_only_when_asked_for(tmp_path: Path) -> None:
    assert _count(tmp_path, _cluster()).counts[0].matrix is None
    assert _count(tmp_path, _cluster(), matrix=True).counts[0].matrix is not None


def test_the_matrix_agrees_with_the_count(tmp_path: Path) -> None:
    result = _count(tmp_path, _cluster(), matrix=True)
    count = result.counts[0]
    matrix = count.matrix
    assert matrix is not None
    # Free CPU: a 2.5 (2 copies), b 3 (3 copies), the tainted node none of them may use.
    assert dict(count.nodes) == {"a": 2, "b": 3}
    assert list(matrix.rows) == ["a", "b", "tainted"]
    tainted = matrix.rows["tainted"]
    # Every attempt examined every node (3 nodes: all are), and the taint filtered each one.
    assert {row.examined for row in matrix.rows.values()} == {matrix.attempts}
    assert tainted.cells["TaintToleration"].filtered == matrix.attempts
    assert tainted.feasible == 0
    for row in matrix.rows.values():
        filtered = sum(cell.filtered for cell in row.cells.values())
        assert filtered + row.feasible == row.examined
    # A node was chosen among the feasible ones by every successful attempt.
    assert sum(row.feasible for row in matrix.rows.values()) >= count.copies
    # The copy that stopped the count: each node's last verdict is the failure summary.
    last = Counter(
        reason
        for row in matrix.rows.values()
        if row.last_verdict is not None
        for reason in row.last_verdict.reasons
    )
    assert (
        last
        == count.fail_summary
        == Counter({"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 1})
    )
    # Utilisation: before the first copy and after the last, in millicores.
    a, b = matrix.rows["a"], matrix.rows["b"]
    assert a.before is not None and a.after is not None
    assert (a.before.requested["cpu"], a.after.requested["cpu"], a.after.allocatable["cpu"]) == (
        1500,
        3500,
        4000,
    )
    assert b.before is not None and b.after is not None
    assert (b.before.requested["cpu"], b.after.requested["cpu"]) == (0, 3000)


def test_names_from_the_cluster_are_shown_as_text(tmp_path: Path) -> None:
    hostile_node = "b<img src=x onerror=alert(2)>"
    cluster = [node("a", cpu="2"), node(hostile_node, cpu="1")]
    page = render_capacity_html(_count(tmp_path, cluster, name=HOSTILE, matrix=True))
    assert page.count("<script") == 1  # the page's own
    assert "<img" not in page
    assert html.escape(HOSTILE) in page
    assert html.escape(hostile_node) in page


def test_the_page_fetches_nothing(tmp_path: Path) -> None:
    page = render_capacity_html(_count(tmp_path, _cluster(), matrix=True))
    assert "default-src 'none'" in html.unescape(page)
    assert not re.search(r"\b(src|href)=", page)


def test_the_drain_page_lists_every_node_with_its_verdict(tmp_path: Path) -> None:
    cluster = [
        node("big", cpu="8"),
        node("small", cpu="2"),
        pod("on-small", cpu="1", node_name="small"),
        pod("on-big", cpu="7", node_name="big"),
    ]
    scenario = load_scenario([write_yaml(tmp_path / "cluster.yaml", cluster)])
    drained = sim_loop.run(find_removable_nodes(default_config(), scenario))
    page = render_drain_html(drained)
    verdicts = dict(re.findall(r'data-node="([^"]+)".*?data-removable="(\w+)"', page))
    assert verdicts == {entry.node: str(entry.removable).lower() for entry in drained.nodes}
    assert set(verdicts) == {"big", "small"}
