"""The chart's alert rules and dashboard queries as Prometheus itself reads them, with promtool.

``promtool check rules`` parses every alert; ``promtool test rules`` runs ``alerts.test.yaml``, in
which each alert fires on series that show its problem and stays silent on healthy ones; the
dashboard's queries, with its variables set, are parsed as recording rules. promtool is built
from Prometheus's Go module into the cache (``make promtool-test``); without it these tests
skip, except the ones that need no promtool: every alert has a unit test and a runbook.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.localcluster.build import promtool_binary

ROOT = Path(__file__).parents[2]
FILES = ROOT / "charts" / "kopf-scheduler" / "files"
ALERTS = FILES / "alerts.yaml"
UNIT_TESTS = Path(__file__).with_name("alerts.test.yaml")
RUNBOOKS = ROOT / "docs" / "runbooks.md"
RUNBOOK_URL = "https://github.com/kopf-scheduler/kopf-scheduler/blob/main/docs/runbooks.md#"
DASHBOARD_VARIABLES = {"$job": ".*kopf-scheduler.*", "$instance": ".*"}
PROMTOOL = promtool_binary()
needs_promtool = pytest.mark.skipif(
    not PROMTOOL.exists(), reason="promtool is not built (make promtool-test builds it)"
)


def alerts() -> list[dict[str, Any]]:
    return [
        rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]
    ]


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PROMTOOL), *args], capture_output=True, text=True, check=False, timeout=300
    )


def test_every_alert_has_a_firing_and_a_silent_unit_test() -> None:
    tests = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    checked: dict[str, set[bool]] = {}
    for test in tests:
        for case in test["alert_rule_test"]:
            checked.setdefault(case["alertname"], set()).add(bool(case["exp_alerts"]))
    assert checked == {rule["alert"]: {True, False} for rule in alerts()}


def test_every_alert_links_its_runbook_section() -> None:
    headings = re.findall(r"^## (\w+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)
    for rule in alerts():
        assert rule["annotations"]["runbook_url"] == RUNBOOK_URL + rule["alert"].lower()
        assert rule["alert"] in headings


@needs_promtool
def test_promtool_checks_the_alert_rules() -> None:
    done = promtool("check", "rules", str(ALERTS))
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_promtool_unit_tests_of_the_alerts_pass() -> None:
    done = promtool("test", "rules", str(UNIT_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    dashboard = json.loads((FILES / "dashboard.json").read_text())
    rules = []
    for panel in dashboard["panels"]:
        for index, target in enumerate(panel.get("targets", [])):
            expr = target["expr"]
            for variable, value in DASHBOARD_VARIABLES.items():
                expr = expr.replace(variable, value)
            assert "$" not in expr, f"panel {panel['title']!r}: a variable is left in {expr!r}"
            rules.append({"record": f"dashboard:panel_{panel['id']}_{index}", "expr": expr})
    assert rules
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
