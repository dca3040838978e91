"""``simulate -o html``: a simulation's report as one page, with a node × plugin matrix per pod.

The page is drawn from the report ``simulate --explain -o json`` prints (``sim/report.py``'s
``build_report``), nothing else: the pods and where they went, each node's utilisation at the
start and at the end with the cluster's total (sim/utilisation_html.py), each pod's last
scheduling attempt as a matrix (a row per node it examined: the plugin that filtered the node
out and why, or each plugin's weighted score and the total, the chosen node marked), the
preemptions with their victims, the gangs, and the events in time order as the timeline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kopf_scheduler.sim.html_page import Markup, element, page, sortable_table, text
from kopf_scheduler.sim.utilisation_html import utilisation_table


def _pods(pods: Sequence[Mapping[str, Any]]) -> Markup:
    rows = [
        element(
            "tr",
            element("td", text(f"{pod['namespace']}/{pod['name']}"))
            + element("td", text(pod["status"]), data_status=pod["status"])
            + element("td", text(pod["node"] or ""), class_="name")
            + element("td", text(pod["priority"]), class_="num")
            + element("td", text(pod["message"])),
            data_pod=f"{pod['namespace']}/{pod['name']}",
            data_filter=f"{pod['namespace']}/{pod['name']} {pod['status']} {pod['node'] or ''}",
        )
        for pod in pods
    ]
    heads = [text(h) for h in ("Pod", "Status", "Node", "Priority", "Message")]
    return element("h2", text("Pods")) + sortable_table(
        "pods", heads, rows, filter_label="Filter pods:"
    )


def _attempt_table(table_id: str, attempt: Mapping[str, Any]) -> Markup:
    """One attempt as a matrix: a row per node it examined, a column per plugin."""
    verdicts = attempt.get("nodes") or []
    plugins: dict[str, None] = {}
    for verdict in verdicts:
        if verdict["feasible"]:
            plugins.update(dict.fromkeys(verdict["scores"]))
        else:
            plugins[verdict["plugin"]] = None
    rows = []
    for verdict in verdicts:
        cells = [element("td", text(verdict["node"]))]
        for plugin in plugins:
            if not verdict["feasible"]:
                if verdict["plugin"] == plugin:
                    reasons = "".join(element("li", text(r)) for r in verdict["reasons"])
                    cells.append(
                        element(
                            "td",
                            element("strong", text(verdict["code"]))
                            + element("ul", reasons, class_="reasons"),
                            class_="filtered",
                            data_plugin=plugin,
                            data_verdict="filtered",
                        )
                    )
                else:
                    cells.append(element("td", "", data_plugin=plugin))
                continue
            score = verdict["scores"].get(plugin)
            cells.append(
                element(
                    "td",
                    text("" if score is None else score),
                    class_="num scored",
                    data_plugin=plugin,
                    data_score="" if score is None else str(score),
                )
            )
        scored = verdict["feasible"] and verdict["scores"]
        chosen = verdict["node"] == attempt.get("node")
        cells.append(element("td", text(verdict["total"] if scored else ""), class_="num"))
        cells.append(
            element("td", text("chosen" if chosen else ""), class_="stop" if chosen else None)
        )
        rows.append(
            element("tr", "".join(cells), data_node=verdict["node"], data_filter=verdict["node"])
        )
    heads = [text("Node"), *(text(p) for p in plugins), text("Total"), text("Chosen")]
    unlisted = attempt.get("unlistedNodes")
    listed = len(verdicts)
    note = ""
    if attempt["numAllNodes"] > listed:
        why = f": {unlisted}" if unlisted else ""
        note = element(
            "p",
            text(f"{attempt['numAllNodes'] - listed} node(s) not examined{why}"),
            class_="muted",
        )
    return (
        (element("p", text(attempt["message"]), class_="muted") if attempt["message"] else "")
        + sortable_table(table_id, heads, rows)
        + note
    )


def _outcome(attempt: Mapping[str, Any]) -> str:
    where = f" on {attempt['node']}" if attempt.get("node") else ""
    return f"attempt {attempt['attempt']}: {attempt['result']}{where}"


def _pod_matrices(index: int, pod: str, attempts: Sequence[Mapping[str, Any]]) -> Markup:
    """The pod's last attempt, then its earlier ones folded away."""
    *earlier, last = attempts
    body = element("h3", text(f"{pod}, {_outcome(last)}")) + _attempt_table(f"matrix-{index}", last)
    if earlier:
        folded = "".join(
            element("h4", text(_outcome(attempt)))
            + _attempt_table(f"matrix-{index}-{number}", attempt)
            for number, attempt in enumerate(earlier)
        )
        body += element(
            "details", element("summary", text(f"{len(earlier)} earlier attempt(s)")) + folded
        )
    return element("section", body, class_="matrix", data_pod=pod)


