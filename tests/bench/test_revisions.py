"""``python -m bench revisions``: each revision exported as committed, runs taken in turn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import revisions

REPO = Path(__file__).resolve().parents[2]


def _committed_files(revision: str) -> set[str]:
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", revision, *revisions.EXPORTED],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(listing.stdout.split())


def _files(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


def test_revisions_run_in_turn_from_their_own_exported_files(tmp_path: Path) -> None:
    calls: list[tuple[str, Path]] = []
    figures = iter([10.0, 20.0, 12.0, 22.0])

    def run_isolated(spec: str, *, source: Path) -> dict[str, Any]:
        calls.append((spec, source))
        pods_per_second = next(figures)
        return {
            "cpu_seconds": pods_per_second / 10,
            "peak_rss_mb": 100.0,
            "throughput": {"average": pods_per_second},
            "attempt_ms": {"p99": 0.5},
        }

    results = revisions.compare(
        ["HEAD~1", "HEAD"], ["S1"], [], 50.0, 100, 2, run_isolated, cache=tmp_path
    )

    sources = [source for _, source in calls]
    assert sources[0] == sources[2] != sources[1] == sources[3]
    for revision, source in zip(["HEAD~1", "HEAD"], sources, strict=False):
        assert _files(source) == _committed_files(revision)
    table = revisions.render(results)
    first, second = results["revisions"]
    assert first.startswith("HEAD~1 (") and second.startswith("HEAD (")
    assert f"| {first} | 1.00 / 1.20 (mean 1.10) | 100.0 / 100.0 (mean 100.0) " in table
    assert "| 10.0 / 12.0 (mean 11.0) |" in table
    assert "| 20.0 / 22.0 (mean 21.0) |" in table


def test_a_failed_round_is_listed_under_its_table(tmp_path: Path) -> None:
    def run_isolated(spec: str, *, source: Path) -> dict[str, Any]:
        return {"label": spec, "error": "Traceback: boom"}

    results = revisions.compare(
        ["HEAD~1", "HEAD"], ["S1"], [], 50.0, 100, 1, run_isolated, cache=tmp_path
    )

    table = revisions.render(results)
    assert "round 1 failed: Traceback: boom" in table
    assert "| – | – | – | – |" in table


def test_an_unknown_revision_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="'no-such-rev' is not a commit of this repository"):
        revisions.export("no-such-rev", tmp_path)


def test_an_exported_revision_runs_its_own_harness(tmp_path: Path) -> None:
    """Everything the revision's ``python -m bench`` imports is exported with it."""
    _, source = revisions.export("HEAD", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--help"],
        cwd=source,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(source / "operator"), str(source)])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
