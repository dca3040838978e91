"""Each benchmark run's section goes to the top of the runs page, which is made when missing;
the summary page is not written by runs."""

from __future__ import annotations

from pathlib import Path

from bench.report import RUNS_DOC, RUNS_HEADER, RUNS_MARKER, update_doc


def test_sections_go_newest_first_under_the_header(tmp_path: Path) -> None:
    page = tmp_path / "results" / "runs.md"
    update_doc("## older\n\nfigures", page)
    update_doc("## newer\n\nfigures", page)
    text = page.read_text()
    assert text.startswith(RUNS_HEADER)
    assert text.index(RUNS_MARKER) < text.index("## newer") < text.index("## older")


def test_runs_go_to_the_results_folder_not_the_summary() -> None:
    assert RUNS_DOC.parts[-2:] == ("results", "benchmark-runs.md")
    assert RUNS_MARKER in RUNS_DOC.read_text()
    assert RUNS_MARKER not in (RUNS_DOC.parents[1] / "benchmarks.md").read_text()
