"""Node utilisation on the HTML reports: "before → after of allocatable" with a bar, per resource.

``capacity``'s matrix shows a node's CPU and memory before the first copy and after the last;
``simulate``'s page has a table of its own, drawn from the report's ``utilisation`` section (the
JSON's, see sim/report.py): a row per node, a column per resource, the cluster's total in the
footer; ``--compare-config``'s page has the same table for the end of both runs, A → B. All
draw each amount with :func:`usage_cell`. Its bar is grey up to the share requested before and
blue up to the share after; the narrower of the two is drawn on top, so a node that lost pods
(evicted) shows the blue "after" inside the grey "before", and one that gained shows the grey
inside the blue. The cell sorts by the share after; its ``data-before``, ``data-after`` and
``data-allocatable`` hold the raw amounts (CPU in millicores, memory in bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.model.resources import CPU, MEMORY, PODS
from kopf_scheduler.sim.amounts import format_amount
from kopf_scheduler.sim.html_page import Markup, element, sortable_table, text
from kopf_scheduler.sim.utilisation import DEVICES

_HEADS = {CPU: "CPU", MEMORY: "Memory", PODS: "Pods"}


def _head(resource: str) -> str:
    if resource.startswith(DEVICES):
        return f"{resource.removeprefix(DEVICES)} devices"
    return _HEADS.get(resource, resource)


def _share(used: int, offered: int) -> float:
    if not offered:
        return 100.0 if used else 0.0
    return min(100.0, 100.0 * used / offered)


def _sort_key(share: float) -> str:
    """The share to one decimal, written as the page's script writes the number back (``75``,
    not ``75.0``), which is how it knows to compare the cells as numbers."""
    rounded = round(share, 1)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)


def usage_cell(resource: str, before: int, after: int, offered: int) -> Markup:
    """One resource of one node (or of the cluster): requested before → after, of ``offered``."""
    if not (offered or before or after):
        return element("td", text("—"), class_="muted", data_resource=resource, data_sort="-1")
    share_before, share_after = _share(before, offered), _share(after, offered)
    spans = sorted((("before", share_before), ("after", share_after)), key=lambda span: -span[1])
    bar = element(
        "div",
        "".join(
            element("span", class_=kind, style=f"width: {share:.1f}%") for kind, share in spans
        ),
        class_="bar",
        title=f"{share_before:.0f}% → {share_after:.0f}%",
    )
    label = text(
        f"{format_amount(resource, before)} → {format_amount(resource, after)} "
        f"of {format_amount(resource, offered)}"
    )
    return element(
        "td",
        label + bar,
        data_sort=_sort_key(share_after),
        data_resource=resource,
        data_before=str(before),
        data_after=str(after),
        data_allocatable=str(offered),
    )


def _cells(entry: Mapping[str, Any], resources: list[str]) -> Markup:
    return "".join(
        usage_cell(
            resource,
            entry["before"][resource],
            entry["after"][resource],
            entry["allocatable"][resource],
        )
        for resource in resources
    )


def utilisation_table(
    section: Mapping[str, Any], *, heading: str, before: str, after: str
) -> Markup:
    """A ``utilisation`` section of the JSON as a table under ``heading``; ``before`` and
    ``after`` say when (or under what) the two amounts were taken, for the words above it."""
    resources = list(section["total"]["allocatable"])
    rows = [
        element(
            "tr",
            element("td", text(entry["node"])) + _cells(entry, resources),
            data_node=entry["node"],
            data_filter=entry["node"],
        )
        for entry in section["nodes"]
    ]
    total = element(
        "tr",
        element("td", text(f"Cluster ({len(rows)} nodes)")) + _cells(section["total"], resources),
        id="utilisation-total",
    )
    heads = [text("Node"), *(text(_head(resource)) for resource in resources)]
    intro = element(
        "p",
        text(
            f"The requests of the pods bound to each node, of its allocatable: {before} → "
            f"{after}. The bar is grey up to the share {before}, blue up to the share {after}."
        ),
        class_="muted",
    )
    return (
        element("h2", text(heading))
        + intro
        + sortable_table("utilisation", heads, rows, filter_label="Filter nodes:", footer=total)
    )
