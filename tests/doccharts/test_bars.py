"""doccharts.bars: grouped bar charts as SVG, checked by reading the document back as XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from doccharts.bars import BarChart, ChartError, Group, render

SVG = "{http://www.w3.org/2000/svg}"


def chart(groups: list[Group], **options: object) -> BarChart:
    settings: dict[str, object] = {
        "title": "a title",
        "description": "what it shows, from where",
        "value_label": "ratio",
        "category_label": "scenario",
        "series": ["first", "second"],
        "groups": groups,
    }
    settings.update(options)
    return BarChart(**settings)  # type: ignore[arg-type]


def bars(svg: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == "bar"]


def test_one_bar_per_value_with_heights_proportional_to_the_values() -> None:
    svg = render(chart([Group("S1", [1.0, 0.5]), Group("S2", [2.5, None]), Group("S3", [0.0, 4])]))
    drawn = bars(svg)
    assert [(b.get("data-group"), b.get("data-series")) for b in drawn] == [
        ("S1", "first"),
        ("S1", "second"),
        ("S2", "first"),
        ("S3", "first"),
        ("S3", "second"),
    ]
    per_unit = {
        round(float(b.get("height", "")) / float(b.get("data-value", "")), 6)
        for b in drawn
        if float(b.get("data-value", "")) > 0
    }
    assert len(per_unit) == 1
    baseline = {round(float(b.get("y", "")) + float(b.get("height", "")), 3) for b in drawn}
    assert len(baseline) == 1  # every bar stands on the same axis


def test_the_reference_line_sits_at_its_value() -> None:
    svg = render(chart([Group("S1", [2.0, 0.5])], reference=1.0))
    tall = bars(svg)[0]
    base = float(tall.get("y", "")) + float(tall.get("height", ""))
    (line,) = [e for e in ET.fromstring(svg).iter(f"{SVG}line") if e.get("class") == "reference"]
    assert base - float(line.get("y1", "")) == pytest.approx(float(tall.get("height", "")) / 2)


def test_title_description_and_labels_are_escaped_text() -> None:
    name = 'S<1> & "co"'
    svg = render(chart([Group(name, [1.0, 2.0])], title="t <&>", description="from a<b>&c.json"))
    assert "<1>" not in svg and "a<b>" not in svg
    root = ET.fromstring(svg)
    assert root.findtext(f"{SVG}title") == "t <&>"
    assert root.findtext(f"{SVG}desc") == "from a<b>&c.json"
    assert {b.get("data-group") for b in bars(svg)} == {name}
    assert name in [text.text for text in root.iter(f"{SVG}text")]


def test_axes_are_labelled() -> None:
    root = ET.fromstring(render(chart([Group("S1", [1.0, 2.0])])))
    texts = [text.text for text in root.iter(f"{SVG}text")]
    assert "ratio" in texts and "scenario" in texts
    assert "first" in texts and "second" in texts  # the legend


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([], "a title: nothing to draw"),
        ([Group("S1", [None, None])], "a title: every value is missing"),
        ([Group("S1", [1.0])], "a title: 'S1' has 1 values for 2 series"),
        ([Group("S1", [1.0, float("nan")])], "a title: 'S1' has the value nan"),
    ],
)
def test_what_cannot_be_drawn_is_refused_in_one_line(groups: list[Group], message: str) -> None:
    with pytest.raises(ChartError) as raised:
        render(chart(groups))
    assert str(raised.value) == message


def test_a_value_above_a_fixed_top_is_refused() -> None:
    with pytest.raises(ChartError, match=r"^a title: a value of 120 is above the top 100$"):
        render(chart([Group("S1", [120, 50])], top=100))
