"""The chart in docs/fidelity.md: per aspect, the share of scenarios identical to upstream,
campaign by campaign.

Each campaign is one the report has recorded (:mod:`differential.history`), so the chart is drawn
from the report itself and the versions of it in git, and is drawn again whenever a campaign
writes the report. The newest :data:`CAMPAIGNS` campaigns are shown, oldest first.
"""

from __future__ import annotations

from pathlib import Path

from doccharts.bars import BarChart, ChartError, Group, render

from .history import WORKING_COPY, Campaign, campaigns
from .normalise import ASPECTS

CAMPAIGNS = 7
"""At most this many campaigns side by side (one colour each), the newest."""
IMAGE = Path("images") / "fidelity-aspects.svg"
"""Where the chart goes, relative to the report's directory (the report links it there)."""


def _label(campaign: Campaign) -> str:
    where = "not yet committed" if campaign.version == WORKING_COPY else campaign.version
    return f"{campaign.date or 'undated'} ({where})"


def fidelity_chart(recorded: list[Campaign], source: str) -> BarChart:
    if not recorded:
        raise ChartError(f"{source}: no campaign with a per-aspect table")
    shown = recorded[-CAMPAIGNS:]
    seen = {aspect for campaign in shown for aspect in campaign.counts}
    aspects = [a for a in ASPECTS if a in seen] + sorted(seen - set(ASPECTS))
    groups = [Group(aspect, [c.identical_share(aspect) for c in shown]) for aspect in aspects]
    listed = "; ".join(
        f"{_label(c)}: {sum(next(iter(c.counts.values())).values())} scenarios" for c in shown
    )
    earlier = len(recorded) - len(shown)
    return BarChart(
        title="Fidelity to kube-scheduler v1.34.10 per aspect, campaign by campaign",
        subtitle=(
            "Per cent of a campaign's scenarios in which ours matched upstream on the aspect; "
            "the others are listed in the report by verdict."
        ),
        description=(
            "For each aspect the differential suite compares, the per cent of a campaign's "
            "played scenarios whose verdict on that aspect is identical, as the per-aspect table "
            f"of {source} records it: one bar per campaign, oldest first, read from every "
            "committed version of the report (the commit that recorded each campaign in the "
            "legend)"
            + (f", the {earlier} oldest left out" if earlier else "")
            + f". Campaigns: {listed}."
        ),
        value_label="% of scenarios identical",
        category_label="aspect compared",
        series=[_label(c) for c in shown],
        groups=groups,
        top=100.0,
        value_format="{:.0f} %",
    )


def write(report: Path, out: Path | None = None) -> Path:
    """Draw the chart of ``report``'s campaigns (default: :data:`IMAGE` beside the report)."""
    out = out or report.parent / IMAGE
    svg = render(fidelity_chart(campaigns(report), str(report)))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg)
    return out