def _matrices(attempts: Sequence[Mapping[str, Any]]) -> Markup:
    by_pod: dict[str, list[Mapping[str, Any]]] = {}
    for attempt in attempts:
        by_pod.setdefault(attempt["pod"], []).append(attempt)
    if not by_pod:
        return ""
    intro = element(
        "p",
        text(
            "Each pod's scheduling attempts, the last one first: per node, the plugin that "
            "filtered it out and why, or each plugin's weighted score and the total."
        ),
        class_="muted",
    )
    return (
        element("h2", text("Node × plugin matrix per pod"))
        + intro
        + "".join(
            _pod_matrices(index, pod, pod_attempts)
            for index, (pod, pod_attempts) in enumerate(by_pod.items())
        )
    )


def _titled_table(
    title: str, table_id: str, heads: Sequence[str], rows: Sequence[Markup]
) -> Markup:
    """A heading and a sortable table under it; nothing at all when there are no rows."""
    if not rows:
        return ""
    return element("h2", text(title)) + sortable_table(table_id, [text(h) for h in heads], rows)


def _preemptions(preemptions: Sequence[Mapping[str, Any]]) -> Markup:
    rows = [
        element(
            "tr",
            element("td", text(entry["preemptor"]))
            + element("td", text(entry["node"]))
            + element("td", text(", ".join(entry["victims"])))
            + element("td", text(entry["pdbViolations"]), class_="num")
            + element("td", text(entry["decidedBy"])),
        )
        for entry in preemptions
    ]
    heads = ("Preemptor", "Node", "Victims", "PDB violations", "Decided by")
    return _titled_table("Preemptions", "preemptions", heads, rows)


def _gangs(groups: Sequence[Mapping[str, Any]]) -> Markup:
    rows = [
        element(
            "tr",
            element("td", text(f"{group['namespace']}/{group['name']}"))
            + "".join(
                element("td", text(group[field]), class_="num")
                for field in ("minMember", "members", "bound", "pending")
            )
            + element("td", text("yes" if group["complete"] else "no")),
        )
        for group in groups
    ]
    heads = ("PodGroup", "minMember", "Members", "Bound", "Pending", "Complete")
    return _titled_table("Gangs", "gangs", heads, rows)


def _timeline(events: Sequence[Mapping[str, Any]]) -> Markup:
    rows = [
        element(
            "tr",
            element("td", text(f"{event['time']:.3f}"), class_="num")
            + element("td", text(event["type"]))
            + element("td", text(event["reason"]))
            + element("td", text(event["object"]), class_="name")
            + element("td", text(event["message"])),
            data_filter=f"{event['reason']} {event['object']} {event['message']}",
        )
        for event in events
    ]
    heads = [text(h) for h in ("Time (s)", "Type", "Reason", "Object", "Message")]
    return element("h2", text("Timeline")) + sortable_table(
        "timeline", heads, rows, filter_label="Filter events:"
    )


def render_simulation_html(report: Mapping[str, Any]) -> str:
    """The page of a report built with ``explain=True`` (without, it has no matrices)."""
    summary = report["summary"]
    counts = ", ".join(
        f"{summary[key]} {label}"
        for key, label in (("bound", "bound"), ("pending", "pending"), ("preempted", "preempted"))
    )
    body = element(
        "p",
        text(f"{counts}; {summary['virtualSeconds']} s of simulated time."),
        id="summary",
        data_bound=summary["bound"],
        data_pending=summary["pending"],
        data_preempted=summary["preempted"],
    )
    body += "".join(
        element("p", text(f"warning: {warning}")) for warning in report.get("warnings") or []
    )
    body += _pods(report["pods"])
    body += utilisation_table(
        report["utilisation"], heading="Node utilisation", before="at the start", after="at the end"
    )
    body += _preemptions(report["preemptions"])
    body += _gangs(report.get("podGroups") or [])
    body += _matrices(report.get("attempts") or [])
    body += _timeline(report["events"])
    return page("Simulation", body)
