"""The fidelity chart: per aspect, the share of scenarios identical, campaign by campaign, read
from the report and from its versions in git."""

from __future__ import annotations

import json
import signal
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from differential.__main__ import main
from differential.campaign import ScenarioResult
from differential.chart import fidelity_chart, write
from differential.generator import generate
from differential.history import WORKING_COPY, campaigns, parse
from differential.normalise import ASPECTS, Outcome
from differential.report import CampaignInfo, render
from doccharts.bars import render as render_svg

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def sigterm_handler_kept() -> Iterator[None]:
    """``main`` makes SIGTERM interrupt; the test process keeps its own handler."""
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)


def outcome(node: str) -> Outcome:
    result: Outcome = {aspect: {} for aspect in ASPECTS}
    result["placements"] = {"p01-web": node}
    return result


def campaign_results(identical: int, divergent: int) -> list[ScenarioResult]:
    one, two = outcome("node-1"), outcome("node-2")
    same = [ScenarioResult(generate(seed, "mixed"), [one], [one]) for seed in range(identical)]
    differ = [
        ScenarioResult(generate(seed, "preemption"), [one, one], [two, two])
        for seed in range(divergent)
    ]
    return same + differ


def report(identical: int, divergent: int, date: str) -> str:
    info = CampaignInfo("make differential", date, 60, 5, 2)
    return render(campaign_results(identical, divergent), info, "results/fidelity-campaign.md")


def bars(svg: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == "bar"]


def test_the_table_of_a_report_is_read_back() -> None:
    campaign = parse(report(3, 1, "2026-11-25"), "abc1234")
    assert campaign is not None
    assert campaign.date == "2026-11-25"
    assert list(campaign.counts) == list(ASPECTS)
    assert campaign.counts["placements"] == {
        "identical": 3,
        "upstream-nondeterministic": 0,
        "ours-nondeterministic": 0,
        "divergence": 1,
    }
    assert campaign.identical_share("placements") == 75.0
    assert campaign.identical_share("victims") == 100.0
    assert campaign.identical_share("not-an-aspect") is None


def test_the_report_links_the_chart() -> None:
    assert "](images/fidelity-aspects.svg)" in report(1, 0, "2026-11-25")


def git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_every_campaign_the_report_recorded_once_oldest_first(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "fidelity.md"
    doc.parent.mkdir()
    git(tmp_path, "init", "-q")
    doc.write_text(report(2, 2, "2026-11-20"))
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first campaign")
    first = git(tmp_path, "rev-parse", "--short", "HEAD")
    doc.write_text(doc.read_text() + "\nan edit elsewhere in the file\n")
    git(tmp_path, "commit", "-q", "-am", "prose")
    doc.write_text(report(3, 1, "2026-11-22"))
    git(tmp_path, "commit", "-q", "-am", "second campaign")
    second = git(tmp_path, "rev-parse", "--short", "HEAD")
    doc.write_text(report(4, 0, "2026-11-24"))  # not committed yet

    found = campaigns(doc)

    assert [(c.version, c.date) for c in found] == [
        (first, "2026-11-20"),
        (second, "2026-11-22"),
        (WORKING_COPY, "2026-11-24"),
    ]
    svg = write(doc).read_text()
    assert (doc.parent / "images" / "fidelity-aspects.svg").read_text() == svg
    placements = [b for b in bars(svg) if b.get("data-group") == "placements"]
    assert [(b.get("data-series"), float(b.get("data-value", ""))) for b in placements] == [
        (f"2026-11-20 ({first})", 50.0),
        (f"2026-11-22 ({second})", 75.0),
        ("2026-11-24 (not yet committed)", 100.0),
    ]
    heights = [float(b.get("height", "")) for b in placements]
    assert heights[0] / 50 == pytest.approx(heights[1] / 75) == pytest.approx(heights[2] / 100)


def test_one_bar_per_aspect_and_campaign_and_none_for_an_aspect_not_compared() -> None:
    older = parse(report(1, 1, "2026-11-20"), "aaa1111")
    newer = parse(report(2, 0, "2026-11-22"), "bbb2222")
    assert older is not None and newer is not None
    del older.counts["allocations"]  # compared only since the newer campaign
    svg = render_svg(fidelity_chart([older, newer], "docs/fidelity.md"))
    drawn = bars(svg)
    assert len(drawn) == 2 * len(ASPECTS) - 1
    assert list(dict.fromkeys(b.get("data-group") for b in drawn)) == list(ASPECTS)
    allocations = [b.get("data-series") for b in drawn if b.get("data-group") == "allocations"]
    assert allocations == ["2026-11-22 (bbb2222)"]


def test_a_report_without_a_table_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "fidelity.md"
    doc.write_text("# Fidelity\n\nNo campaign yet.\n")
    assert main(["chart", "--report", str(doc)]) == 2
    assert capsys.readouterr().err == (
        f"differential: chart: {doc}: no campaign with a per-aspect table\n"
    )
    assert not (tmp_path / "images").exists()
    assert main(["chart", "--report", str(tmp_path / "missing.md")]) == 2
    assert capsys.readouterr().err == (
        f"differential: error: --report {tmp_path / 'missing.md'}: no such file\n"
    )


def test_writing_the_report_draws_the_chart_beside_it(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(json.dumps(r.to_json()) + "\n" for r in campaign_results(3, 1)), encoding="utf-8"
    )
    doc = tmp_path / "out" / "fidelity.md"
    assert main(["report", str(results), "--report", str(doc)]) == 1  # one true divergence
    svg = (tmp_path / "out" / "images" / "fidelity-aspects.svg").read_text()
    placements = [b for b in bars(svg) if b.get("data-group") == "placements"]
    assert [float(b.get("data-value", "")) for b in placements] == [75.0]
