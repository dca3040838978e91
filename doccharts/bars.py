"""Grouped bar charts as one self-contained SVG document.

A chart is a row of groups (a scenario, an aspect) with one bar per series in each (a figure, a
campaign). The value axis is linear from zero, so a bar's height is proportional to its value and
two bars compare by length; an optional reference line marks a value that means something (1.0
for a ratio). A value that is missing draws no bar but a dash, so an absent figure never reads
as zero.

The document is built with :mod:`xml.etree.ElementTree`, which escapes every label and
description, and carries its data twice: as text the eye reads, and as ``data-*`` attributes on
each bar so that a test or a script can read the figures back.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")
"""The Okabe–Ito colours, told apart with every common kind of colour blindness."""

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
FONT = "font-family:sans-serif"

BAR_WIDTH = 10
MAX_BAR_WIDTH = 22
GROUP_GAP = 18
PLOT_HEIGHT = 300
LEFT = 80
RIGHT = 80
CHARACTER_WIDTH = 5.8
"""An estimate of one character's advance at 11 px, for the room the labels need."""
TITLE_CHARACTER_WIDTH = 8.6
"""The same for the title, 15 px bold."""
LABEL_ANGLE = 40
LEGEND_ROW = 18


class ChartError(ValueError):
    """The chart cannot be drawn from what it was given (nothing to show, a bad value)."""


@dataclass(frozen=True)
class Group:
    """One place on the category axis: its label and one value per series (None: not measured)."""

    label: str
    values: Sequence[float | None]


@dataclass(frozen=True)
class BarChart:
    title: str
    description: str
    """What the chart shows and where its figures come from; the SVG's ``<desc>``."""
    value_label: str
    category_label: str
    """What the groups are (the category axis' title)."""
    series: Sequence[str]
    groups: Sequence[Group]
    subtitle: str = ""
    reference: float | None = None
    """A value marked across the plot, e.g. 1.0 where two schedulers are equal."""
    reference_label: str = ""
    top: float | None = None
    """The top of the value axis when it has a natural one (100 for a percentage)."""
    value_format: str = "{:.2f}"


