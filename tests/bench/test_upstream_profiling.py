"""kopf-scheduler sampled over a collection window, and what the summary makes of the stacks."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench.upstream import profiling

COLLAPSED = """\
<module> (kopf-scheduler:1);run (loop.py:10);schedule_one (cycle.py:5);filter (fit.py:3) 60
<module> (kopf-scheduler:1);run (loop.py:10);schedule_one (cycle.py:5) 10
<module> (kopf-scheduler:1);run (loop.py:10);decode (watch.py:7) 30
"""


def test_the_summary_ranks_frames_by_own_and_inclusive_samples() -> None:
    found = profiling.summary(COLLAPSED, top=2)
    assert found["samples"] == 100
    assert found["self"] == [
        {"frame": "filter (fit.py:3)", "samples": 60, "share": 0.6},
        {"frame": "decode (watch.py:7)", "samples": 30, "share": 0.3},
    ]
    assert [(f["frame"], f["samples"]) for f in found["inclusive"]] == [
        ("<module> (kopf-scheduler:1)", 100),
        ("run (loop.py:10)", 100),
    ]
    assert profiling.summary(COLLAPSED, top=4)["inclusive"][2:] == [
        {"frame": "schedule_one (cycle.py:5)", "samples": 70, "share": 0.7},
        {"frame": "filter (fit.py:3)", "samples": 60, "share": 0.6},
    ]
    assert profiling.summary("")["samples"] == 0


SPINNER = """
import time
def spin_for_the_profiler():
    end = time.monotonic() + 30
    while time.monotonic() < end:
        sum(range(1000))
spin_for_the_profiler()
"""


def _has_py_spy() -> bool:
    try:
        profiling.py_spy()
    except profiling.ProfilerError:
        return False
    return True


@pytest.mark.skipif(not _has_py_spy(), reason="py-spy is not installed")
def test_a_window_samples_the_process_between_start_and_stop(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        profiler = profiling.WindowProfiler(process.pid, tmp_path / "Case_w-kopf")
        profiler.start()
        time.sleep(1.0)
        window = profiler.stop()
    finally:
        process.kill()
        process.wait()
    assert window["file"] == str(tmp_path / "Case_w-kopf-window1.txt")
    assert window["samples"] > 10
    assert window["self"][0]["frame"].startswith("spin_for_the_profiler ")
    assert profiler.windows == [window]
    with pytest.raises(profiling.ProfilerError):
        profiler.stop()


def test_a_profile_asked_for_without_py_spy_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.__main__ import main

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(sys, "executable", "/nowhere/python")
    assert main(["upstream", "--profile", "/tmp/p", "--workload", "SchedulingBasic/5Nodes"]) == 2
    assert capsys.readouterr().err == (
        "error: --profile: py-spy is not installed (pip install py-spy)\n"
    )
