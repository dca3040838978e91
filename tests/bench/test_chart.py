"""The ratio chart of docs/benchmarks.md: the newest end-to-end pair per scenario and setting."""

from __future__ import annotations

import json
import signal
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import main

from bench import chart

SVG = "{http://www.w3.org/2000/svg}"


def pair(label: str, qps: float, burst: int, throughput: float, **extra: Any) -> dict[str, Any]:
    scenario_id = label.partition("@")[0]
    ratios = {
        "throughput_average": throughput,
        "throughput_p50": 1.0,
        "create_to_bound_p50": 0.5,
        "create_to_bound_p99": None,
        "api_requests": 1.0,
        "cpu_seconds": 0.75,
        "peak_rss_mb": 1.25,
    }
    return {
        "mode": "e2e",
        "scenario": {"label": label, "id": scenario_id, "ratio": 1.0},
        "qps": qps,
        "burst": burst,
        "runs": {},
        "ratios": ratios,
        **extra,
    }


def results_file(directory: Path, name: str, date: str | None, e2e: list[Any]) -> None:
    data: dict[str, Any] = {"profile": name, "inprocess": [], "e2e": e2e}
    if date is not None:
        data["date"] = date
    (directory / f"{name}.json").write_text(json.dumps(data))


@pytest.fixture(autouse=True)
def sigterm_handler_kept() -> Any:
    """``main`` makes SIGTERM exit; the test process keeps its own handler."""
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)


def bars(svg: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == "bar"]


def test_the_newest_pair_of_each_scenario_and_setting(tmp_path: Path) -> None:
    results_file(tmp_path, "old", "2026-11-22 02:17 UTC", [pair("S1", 5000, 5000, 0.5)])
    results_file(
        tmp_path,
        "new",
        "2026-11-27 14:29 UTC",
        [pair("S1", 5000, 5000, 1.1), pair("S1", 50, 100, 0.9)],
    )
    results_file(tmp_path, "s4", "2026-11-24 00:51 UTC", [pair("S4", 5000, 5000, 1.6)])
    results_file(
        tmp_path, "broken", "2026-11-28 01:00 UTC", [pair("S4", 5000, 5000, 9.0, error="boom")]
    )
    results_file(tmp_path, "revisions", None, [])  # a comparison of revisions: no date, no pairs
    # the checkpoint of a run still going
    results_file(tmp_path, "partial-quick", "2026-11-28 02:00 UTC", [pair("S1", 50, 100, 7.0)])
    out = tmp_path / "images" / "ratios.svg"

    chart.write(tmp_path, out)

    svg = out.read_text()
    root = ET.fromstring(svg)
    drawn = bars(svg)
    groups = list(dict.fromkeys(b.get("data-group") for b in drawn))
    assert groups == [
        "S1 qps 5000/5000, 2026-11-27 14:29",
        "S1 qps 50/100, 2026-11-27 14:29",
        "S4 qps 5000/5000, 2026-11-24 00:51",
    ]
    first = {b.get("data-series"): float(b.get("data-value", "")) for b in drawn[:4]}
    # create→bound p99 was not measured: no bar, the other four figures each have one
    assert first == {
        "pods/s avg": 1.1,
        "create→bound p50": 0.5,
        "scheduler CPU s": 0.75,
        "peak RSS": 1.25,
    }
    assert len(drawn) == 3 * 4
    heights = {round(float(b.get("height", "")) / float(b.get("data-value", "")), 6) for b in drawn}
    assert len(heights) == 1
    description = root.findtext(f"{SVG}desc") or ""
    assert "new.json: S1 5000/5000, S1 50/100; s4.json: S4 5000/5000." in description
    assert "old.json" not in description and "broken.json" not in description
    assert "partial" not in description


def test_a_scenario_label_is_escaped(tmp_path: Path) -> None:
    results_file(tmp_path, "odd", "2026-11-27 14:29 UTC", [pair("S<&>", 50, 100, 1.0)])
    out = tmp_path / "ratios.svg"
    chart.write(tmp_path, out)
    svg = out.read_text()
    assert "S<&>" not in svg
    assert {b.get("data-group") for b in bars(svg)} == {"S<&> qps 50/100, 2026-11-27 14:29"}


def test_no_pair_to_draw_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_file(tmp_path, "inprocess-only", "2026-11-27 14:29 UTC", [])
    out = tmp_path / "ratios.svg"
    assert main(["chart", "--results", str(tmp_path), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error == f"bench: chart: no end-to-end pair with ratios in {tmp_path}\n"
    assert not out.exists()


def test_a_results_file_that_is_not_json_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cut.json").write_text('{"date": "2026-11-27')
    assert main(["chart", "--results", str(tmp_path), "--out", str(tmp_path / "x.svg")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"bench: chart: {tmp_path / 'cut.json'}: ")
    assert error.count("\n") == 1 and "Traceback" not in error
