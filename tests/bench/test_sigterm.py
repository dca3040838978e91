"""A bench run stopped with SIGTERM runs its clean-up, even when the signal lands while Python
runs a weakref callback (where it drops any exception, the handler's SystemExit included)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, signal, time, weakref
    from bench.__main__ import _exit_on_sigterm

    _exit_on_sigterm()

    class Thing:
        pass

    def callback(ref):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass

    try:
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing
        time.sleep(20)
        print("ran to the end")
    finally:
        print("cleaned up")
    """
)


def test_a_sigterm_dropped_inside_a_weakref_callback_still_stops_the_run() -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 143, child.stderr
    assert child.stdout.split() == ["cleaned", "up"]