def _nice_step(span: float, ticks: int = 6) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks."""
    rough = span / ticks
    power = math.pow(10, math.floor(math.log10(rough)))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= rough:
            return factor * power
    return 10 * power


def _check(chart: BarChart) -> list[float]:
    if not chart.series:
        raise ChartError(f"{chart.title}: no series to draw")
    if not chart.groups:
        raise ChartError(f"{chart.title}: nothing to draw")
    values = []
    for group in chart.groups:
        if len(group.values) != len(chart.series):
            raise ChartError(
                f"{chart.title}: {group.label!r} has {len(group.values)} values "
                f"for {len(chart.series)} series"
            )
        for value in group.values:
            if value is None:
                continue
            if not math.isfinite(value) or value < 0:
                raise ChartError(f"{chart.title}: {group.label!r} has the value {value}")
            values.append(value)
    if not values:
        raise ChartError(f"{chart.title}: every value is missing")
    return values


def _text(parent: ET.Element, x: float, y: float, content: str, **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, "text", {"x": f"{x:.1f}", "y": f"{y:.1f}", **attributes})
    element.text = content
    return element


def _line(parent: ET.Element, x1: float, x2: float, y: float, **attributes: str) -> None:
    ends = {"x1": f"{x1:.1f}", "x2": f"{x2:.1f}", "y1": f"{y:.3f}", "y2": f"{y:.3f}"}
    ET.SubElement(parent, "line", {**ends, **attributes})


@dataclass(frozen=True)
class _Layout:
    """Where everything goes, in pixels, worked out from the chart's figures and labels."""

    step: float
    axis_top: float
    scale: float
    """Pixels per unit of value."""
    left: float
    """The value axis' x."""
    group_width: float
    bar_width: float
    legend_column: float
    legend_columns: int
    plot_top: float
    width: float
    height: float

    @property
    def baseline(self) -> float:
        return self.plot_top + PLOT_HEIGHT

    @property
    def right(self) -> float:
        return self.width - RIGHT

    @classmethod
    def of(cls, chart: BarChart, values: list[float]) -> _Layout:
        highest = max([*values, chart.reference or 0.0, chart.top or 0.0])
        step = _nice_step(highest or 1.0)
        if chart.top is not None and highest > chart.top:
            raise ChartError(f"{chart.title}: a value of {highest} is above the top {chart.top}")
        axis_top = chart.top if chart.top is not None else math.ceil(highest / step) * step
        series = len(chart.series)
        # Wide enough for the title and the subtitle; a few groups are spread out to fill it.
        heading = max(
            len(chart.title) * TITLE_CHARACTER_WIDTH, len(chart.subtitle) * CHARACTER_WIDTH
        )
        group_width = max(series * BAR_WIDTH + GROUP_GAP, heading / len(chart.groups))
        plot_width = len(chart.groups) * group_width
        bar_width = min(MAX_BAR_WIDTH, max(BAR_WIDTH, (group_width - GROUP_GAP) / series))
        # The first group's label, slanted down to the left, must not run off the left edge.
        slant = math.radians(LABEL_ANGLE)
        first_reach = len(chart.groups[0].label) * CHARACTER_WIDTH * math.cos(slant)
        left = max(LEFT, first_reach - group_width / 2 + 8)
        legend_column = max(len(name) for name in chart.series) * CHARACTER_WIDTH + 34
        legend_columns = max(1, min(series, int(plot_width // legend_column)))
        legend_rows = math.ceil(series / legend_columns)
        plot_top = 46 + (16 if chart.subtitle else 0) + legend_rows * LEGEND_ROW
        longest = max(len(group.label) for group in chart.groups)
        label_room = longest * CHARACTER_WIDTH * math.sin(slant) + 24
        return cls(
            step=step,
            axis_top=axis_top,
            scale=PLOT_HEIGHT / axis_top,
            left=left,
            group_width=group_width,
            bar_width=bar_width,
            legend_column=legend_column,
            legend_columns=legend_columns,
            plot_top=plot_top,
            width=left + plot_width + RIGHT,
            height=plot_top + PLOT_HEIGHT + label_room + 30,
        )


def _heading(svg: ET.Element, chart: BarChart, layout: _Layout) -> None:
    _text(svg, layout.left, 22, chart.title, style="font-size:15px;font-weight:bold")
    if chart.subtitle:
        _text(svg, layout.left, 40, chart.subtitle, fill="#444")
    legend_rows = math.ceil(len(chart.series) / layout.legend_columns)
    legend_top = layout.plot_top - legend_rows * LEGEND_ROW - 8
    for index, name in enumerate(chart.series):
        x = layout.left + (index % layout.legend_columns) * layout.legend_column
        y = legend_top + (index // layout.legend_columns) * LEGEND_ROW
        colour = PALETTE[index % len(PALETTE)]
        ET.SubElement(
            svg, "rect", x=f"{x:.1f}", y=f"{y - 9:.1f}", width="10", height="10", fill=colour
        )
        _text(svg, x + 14, y, name, **{"class": "legend"})


def _value_axis(svg: ET.Element, chart: BarChart, layout: _Layout) -> None:
    grid = ET.SubElement(svg, "g", stroke="#ddd")
    for index in range(round(layout.axis_top / layout.step) + 1):
        tick = index * layout.step
        y = layout.baseline - tick * layout.scale
        _line(grid, layout.left, layout.right, y)
        _text(svg, layout.left - 6, y + 4, f"{tick:g}", **{"text-anchor": "end"})
    middle = layout.plot_top + PLOT_HEIGHT / 2
    x = layout.left - 56
    _text(
        svg,
        x,
        middle,
        chart.value_label,
        transform=f"rotate(-90 {x:.1f} {middle:.1f})",
        **{"text-anchor": "middle"},
    )


def _groups(svg: ET.Element, chart: BarChart, layout: _Layout) -> None:
    """The bars, a dash for each missing value, and each group's label slanted below."""
    bars = ET.SubElement(svg, "g", {"class": "bars"})
    width = layout.bar_width
    baseline = layout.baseline
    for number, group in enumerate(chart.groups):
        centre = layout.left + (number + 0.5) * layout.group_width
        first = centre - len(chart.series) * width / 2
        for index, (name, value) in enumerate(zip(chart.series, group.values, strict=True)):
            x = first + index * width
            if value is None:
                _text(bars, x + width / 2, baseline - 3, "–", **{"text-anchor": "middle"})
                continue
            height = value * layout.scale
            bar = ET.SubElement(
                bars,
                "rect",
                {
                    "x": f"{x:.1f}",
                    "y": f"{baseline - height:.3f}",
                    "width": f"{width - 1:.1f}",
                    "height": f"{height:.3f}",
                    "fill": PALETTE[index % len(PALETTE)],
                    "class": "bar",
                    "data-group": group.label,
                    "data-series": name,
                    "data-value": repr(value),
                },
            )
            tooltip = f"{group.label}, {name}: {chart.value_format.format(value)}"
            ET.SubElement(bar, "title").text = tooltip
        _text(
            svg,
            centre,
            baseline + 14,
            group.label,
            transform=f"rotate(-{LABEL_ANGLE} {centre:.1f} {baseline + 14:.1f})",
            **{"text-anchor": "end", "class": "group"},
        )
    middle = (layout.left + layout.right) / 2
    _text(svg, middle, layout.height - 10, chart.category_label, **{"text-anchor": "middle"})
    _line(svg, layout.left, layout.right, baseline, stroke="#333")


def _reference(svg: ET.Element, chart: BarChart, layout: _Layout) -> None:
    if chart.reference is None:
        return
    y = layout.baseline - chart.reference * layout.scale
    attributes = {
        "stroke-dasharray": "6 4",
        "class": "reference",
        "data-value": repr(chart.reference),
    }
    _line(svg, layout.left, layout.right, y, stroke="#000", **attributes)
    label = chart.reference_label or f"{chart.reference:g}"
    _text(svg, layout.right + 6, y + 4, label)


def render(chart: BarChart) -> str:
    """The chart as an SVG document (text); :class:`ChartError` when there is nothing to draw."""
    layout = _Layout.of(chart, _check(chart))
    svg = ET.Element(
        "svg",
        {
            "xmlns": SVG_NAMESPACE,
            "width": f"{layout.width:.0f}",
            "height": f"{layout.height:.0f}",
            "viewBox": f"0 0 {layout.width:.0f} {layout.height:.0f}",
            "role": "img",
            "style": f"{FONT};font-size:11px",
        },
    )
    ET.SubElement(svg, "title").text = chart.title
    ET.SubElement(svg, "desc").text = chart.description
    ET.SubElement(svg, "rect", width="100%", height="100%", fill="white")
    _heading(svg, chart, layout)
    _value_axis(svg, chart, layout)
    _groups(svg, chart, layout)
    _reference(svg, chart, layout)
    ET.indent(svg, space=" ")
    return ET.tostring(svg, encoding="unicode") + "\n"
