"""``simulate -o html`` and ``simulate --compare-config -o html`` in headless chromium: each page
renders without a console error or a request, and shows what the JSON answer of the same run
says — a row per pod, a row per node with its utilisation at the start and at the end, a node ×
plugin matrix per pod with the JSON's verdicts and scores, the preemptions, and for a
configuration change the moved pods and the scores A → B."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import environment, kopf_scheduler
from tests.report.support import HOSTILE_NAME, HOSTILE_NODE, save_screenshot
from tests.sim.support import node, pod, write_yaml
from tests.sim.test_compare import fit_config, two_nodes_one_busy

pytestmark = pytest.mark.browser


def _run(home: Path, *args: str, code: int = 0) -> str:
    """``kopf-scheduler simulate ARGS``'s output, run in ``home`` (paths may be relative)."""
    outcome = kopf_scheduler("simulate", *args, env=environment(home), cwd=home)
    assert outcome.code == code, outcome.stderr
    return outcome.stdout


def _cells(page: Any, selector: str, script: str) -> list[Any]:
    return list(page.eval_on_selector_all(selector, script))


def test_the_simulation_page_shows_the_json_report(tmp_path: Path, open_report: Any) -> None:
    # The bundled preemption demo: a pod that preempts, so every section has something to show.
    report = json.loads(_run(tmp_path, "--explain", "-o", "json"))
    opened = open_report(_run(tmp_path, "-o", "html"), "simulate.html")
    page = opened.page
    statuses = _cells(
        page,
        "#pods tbody tr",
        "rows => rows.map(r => [r.getAttribute('data-pod'),"
        " r.querySelector('[data-status]').getAttribute('data-status')])",
    )
    assert statuses == [[f"{p['namespace']}/{p['name']}", p["status"]] for p in report["pods"]]
    assert page.locator("#summary").get_attribute("data-preempted") == str(
        report["summary"]["preempted"]
    )
    victims = _cells(page, "#preemptions tbody tr", "rows => rows.map(r => r.cells[2].textContent)")
    assert victims == [", ".join(entry["victims"]) for entry in report["preemptions"]]
    assert victims  # the demo preempts

    last = {attempt["pod"]: attempt for attempt in report["attempts"]}
    attempts = Counter(attempt["pod"] for attempt in report["attempts"])
    sections = page.locator("section.matrix")
    assert sections.count() == len(last)
    for index, (name, attempt) in enumerate(last.items()):
        # The last attempt first, each earlier one folded away below it.
        assert sections.nth(index).get_attribute("data-pod") == name
        assert sections.nth(index).locator("table").count() == attempts[name]
        shown = _cells(
            page,
            f"#matrix-{index} tbody tr",
            "rows => rows.map(r => [r.getAttribute('data-node'),"
            " Array.from(r.querySelectorAll('td[data-plugin]')).map(c =>"
            " [c.getAttribute('data-plugin'), c.getAttribute('data-verdict'),"
            " c.getAttribute('data-score')])])",
        )
        expected = []
        for verdict in attempt["nodes"]:
            cells = {
                plugin: [plugin, verdict_kind, score]
                for plugin, verdict_kind, score in next(
                    cells for node_name, cells in shown if node_name == verdict["node"]
                )
            }
            if verdict["feasible"]:
                scores = {p: str(s) for p, s in verdict["scores"].items()}
                assert {p: c[2] for p, c in cells.items() if c[2]} == scores
            else:
                assert [p for p, c in cells.items() if c[1] == "filtered"] == [verdict["plugin"]]
            expected.append(verdict["node"])
        assert [node_name for node_name, _ in shown] == expected
    assert opened.problems == []
    save_screenshot(page, tmp_path / "simulate-report.png")


