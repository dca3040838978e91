"""The scheduler_perf results as the docs show them, and a long run made in parts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from bench.upstream import cli, suite, table
from doccharts.bars import render


def _run(
    average: float | None,
    *,
    met: bool | None = None,
    threshold: float | None = None,
    ok: bool = True,
    seconds: float = 5.0,
    samples: int = 9,
) -> dict[str, Any]:
    throughput = (
        {"samples": 0}
        if average is None
        else {"samples": samples, "Average": average, "Perc50": average + 1}
    )
    window = {
        "scheduled": 1000,
        "seconds": seconds,
        "SchedulingThroughput": throughput,
        "scheduler_metrics": {
            "pod_scheduling_sli_duration_s": {"count": 1000, "p50": 0.004, "p99": 0.0305},
            "attempt_duration_scheduled_s": {"count": 1000, "p50": 0.001, "p99": 0.0021},
        },
    }
    run: dict[str, Any] = {
        "ok": ok,
        "collected": [window] if ok else [],
        "threshold": {"threshold": threshold, "met": met},
    }
    if not ok:
        run["error"] = "OpError: pods scheduled in ns: 10 of 20"
    return run


def _record(
    name: str, kopf: dict[str, Any], upstream: dict[str, Any], ratio: float | None
) -> dict[str, Any]:
    return {
        "workload": name,
        "runs": {"kopf": kopf, "upstream": upstream},
        "throughput_ratio": ratio,
    }


def _results() -> dict[str, Any]:
    return {
        "parts": [
            {
                "date": "2026-11-30T05:28:00Z",
                "command": "python -m bench upstream --resume",
                "machine": {"nproc": 2, "cpu_model": "AMD EPYC", "ram_gib": 23.5},
                "versions": {"kopf_scheduler_commit": "abc123", "kubernetes": "1.34.10"},
            },
        ],
        "workloads": [
            _record("Fast/500Nodes", _run(300.0, met=True, threshold=200.0), _run(250.0), 1.2),
            _record("Slow/500Nodes", _run(100.0, met=False, threshold=200.0), _run(250.0), 0.4),
            _record("Level/500Nodes", _run(250.0), _run(260.0), 0.962),
            _record("Tiny/5Nodes", _run(None, seconds=0.8), _run(None, seconds=0.4), None),
            _record("Instant/1Node", _run(None, seconds=0.0), _run(None, seconds=0.4), None),
            _record("Broken/500Nodes", _run(1.0, ok=False), _run(250.0), None),
        ],
        "skipped": [
            {"workload": "Claims/500nodes", "reasons": ["op 5 allocResourceClaims"]},
            {"workload": "Claims/full", "reasons": ["op 5 allocResourceClaims"]},
        ],
    }


def test_each_row_says_which_bars_kopf_scheduler_clears() -> None:
    text = table.markdown(_results())
    lines = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    assert lines["Fast/500Nodes"].endswith("| both |")
    assert "| 300 / 301 · 200 | 250 / 251 · 200 | 1.20 | 200 (met) |" in lines["Fast/500Nodes"]
    assert lines["Slow/500Nodes"].endswith("| below threshold and 1.0× |")
    assert lines["Level/500Nodes"].endswith(
        "| 0.96 | – | 4.0 / 30.5 · 2.1 | 4.0 / 30.5 · 2.1 | below 1.0× |"
    )
    assert lines["Tiny/5Nodes"].endswith(
        "| – / – · 1250 | – / – · 2500 | 0.50 (window) | – | 4.0 / 30.5 · 2.1 "
        "| 4.0 / 30.5 · 2.1 | below 1.0× |"
    )
    assert lines["Instant/1Node"].endswith(
        "| – | – | 4.0 / 30.5 · 2.1 | 4.0 / 30.5 · 2.1 | no ratio |"
    )
    assert "Broken/500Nodes" not in lines
    assert "5 workloads run by both schedulers" in text
    assert "in 1 of them." in text
    assert (
        "- Failed: Broken/500Nodes (kopf: OpError: pods scheduled in ns: 10 of 20; upstream "
        "finished: 1000 pods in 5.0 s, throughput avg 250.0 p50 251.0 (9 samples))" in text
    )
    assert "- Not run (2): Claims/500nodes, Claims/full. Why: op 5 allocResourceClaims" in text
    assert (
        "- Part 1, 2026-11-30T05:28:00Z: `python -m bench upstream --resume` at "
        "kopf-scheduler `abc123`, Kubernetes 1.34.10, on 2 CPUs (AMD EPYC), 23.5 GiB" in text
    )


def test_a_run_cut_short_by_the_time_limit_is_listed_with_what_it_measured() -> None:
    cut = _run(4.2, seconds=1800.0, samples=1700)
    cut["ok"] = False
    cut["error"] = "RunLimitError: ops still running after 1800 s (upstream's per-test timeout)"
    cut["collected"][0].update(scheduled=7448, cut_short=True)
    results = {"workloads": [_record("Crawl/5kNodes", _run(18.6, seconds=543.5), cut, None)]}
    text = table.markdown(results)
    assert "0 workloads run by both schedulers" in text
    assert (
        "- Failed: Crawl/5kNodes (kopf finished: 1000 pods in 543.5 s, throughput avg 18.6 "
        "p50 19.6 (9 samples); upstream: RunLimitError: ops still running after 1800 s "
        "(upstream's per-test timeout); 7448 pods in 1800.0 s, cut short, throughput avg 4.2 "
        "p50 5.2 (1700 samples))" in text
    )


def test_a_window_its_samples_barely_cover_is_compared_by_its_window_rate() -> None:
    """Two samples over a 61 s window: the sampler caught up in jumps, so its average (far above
    any rate the window allows) is shown but neither compared nor checked against the threshold."""
    stalled = _run(5634.0, met=True, threshold=2000.0, seconds=61.0, samples=2)
    stalled["threshold"]["bucket"] = "Average"
    level = _run(330.0, seconds=60.0, samples=59)
    line = table._table_line(table.row(_record("Stalled/1Node", stalled, level, 17.1)), 1)
    assert "| 5634 / 5635 (2 samples) · 16.4 | 330 / 331 · 16.7 | 0.98 (window) " in line
    assert line.endswith(
        "| 2000 (not met) | 4.0 / 30.5 · 2.1 | 4.0 / 30.5 · 2.1 | below threshold and 1.0× |"
    )
    regular = _run(5634.0, met=True, threshold=2000.0, seconds=61.0, samples=30)
    line = table._table_line(table.row(_record("Regular/1Node", regular, level, 17.1)), 1)
    assert "| 5634 / 5635 · 16.4 | 330 / 331 · 16.7 | 17.10 | 2000 (met) " in line


def test_rows_name_their_part_once_a_run_has_more_than_one() -> None:
    results = _results()
    results["parts"].append({**results["parts"][0], "date": "2026-12-01T05:00:00Z"})
    results["workloads"][1]["part"] = 1
    text = table.markdown(results)
    assert "| Fast/500Nodes (part 1) |" in text
    assert "| Slow/500Nodes (part 2) |" in text
    assert "- Part 2, 2026-12-01T05:00:00Z:" in text


def test_the_section_between_the_markers_is_replaced_and_nothing_else() -> None:
    document = f"intro\n{table.BEGIN_MARKER}\nold table\n{table.END_MARKER}\nafter\n"
    replaced = table.replace_section(document, table.markdown(_results()))
    assert replaced.startswith(f"intro\n{table.BEGIN_MARKER}\n")
    assert replaced.endswith(f"{table.END_MARKER}\nafter\n")
    assert "old table" not in replaced
    with pytest.raises(table.ReportError):
        table.replace_section("no markers here\n", "x")


def test_the_chart_draws_both_ratios_of_every_complete_workload() -> None:
    chart = table.ratio_chart(_results())
    values = {group.label: tuple(group.values) for group in chart.groups}
    assert values == {
        "Fast/500Nodes": (1.2, 1.5),
        "Slow/500Nodes": (0.4, 0.5),
        "Level/500Nodes": (0.962, None),
        "Tiny/5Nodes": (0.5, None),
        "Instant/1Node": (None, None),
    }
    ET.fromstring(render(chart))


def test_the_report_writes_the_docs_section_and_the_chart(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_results()))
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n{table.BEGIN_MARKER}\n{table.END_MARKER}\n")
    chart = tmp_path / "images" / "ratios.svg"
    cli.report(results, doc, chart)
    assert "| Fast/500Nodes |" in doc.read_text()
    assert ET.parse(chart).getroot().tag.endswith("svg")


def test_the_repository_document_has_the_section() -> None:
    document = cli.DOC.read_text()
    assert document.count(table.BEGIN_MARKER) == document.count(table.END_MARKER) == 1


def test_a_resumed_run_keeps_every_workload_and_skips_the_complete_ones() -> None:
    earlier = _results()
    parts, kept, done = cli.resumed(earlier, ["kopf", "upstream"])
    assert parts == earlier["parts"]
    assert [r["workload"] for r in kept] == [r["workload"] for r in earlier["workloads"]]
    assert {r["part"] for r in kept} == {0}
    assert done == {
        "Fast/500Nodes",
        "Slow/500Nodes",
        "Level/500Nodes",
        "Tiny/5Nodes",
        "Instant/1Node",
    }
    assert "Broken/500Nodes" in cli.resumed(_results(), ["upstream"])[2]


def test_a_failed_workload_stays_in_the_file_until_it_is_run_again() -> None:
    _, kept, _ = cli.resumed(_results(), ["kopf", "upstream"])
    other = _record("Other/5Nodes", _run(10.0), _run(10.0), 1.0)
    names = [r["workload"] for r in cli.merged(kept, [other])]
    assert names == [r["workload"] for r in kept] + ["Other/5Nodes"]
    again = _record("Broken/500Nodes", _run(260.0), _run(250.0), 1.04)
    after = cli.merged(kept, [again])
    assert [r["workload"] for r in after] == [r["workload"] for r in kept]
    assert after[-1] is again


def test_a_file_from_before_parts_is_its_own_first_part() -> None:
    earlier = {
        "date": "2026-11-20T00:00:00Z",
        "command": "c",
        "machine": {},
        "versions": {},
        "workloads": [],
    }
    parts, kept, _ = cli.resumed(earlier, ["kopf"])
    assert parts == [
        {"date": "2026-11-20T00:00:00Z", "command": "c", "machine": {}, "versions": {}}
    ]
    assert kept == []


def test_resume_needs_the_file_it_goes_on_with(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    assert main(["upstream", "--resume", "--workload", "SchedulingBasic/5Nodes"]) == 2
    assert (
        capsys.readouterr().err == "error: --resume goes on with the file --out names; give --out\n"
    )


def test_a_results_file_that_is_not_one_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.__main__ import main

    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["upstream", "--report", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}: not the results of `python -m bench upstream`\n"
    )


def test_smallest_first_orders_by_the_nodes_and_pods_the_parameters_count() -> None:
    test_case = suite.TestCase(
        "Case",
        Path("performance-config.yaml"),
        labels=(),
        feature_gates={},
        ops=(),
        raw_workloads=(),
    )

    def workload(name: str, params: dict[str, Any]) -> suite.Workload:
        return suite.Workload(
            name, test_case, params, (), suite.Threshold(0), suite.ThresholdSelector(), {}
        )

    big = workload("big", {"initNodes": 5000, "measurePods": 10000, "duration": "10s"})
    small = workload("small", {"initNodes": 500, "measurePods": 1000, "gated": True})
    assert (big.size, small.size) == (15000, 1500)
