"""``capacity -o html`` in headless chromium: the page renders without a console error or a
single request, its node × plugin matrix has a row per node with the numbers of the JSON answer
of the same run, its columns sort and its filter hides rows, and names are shown as text."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import environment, kopf_scheduler
from tests.report.support import HOSTILE_NAME, HOSTILE_NODE, save_screenshot
from tests.sim.support import node, pod, write_yaml

pytestmark = pytest.mark.browser

Raw = dict[str, Any]
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def _run(home: Path, *args: str) -> str:
    """``kopf-scheduler capacity ARGS``'s output, run as a user runs it (Playwright's sync API
    keeps an event loop running in this process, so the simulation gets a process of its own)."""
    outcome = kopf_scheduler("capacity", *args, env=environment(home))
    assert outcome.code == 0, outcome.stderr
    return outcome.stdout


def _files(tmp_path: Path, small: str = "small", template: str = "web") -> list[str]:
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        [
            node("a", cpu="4"),
            node("b", cpu="3"),
            node("tainted", cpu="8", taints=[TAINT]),
            node(small, cpu="1500m"),
            pod("busy-a", cpu="1500m", node_name="a"),
        ],
    )
    template = write_yaml(tmp_path / "web.yaml", [pod(template, cpu="1", scheduler=None)])
    return [str(cluster), "--podspec", str(template)]


def _column(page: Any, attribute: str) -> list[str]:
    return [
        str(value)
        for value in page.eval_on_selector_all(
            "#matrix-0 tbody tr:not([hidden])",
            f"rows => rows.map(row => row.getAttribute('{attribute}'))",
        )
    ]


def _copies(page: Any) -> list[int]:
    return [
        int(text)
        for text in page.eval_on_selector_all(
            "#matrix-0 tbody tr:not([hidden]) td[data-column=copies]",
            "cells => cells.map(cell => cell.textContent)",
        )
    ]


def test_the_matrix_shows_the_numbers_of_the_json_answer(tmp_path: Path, open_report: Any) -> None:
    files = _files(tmp_path)
    review = json.loads(_run(tmp_path, *files, "-o", "json"))
    opened = open_report(_run(tmp_path, *files, "-o", "html"), "capacity.html")
    page = opened.page
    status = review["status"]
    # One row per node, each with the copies the JSON places there.
    assert sorted(_column(page, "data-node")) == sorted(["a", "b", "tainted", "small"])
    on_nodes = {
        entry["nodeName"]: entry["replicas"] for entry in status["pods"][0]["replicasOnNodes"]
    }
    shown = dict(zip(_column(page, "data-node"), _copies(page), strict=True))
    assert shown == {name: on_nodes.get(name, 0) for name in shown}
    # Free CPU: a 2.5, b 3, the small node 1.5; the tainted node takes none.
    assert sum(shown.values()) == status["replicas"] == 6
    summary = page.locator("li[data-template]")
    assert summary.get_attribute("data-copies") == str(status["replicas"])
    assert page.locator("#stop").text_content() == (
        f"{status['failReason']['failType']}: {status['failReason']['failMessage']}"
    )
    # "Next copy": per node the reasons of the copy that stopped the count; summed over the
    # nodes they are the JSON's failSummary.
    reasons = page.eval_on_selector_all(
        "#matrix-0 td[data-stop]", "cells => cells.map(c => c.getAttribute('data-reasons') || '')"
    )
    stopped = Counter(reason for text in reasons for reason in text.split("\n") if reason)
    assert stopped == {
        entry["reason"]: entry["count"] for entry in status["pods"][0]["failSummary"]
    }
    # The tainted node was filtered out of every attempt by TaintToleration.
    tainted = page.locator('#matrix-0 tr[data-node="tainted"] td[data-plugin="TaintToleration"]')
    examined = page.locator('#matrix-0 tr[data-node="tainted"] td.num').nth(1).text_content()
    assert tainted.get_attribute("data-filtered") == examined
    assert int(examined or 0) >= 7  # six copies placed, one that failed
    assert opened.problems == []
    save_screenshot(page, tmp_path / "capacity-report.png")


def test_columns_sort_and_the_filter_hides_rows(tmp_path: Path, open_report: Any) -> None:
    opened = open_report(_run(tmp_path, *_files(tmp_path), "-o", "html"), "capacity.html")
    page = opened.page
    copies_head = page.locator("#matrix-0 thead th", has_text="Copies")
    copies_head.click()
    assert copies_head.get_attribute("aria-sort") == "ascending"
    ascending = _copies(page)
    assert ascending == sorted(ascending) and len(set(ascending)) > 1
    copies_head.click()
    assert _copies(page) == sorted(ascending, reverse=True)
    page.locator("#matrix-0 thead th").first.click()
    assert _column(page, "data-node") == sorted(_column(page, "data-node"))

    page.locator('input.filter[data-table="matrix-0"]').fill("AIN")
    assert _column(page, "data-node") == ["tainted"]
    assert page.locator("#matrix-0-shown").text_content() == "1"
    page.locator('input.filter[data-table="matrix-0"]').fill("")
    assert len(_column(page, "data-node")) == 4
    assert opened.problems == []


def test_names_from_the_cluster_are_shown_as_text(tmp_path: Path, open_report: Any) -> None:
    files = _files(tmp_path, small=HOSTILE_NODE, template=HOSTILE_NAME)
    opened = open_report(_run(tmp_path, *files, "-o", "html"), "capacity.html")
    page = opened.page
    cell = page.locator("#matrix-0 tbody tr td:first-child", has_text="small")
    assert cell.text_content() == HOSTILE_NODE
    assert page.locator("img").count() == 0
    assert page.evaluate("typeof window.injected") == "undefined"
    assert HOSTILE_NAME in (page.locator("section.matrix h2").text_content() or "")
    assert opened.problems == []


def test_the_drain_page_shows_the_json_answer(tmp_path: Path, open_report: Any) -> None:
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        [
            node("big", cpu="8"),
            node("small", cpu="2"),
            node("tiny", cpu="1"),
            pod("on-small", cpu="1", node_name="small"),
            pod("on-big", cpu="7", node_name="big"),
        ],
    )
    review = json.loads(_run(tmp_path, str(cluster), "--drain", "-o", "json"))
    opened = open_report(_run(tmp_path, str(cluster), "--drain", "-o", "html"), "drain.html")
    verdicts = opened.page.eval_on_selector_all(
        "#drain tbody tr",
        "rows => rows.map(r => [r.getAttribute('data-node'),"
        " r.querySelector('[data-removable]').getAttribute('data-removable')])",
    )
    assert verdicts == [
        [entry["nodeName"], str(entry["removable"]).lower()] for entry in review["nodes"]
    ]
    assert {name for name, removable in verdicts if removable == "true"} == set(
        review["removableNodes"]
    )
    assert review["removableNodes"]  # the answer is not trivially empty
    assert opened.problems == []
