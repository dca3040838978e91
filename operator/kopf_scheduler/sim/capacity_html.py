"""``capacity -o html``: the count, and a node × plugin matrix per template, as one page.

Everything shown comes from the :class:`CapacityResult` the text and JSON answers are made of
(the copies per node, the stop reason and the failure summary are the same objects), plus the
:class:`~kopf_scheduler.sim.node_matrix.NodeMatrix` the count gathers when asked for one. A row
per node of the cluster: the copies it took, its CPU and memory requested before the first copy
and after the last, how many attempts examined it and found it feasible, then per plugin how
many attempts it filtered the node out of (with the reasons) or its mean score, and last what
the copy that stopped the count was told on this node. ``--drain`` answers get a page too.
"""

from __future__ import annotations

from kopf_scheduler.model.resources import CPU, MEMORY
from kopf_scheduler.sim.capacity import CapacityResult, TemplateCount
from kopf_scheduler.sim.drain import DrainResult
from kopf_scheduler.sim.html_page import Markup, element, page, sortable_table, text
from kopf_scheduler.sim.node_matrix import NodeRow, PluginCell
from kopf_scheduler.sim.utilisation import Utilisation
from kopf_scheduler.sim.utilisation_html import usage_cell

_ROW_HEADS = ["Node", "Copies", "CPU requested", "Memory requested", "Examined", "Feasible"]


def _reasons(reasons: dict[str, int]) -> Markup:
    items = "".join(
        element("li", text(f"{reason} ({number})" if number > 1 else reason))
        for reason, number in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    )
    return element("ul", items, class_="reasons") if items else ""


def _resource_cell(before: Utilisation | None, after: Utilisation | None, resource: str) -> Markup:
    if before is None or after is None:
        return element("td", text("—"), class_="muted")
    return usage_cell(
        resource,
        before.requested[resource],
        after.requested[resource],
        after.allocatable[resource],
    )


def _plugin_cell(plugin: str, cell: PluginCell | None) -> Markup:
    if cell is None:
        return element("td", "", data_sort="0", data_plugin=plugin, data_filtered="0")
    parts: list[Markup] = []
    if cell.filtered:
        parts.append(element("strong", text(f"filtered {cell.filtered}×")))
        parts.append(_reasons(dict(cell.reasons)))
    mean = cell.mean_score
    if mean is not None:
        parts.append(element("div", text(f"mean score {mean:.0f} ({cell.scored}×)")))
    return element(
        "td",
        "".join(parts),
        class_="filtered" if cell.filtered else "scored",
        data_sort=str(cell.filtered),
        data_plugin=plugin,
        data_filtered=str(cell.filtered),
        data_score="" if mean is None else f"{mean:.2f}",
    )


def _stop_cell(row: NodeRow) -> Markup:
    verdict = row.last_verdict
    if verdict is None:
        return element("td", text("—"), class_="muted", data_stop="")
    if verdict.feasible:
        return element("td", text("fits"), data_stop="fits")
    return element(
        "td",
        element("strong", text(verdict.plugin)) + _reasons(dict.fromkeys(verdict.reasons, 1)),
        class_="stop",
        data_stop=verdict.plugin,
        data_reasons="\n".join(verdict.reasons),
    )


def _matrix(index: int, count: TemplateCount) -> Markup:
    matrix = count.matrix
    name = count.template.name
    if matrix is None:
        return ""
    plugins = matrix.plugins
    rows = []
    for row in matrix.rows.values():
        cells = [
            element("td", text(row.node)),
            element("td", text(count.nodes.get(row.node, 0)), class_="num", data_column="copies"),
            _resource_cell(row.before, row.after, CPU),
            _resource_cell(row.before, row.after, MEMORY),
            element("td", text(row.examined), class_="num"),
            element("td", text(row.feasible), class_="num"),
            *(_plugin_cell(plugin, row.cells.get(plugin)) for plugin in plugins),
            _stop_cell(row),
        ]
        rows.append(element("tr", "".join(cells), data_node=row.node, data_filter=row.node))
    heads = [text(head) for head in _ROW_HEADS] + [text(p) for p in plugins] + [text("Next copy")]
    unexamined = ""
    if matrix.unexamined:
        unexamined = element(
            "div",
            text("Nodes not examined by an attempt, by the reason they share:")
            + _reasons(dict(matrix.unexamined)),
        )
    return element(
        "section",
        element("h2", text(f"Node × plugin matrix: {name}"))
        + element(
            "p",
            text(
                f"{matrix.attempts} scheduling attempt(s) of {name}'s copies; per plugin, how "
                "many of them it filtered each node out of, or the node's mean weighted score. "
                "“Next copy”: why the copy that stopped the count did not fit there."
            ),
            class_="muted",
        )
        + sortable_table(f"matrix-{index}", heads, rows, filter_label="Filter nodes:")
        + unexamined,
        class_="matrix",
        data_template=name,
    )


def _summary(result: CapacityResult) -> Markup:
    lines = []
    for count in result.counts:
        gang = count.template.pod_group is not None
        unit = "PodGroup(s)" if gang else "instance(s)"
        pods = f" ({count.nodes.total()} pods)" if gang else ""
        lines.append(
            element(
                "li",
                text(f"{count.copies} {unit} of {count.template.name}{pods}"),
                data_template=count.template.name,
                data_copies=str(count.copies),
            )
        )
    body = element("p", text("The cluster can schedule:")) + element("ul", "".join(lines))
    body += element(
        "p",
        element("strong", text("Termination reason: "))
        + element("span", text(f"{result.stop_type}: {result.stop_message}"), id="stop"),
    )
    for count in result.counts:
        if count.fail_summary:
            body += element(
                "div",
                text(f"Fit failure summary on nodes ({count.template.name}):")
                + _reasons(dict(count.fail_summary)),
            )
    if result.preempted:
        items = "".join(element("li", text(pod)) for pod in result.preempted)
        body += element(
            "div", text("Preempted to make room:") + element("ul", items, id="preempted")
        )
    return element("section", body)


def render_capacity_html(result: CapacityResult) -> str:
    """The page of a count made with ``matrix=True`` (without, the page has no matrix)."""
    matrices = "".join(_matrix(index, count) for index, count in enumerate(result.counts))
    return page(f"Capacity: {result.total} more copies fit", _summary(result) + matrices)


def render_drain_html(result: DrainResult) -> str:
    """The ``--drain`` page: each node in the order tried, where its pods went or what stayed."""
    rows = []
    for entry in result.nodes:
        if entry.removable:
            moved = "".join(
                element("li", text(f"{pod} → {node}")) for pod, node in sorted(entry.moved.items())
            )
            verdict = text("can go")
            detail = element("ul", moved, class_="reasons") if moved else text("no pods")
        else:
            verdict = text("stays")
            detail = text(f"{entry.blocking_pod}: {entry.message}")
        leaving = ", ".join(entry.stays)
        rows.append(
            element(
                "tr",
                element("td", text(entry.node))
                + element("td", verdict, data_removable=str(entry.removable).lower())
                + element("td", detail)
                + element("td", text(leaving)),
                data_node=entry.node,
                data_filter=entry.node,
            )
        )
    heads = [
        text(h) for h in ("Node", "Verdict", "Pods placed elsewhere, or why not", "Leave with it")
    ]
    summary = element(
        "p",
        text(
            f"{len(result.removable)} of {len(result.nodes)} node(s) can go, tried largest "
            f"first: {', '.join(result.removable) or 'none'}"
        ),
        id="removable",
    )
    return page(
        "Drain: which nodes could go",
        summary + sortable_table("drain", heads, rows, filter_label="Filter nodes:"),
    )
