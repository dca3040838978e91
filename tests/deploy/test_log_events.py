"""docs/log-events.md lists every warning and error the scheduler logs, at the level it logs it.

The event names are read from the source: every call ``<logger>.<level>("event_name", ...)`` in
``operator/kopf_scheduler``. A new warning or error without a line in the catalogue, a line for an
event no longer logged, or a level that changed fails here, so the catalogue cannot drift. Event
names of warnings and errors must be literal strings, or they could not be checked.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "operator" / "kopf_scheduler"
CATALOGUE = ROOT / "docs" / "log-events.md"
LEVELS = {
    "debug": "debug",
    "info": "info",
    "warning": "warning",
    "error": "error",
    "exception": "error",  # error level, with the traceback
    "critical": "critical",
}
MUST_BE_LISTED = {"warning", "error", "critical"}
ROW = re.compile(r"^\| `(?P<event>[a-z_]+)` \| (?P<level>[a-z]+) \|", flags=re.MULTILINE)


def _names(node: ast.expr) -> list[str] | None:
    """The event names a call's first argument can take, or None if it is computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _names(node.body), _names(node.orelse)
        if body is not None and orelse is not None:
            return body + orelse
    return None


def logged_events() -> tuple[dict[str, set[str]], list[str]]:
    """{event: levels} of every log call in the package, and the calls with computed names."""
    events: dict[str, set[str]] = defaultdict(set)
    computed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LEVELS
                and "log" in ast.unparse(node.func.value).lower()
                and node.args
            ):
                continue
            level = LEVELS[node.func.attr]
            names = _names(node.args[0])
            if names is None:
                if level in MUST_BE_LISTED:
                    computed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                continue
            for name in names:
                events[name].add(level)
    return events, computed


def catalogued() -> dict[str, str]:
    rows = ROW.findall(CATALOGUE.read_text(encoding="utf-8"))
    listed: dict[str, str] = {}
    for event, level in rows:
        assert event not in listed, f"{event} is listed twice"
        listed[event] = level
    return listed


def test_the_source_is_read() -> None:
    events, _ = logged_events()
    assert {"warning", "error"} <= {level for levels in events.values() for level in levels}
    assert "error" in events["binding_cycle_failed"]  # logger.exception counts as an error


def test_warning_and_error_events_have_literal_names() -> None:
    _, computed = logged_events()
    assert computed == []


def test_every_warning_and_error_is_catalogued_at_its_level() -> None:
    events, _ = logged_events()
    listed = catalogued()
    missing = {
        f"{event} ({level})"
        for event, levels in events.items()
        for level in levels & MUST_BE_LISTED
        if listed.get(event) != level
    }
    assert not missing, f"not in docs/log-events.md at this level: {sorted(missing)}"


def test_every_catalogued_event_is_logged_at_that_level() -> None:
    events, _ = logged_events()
    stale = {
        f"{event} ({level})"
        for event, level in catalogued().items()
        if level not in events.get(event, set())
    }
    assert not stale, f"listed in docs/log-events.md but not logged so: {sorted(stale)}"
