"""The fault suite's figures, written as it goes so that a partial run still leaves them.

``$E2E_FAULTS_RESULTS`` (default ``/tmp/kopf-faults/results``) gets ``results.json`` (one
entry per fault) and ``results.md``, the table that ``docs/reliability.md`` copies, headed by
the command that produced it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

COLUMNS = ("pods", "bound_once", "pending", "lost", "double_bound", "victims", "recover_s")
HEADERS = ("pods", "bound once", "pending", "lost", "double-bound", "victims", "recover (s)")


def results_dir() -> Path:
    return Path(os.environ.get("E2E_FAULTS_RESULTS", "/tmp/kopf-faults/results"))


class Results:
    def __init__(self, directory: Path, command: str) -> None:
        self.directory = directory
        self.command = command
        self.rows: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, fault: str, figures: Mapping[str, Any], notes: Sequence[str] = ()) -> None:
        with self._lock:
            self.rows[fault] = {**figures, "notes": list(notes)}
            self._write()

    def _write(self) -> None:
        (self.directory / "results.json").write_text(
            json.dumps({"command": self.command, "faults": self.rows}, indent=2) + "\n"
        )
        (self.directory / "results.md").write_text(self.markdown())

    def markdown(self) -> str:
        lines = [
            f"`{self.command}`",
            "",
            "| fault | " + " | ".join(HEADERS) + " | notes |",
            "|---|" + "---:|" * len(HEADERS) + "---|",
        ]
        for fault, row in self.rows.items():
            cells = [str(row.get(column, "")) for column in COLUMNS]
            notes = "; ".join(row.get("notes", []))
            lines.append(f"| {fault} | " + " | ".join(cells) + f" | {notes} |")
        return "\n".join(lines) + "\n"


def command_line() -> str:
    return " ".join(["python -m pytest", *sys.argv[1:]]) if sys.argv else "pytest"
