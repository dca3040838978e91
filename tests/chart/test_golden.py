"""``helm template`` of every value combination, pinned byte for byte in ``tests/chart/golden/``.

A golden shows a reviewer the whole effect of a chart change on every combination. The
properties that matter are asserted on their own in ``test_chart.py``, so a regenerated golden
cannot silently accept a wrong object. To regenerate after an intended change, run

    UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/chart/test_golden.py

which writes the files instead of comparing; review the diff before committing it.
"""

from __future__ import annotations

import os

import pytest

from tests.chart.helm import CASES, Case, case_params, template

UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"


@pytest.mark.parametrize("case", case_params())
def test_template_matches_golden(case: Case) -> None:
    rendered = template(case)
    if UPDATE:
        case.golden.write_text(rendered, encoding="utf-8")
    assert rendered == case.golden.read_text(encoding="utf-8")


def test_every_golden_and_values_file_belongs_to_a_case() -> None:
    names = {case.name for case in CASES}
    assert {p.stem for p in CASES[0].golden.parent.glob("*.yaml")} == names
    assert {p.stem for p in CASES[0].values_file.parent.glob("*.yaml")} == names
