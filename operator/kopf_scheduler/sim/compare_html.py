"""``simulate --compare-config -o html``: what a configuration change changes, as one page.

Drawn from the comparison ``-o json`` prints (``sim/compare.py``), nothing else: the decisions
that differ, the pods evicted under one configuration only, and for each pod bound under both a
node × plugin matrix of the scores that differ on the nodes chosen under A and under B, each
cell "A → B", and each node's utilisation at the end of both runs, A → B.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.sim.compare import Comparison
from kopf_scheduler.sim.html_page import Markup, element, page, sortable_table, text
from kopf_scheduler.sim.utilisation_html import utilisation_table


def _place(outcome: Mapping[str, Any] | None) -> str:
    if outcome is None:
        return "—"
    return f"{outcome['status']} {outcome['node']}" if outcome["node"] else outcome["status"]


def _moved(moved: list[Mapping[str, Any]]) -> Markup:
    heading = element("h2", text("Decisions that differ"))
    if not moved:
        return heading + element("p", text("none"), id="moved-none")
    rows = [
        element(
            "tr",
            element("td", text(entry["pod"]))
            + element("td", text(_place(entry["a"])))
            + element("td", text(_place(entry["b"]))),
            data_pod=entry["pod"],
            data_filter=entry["pod"],
        )
        for entry in moved
    ]
    return heading + sortable_table(
        "moved", [text("Pod"), text("A"), text("B")], rows, filter_label="Filter pods:"
    )


def _evicted(only: Mapping[str, list[str]]) -> Markup:
    parts = ""
    for side in ("a", "b"):
        if only[side]:
            items = "".join(element("li", text(pod)) for pod in only[side])
            parts += element(
                "div",
                text(f"Evicted only under {side.upper()}:") + element("ul", items),
                id=f"evicted-{side}",
            )
    return parts


def _score(value: int | None) -> str:
    return "—" if value is None else str(value)


def _scores(index: int, entry: Mapping[str, Any]) -> Markup:
    nodes: Mapping[str, Mapping[str, Mapping[str, int | None]]] = entry["nodes"]
    plugins = list(dict.fromkeys(plugin for by_plugin in nodes.values() for plugin in by_plugin))
    rows = []
    for node, by_plugin in nodes.items():
        chosen = [side for side, key in (("A", "nodeA"), ("B", "nodeB")) if entry[key] == node]
        cells = element("td", text(node)) + element("td", text(" and ".join(chosen)))
        for plugin in plugins:
            values = by_plugin.get(plugin)
            cells += element(
                "td",
                text("" if values is None else f"{_score(values['a'])} → {_score(values['b'])}"),
                class_="num",
                data_plugin=plugin,
                data_a=None if values is None else _score(values["a"]),
                data_b=None if values is None else _score(values["b"]),
            )
        rows.append(element("tr", cells, data_node=node))
    heads = [text("Node"), text("Chosen under"), *(text(p) for p in plugins)]
    return element(
        "section",
        element("h3", text(f"{entry['pod']} (A: {entry['nodeA']}, B: {entry['nodeB']})"))
        + sortable_table(f"scores-{index}", heads, rows),
        class_="matrix",
        data_pod=entry["pod"],
    )


def _summary(summary: Mapping[str, Mapping[str, Any]]) -> Markup:
    rows = [
        element(
            "tr",
            element("td", text(side.upper()))
            + "".join(
                element("td", text(summary[side][key]), class_="num")
                for key in ("bound", "pending", "preempted")
            ),
        )
        for side in ("a", "b")
    ]
    heads = [text(h) for h in ("Configuration", "Bound", "Pending", "Preempted")]
    return element("h2", text("Summary")) + sortable_table("summary", heads, rows)


def _at_the_end(utilisation: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Both runs' utilisation at their end as one section, A's end as "before" and B's as
    "after" (both runs start from the same nodes and pods)."""
    a, b = utilisation["a"], utilisation["b"]
    ends_b = {entry["node"]: entry["after"] for entry in b["nodes"]}

    def joined(entry: Mapping[str, Any], end_b: Mapping[str, int]) -> dict[str, Any]:
        return {"allocatable": entry["allocatable"], "before": entry["after"], "after": end_b}

    return {
        "nodes": [
            {"node": entry["node"], **joined(entry, ends_b[entry["node"]])} for entry in a["nodes"]
        ],
        "total": joined(a["total"], b["total"]["after"]),
    }


def render_comparison_html(comparison: Comparison) -> str:
    report = comparison.report
    a, b = comparison.names
    verdict = "changed" if comparison.changed else "unchanged"
    body = element(
        "p",
        element("strong", text("A: "))
        + text(a)
        + "<br>"
        + element("strong", text("B: "))
        + text(b),
    )
    body += element("p", element("strong", text(f"Decisions {verdict}")), id="verdict")
    body += _moved(report["moved"]) + _evicted(report["evictedOnlyUnder"])
    differences = report["scoreDifferences"]
    body += element("h2", text("Scores that differ, on the nodes chosen under A and B"))
    if differences:
        body += element("p", text("Each cell: the plugin's weighted score under A → under B."))
        body += "".join(_scores(index, entry) for index, entry in enumerate(differences))
    else:
        body += element("p", text("none"))
    body += _summary(report["summary"])
    body += utilisation_table(
        _at_the_end(report["utilisation"]),
        heading="Node utilisation at the end",
        before="under A",
        after="under B",
    )
    return page(f"Configuration change: {verdict}", body)
