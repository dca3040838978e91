"""The campaigns docs/fidelity.md has recorded, read back from the file and from git.

The report holds only its latest campaign; each campaign that was committed replaced the one
before it. So the history of fidelity is the file's own history: every committed version's
"Latest campaign" section, oldest first, a version that repeats the campaign of the one before
(an edit elsewhere in the file) counted once, and the working copy last when its campaign is not
yet committed. What is read is the per-aspect table the report writes (:func:`report.render`);
nothing is estimated. Outside a git checkout only the working copy is read.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

SECTION = "## Latest campaign"
_DATE = re.compile(r"^- (\d{4}-\d{2}-\d{2}): \d+ scenarios")
WORKING_COPY = "not committed"


@dataclass(frozen=True)
class Campaign:
    """One campaign's verdict counts per aspect, and the version of the report holding it."""

    version: str
    """The commit that recorded it (short hash), or :data:`WORKING_COPY`."""
    date: str
    counts: dict[str, dict[str, int]]
    """aspect -> verdict -> scenarios, as the report's table has them."""
    section: str
    """The section's text up to the table's end: two versions with the same one are one campaign."""

    def identical_share(self, aspect: str) -> float | None:
        """Per cent of the played scenarios identical in ``aspect``; None when not compared."""
        row = self.counts.get(aspect)
        if not row or not sum(row.values()):
            return None
        return 100 * row.get("identical", 0) / sum(row.values())


def parse(text: str, version: str) -> Campaign | None:
    """The campaign of one version of the report; None when it has no per-aspect table."""
    _, found, rest = text.partition(SECTION)
    if not found:
        return None
    date = ""
    header: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    taken = [SECTION]
    for line in rest.splitlines():
        if line.startswith("## "):
            break
        taken.append(line)
        match = _DATE.match(line)
        if match and not date:
            date = match.group(1)
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            if counts:
                break
            continue
        if cells[0] == "aspect":
            header = cells[1:]
        elif header and not set(cells[0]) <= {"-"}:
            try:
                counts[cells[0]] = dict(zip(header, map(int, cells[1:]), strict=True))
            except ValueError:
                return None
    if not counts:
        return None
    return Campaign(version, date, counts, "\n".join(taken).strip())


def _git(directory: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout


def committed(report: Path) -> list[tuple[str, str]]:
    """Every committed version of ``report``, oldest first: (short hash, text)."""
    log = _git(report.parent, "log", "--reverse", "--format=%h", "--", report.name)
    versions = []
    for commit in (log or "").split():
        text = _git(report.parent, "show", f"{commit}:./{report.name}")
        if text is not None:
            versions.append((commit, text))
    return versions


def campaigns(report: Path) -> list[Campaign]:
    """The campaigns the report has held, oldest first, each once."""
    versions = committed(report)
    if report.exists():
        versions.append((WORKING_COPY, report.read_text()))
    found: list[Campaign] = []
    for version, text in versions:
        campaign = parse(text, version)
        if campaign is not None and (not found or found[-1].section != campaign.section):
            found.append(campaign)
    return found