def test_the_utilisation_table_shows_the_json_numbers(tmp_path: Path, open_report: Any) -> None:
    # The demo: node-c gives up a 3.5-CPU victim to a 3-CPU preemptor, so one node ends lower.
    section = json.loads(_run(tmp_path, "-o", "json"))["utilisation"]
    opened = open_report(_run(tmp_path, "-o", "html"), "simulate.html")
    page = opened.page
    read = (
        "rows => rows.map(r => [r.getAttribute('data-node'),"
        " Array.from(r.querySelectorAll('td[data-resource]')).map(c =>"
        " [c.getAttribute('data-resource'), Number(c.getAttribute('data-before')),"
        " Number(c.getAttribute('data-after')), Number(c.getAttribute('data-allocatable'))])])"
    )

    def expected(entry: dict[str, Any]) -> list[Any]:
        return [
            [resource, entry["before"][resource], entry["after"][resource], offered]
            for resource, offered in entry["allocatable"].items()
        ]

    shown = _cells(page, "#utilisation tbody tr", read)
    assert shown == [[entry["node"], expected(entry)] for entry in section["nodes"]]
    [[_, total]] = _cells(page, "#utilisation tfoot tr", read)
    assert total == expected(section["total"])
    assert any(entry["after"]["cpu"] < entry["before"]["cpu"] for entry in section["nodes"])
    # A click on the CPU head sorts the nodes by their share of CPU at the end; the total stays.
    page.locator("#utilisation thead th", has_text="CPU").click()
    by_share = sorted(section["nodes"], key=lambda e: e["after"]["cpu"] / e["allocatable"]["cpu"])
    order = _cells(page, "#utilisation tbody tr", "rows => rows.map(r => r.dataset.node)")
    assert order == [entry["node"] for entry in by_share]
    assert page.locator("#utilisation tfoot tr").count() == 1
    assert opened.problems == []


def test_names_in_the_simulation_page_are_text(tmp_path: Path, open_report: Any) -> None:
    scenario = write_yaml(
        tmp_path / "cluster.yaml",
        [node(HOSTILE_NODE, cpu="2"), pod(HOSTILE_NAME, cpu="1")],
    )
    opened = open_report(_run(tmp_path, str(scenario), "-o", "html"), "simulate.html")
    page = opened.page
    assert page.locator("#pods tbody tr td").first.text_content() == f"default/{HOSTILE_NAME}"
    assert page.locator("#matrix-0 tbody tr").get_attribute("data-node") == HOSTILE_NODE
    assert page.locator("#utilisation tbody tr td").first.text_content() == HOSTILE_NODE
    assert page.locator("img").count() == 0
    assert page.evaluate("typeof window.injected") == "undefined"
    assert opened.problems == []


def test_the_comparison_page_shows_the_json_answer(tmp_path: Path, open_report: Any) -> None:
    scenario = two_nodes_one_busy(tmp_path)
    args = [
        str(scenario),
        "--compare-config",
        fit_config(tmp_path / "spread.yaml", scoringStrategy={"type": "LeastAllocated"}).name,
        fit_config(tmp_path / "pack.yaml", scoringStrategy={"type": "MostAllocated"}).name,
    ]
    answer = json.loads(_run(tmp_path, *args, "-o", "json", code=3))
    opened = open_report(_run(tmp_path, *args, "-o", "html", code=3), "compare.html")
    page = opened.page
    assert page.locator("#verdict").text_content() == "Decisions changed"
    moved = _cells(
        page,
        "#moved tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))",
    )
    assert moved == [
        [entry["pod"], f"Bound {entry['a']['node']}", f"Bound {entry['b']['node']}"]
        for entry in answer["moved"]
    ]
    [difference] = answer["scoreDifferences"]
    shown = _cells(
        page,
        "#scores-0 tbody tr",
        "rows => rows.map(r => [r.getAttribute('data-node'),"
        " Array.from(r.querySelectorAll('td[data-plugin]')).map(c =>"
        " [c.getAttribute('data-plugin'), c.getAttribute('data-a'), c.getAttribute('data-b')])])",
    )
    assert shown == [
        [node_name, [[p, str(v["a"]), str(v["b"])] for p, v in plugins.items()]]
        for node_name, plugins in difference["nodes"].items()
    ]
    assert opened.problems == []
    save_screenshot(page, tmp_path / "compare-report.png")
