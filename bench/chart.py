"""The chart in docs/benchmarks.md: kopf-scheduler / kube-scheduler ratios per scenario.

Only the end-to-end pairs have a ratio (in process there is no kube-scheduler to run beside
ours). For each scenario, at each client QPS/burst, the chart takes the newest pair in
``bench/results/`` that measured it, so a scenario last run two days ago still shows, with its
date in the label; the SVG's description names the file behind every group. The checkpoint of
an unfinished run is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doccharts.bars import BarChart, ChartError, Group, render

from bench.report import REPO, RESULTS_DIR
from bench.scenarios import SCENARIOS

OUT = REPO / "docs" / "images" / "bench-ratios.svg"
PARTIAL = "partial-"
"""The checkpoint of a run still going or interrupted (``partial-<profile>.json``): not drawn."""

FIGURES = (
    ("throughput_average", "pods/s avg"),
    ("create_to_bound_p50", "create→bound p50"),
    ("create_to_bound_p99", "create→bound p99"),
    ("cpu_seconds", "scheduler CPU s"),
    ("peak_rss_mb", "peak RSS"),
)
"""The ratios drawn (keys of a pair's ``ratios``, as ``bench.e2e.ratios`` names them), in order."""


@dataclass(frozen=True)
class Pair:
    """The newest end-to-end pair of one scenario at one client setting, and where it is."""

    label: str
    qps: float
    burst: int
    date: str
    file: str
    ratios: dict[str, float | None]
    scenario: dict[str, Any]


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ChartError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise ChartError(f"{path}: not a results object")
    return data


def latest_pairs(results_dir: Path) -> list[Pair]:
    """The newest pair with ratios of every (scenario, QPS, burst) in the results files."""
    newest: dict[tuple[str, float, int], Pair] = {}
    for path in sorted(results_dir.glob("*.json")):
        if path.name.startswith(PARTIAL):
            continue
        results = _load(path)
        date = results.get("date")
        if not isinstance(date, str):
            continue  # not a profile's results (a before-and-after comparison of revisions)
        for pair in results.get("e2e") or []:
            ratios = pair.get("ratios")
            if "error" in pair or not ratios:
                continue
            try:
                key = (pair["scenario"]["label"], float(pair["qps"]), int(pair["burst"]))
            except (KeyError, TypeError, ValueError) as error:
                raise ChartError(f"{path}: an end-to-end pair without a valid {error}") from None
            if key not in newest or newest[key].date <= date:
                newest[key] = Pair(*key, date, path.name, ratios, pair["scenario"])
    order = list(SCENARIOS)

    def position(pair: Pair) -> tuple[int, float, float]:
        known = pair.scenario["id"] in order
        rank = order.index(pair.scenario["id"]) if known else len(order)
        return rank, -float(pair.scenario.get("ratio", 1.0)), -pair.qps

    return sorted(newest.values(), key=position)


def ratio_chart(pairs: list[Pair], source: str) -> BarChart:
    if not pairs:
        raise ChartError(f"no end-to-end pair with ratios in {source}")
    files: dict[str, list[str]] = {}
    groups = []
    for pair in pairs:
        label = f"{pair.label} qps {pair.qps:g}/{pair.burst}, {pair.date.removesuffix(' UTC')}"
        files.setdefault(pair.file, []).append(f"{pair.label} {pair.qps:g}/{pair.burst}")
        groups.append(Group(label, [pair.ratios.get(key) for key, _ in FIGURES]))
    origins = "; ".join(f"{name}: {', '.join(labels)}" for name, labels in sorted(files.items()))
    return BarChart(
        title="kopf-scheduler / kube-scheduler v1.34.10, end to end",
        subtitle=(
            "Pods/s above 1 means ours bound faster; create→bound, CPU and RSS below 1 mean "
            "ours took less. A dash: not measured."
        ),
        description=(
            "Ratios kopf-scheduler / kube-scheduler v1.34.10 of the end-to-end pairs in "
            f"{source}: for each scenario at each client QPS/burst, the newest pair that "
            "measured it (date and time in the label; S2@0.2 is S2 scaled by 0.2). Figures: "
            + ", ".join(name for _, name in FIGURES)
            + f". Result files: {origins}."
        ),
        value_label="ours / upstream",
        category_label="scenario, client QPS/burst, time of the pair (UTC)",
        series=[name for _, name in FIGURES],
        groups=groups,
        reference=1.0,
        reference_label="1 = equal",
    )


def write(results_dir: Path = RESULTS_DIR, out: Path = OUT) -> Path:
    """Draw the chart from ``results_dir`` into ``out``; :class:`ChartError` when it cannot."""
    results_dir = results_dir.resolve()
    source = str(results_dir.relative_to(REPO) if results_dir.is_relative_to(REPO) else results_dir)
    svg = render(ratio_chart(latest_pairs(results_dir), source))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg)
    return out
