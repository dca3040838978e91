"""Turn a simulation result into the documented JSON shape, YAML, or a readable table.

PodGroups of the scenario get a section of their own: each group's ``minMember`` against its
members bound and pending at the end. Only a profile with Coscheduling schedules them as gangs;
without one, the scheduler does not read PodGroups (as on a cluster) and the section says so.
The scheduler's warnings about its configuration (a profile meeting members of a PodGroup
without Coscheduling) come first.

``utilisation`` gives each node's requests against its allocatable (sim/utilisation.py) at the
start of the run (the scenario's bound pods) and at its end, and the cluster's total: per
resource name, CPU in millicores, memory in bytes, pods, extended resources and each DRA
driver's devices (``devices/<driver>``) as counts. Every node and the total list the same
resources, so a reader can index them without checking.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from kopf_scheduler.model.pod_group import POD_GROUP_LABEL
from kopf_scheduler.preemption.record import OUTCOME_NOMINATED
from kopf_scheduler.sim.runner import SimulationResult
from kopf_scheduler.sim.utilisation import Utilisation, resources_of, total


def _pod_entry(
    result: SimulationResult, key: str, raw: dict[str, Any], deleted: bool
) -> dict[str, Any]:
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    profiles = result.scheduler.profiles
    scheduler_name = spec.get("schedulerName") or "default-scheduler"
    message = ""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = condition.get("message") or ""
    if deleted:
        state = "Preempted" if result.cluster.was_preempted(key) else "Deleted"
    elif spec.get("nodeName"):
        state = "Bound"
    elif scheduler_name not in profiles:
        state = "NotOurs"
    else:
        state = "Pending"
    namespace, name = key.split("/", 1)
    return {
        "namespace": namespace,
        "name": name,
        "node": spec.get("nodeName") or None,
        "nominatedNode": status.get("nominatedNodeName") or None,
        "status": state,
        "priority": spec.get("priority") or 0,
        "message": message,
    }


GANG_PLUGIN = "Coscheduling"


def _pod_group_entries(
    result: SimulationResult, pods: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each PodGroup with its members' outcome (from the pod entries of the report)."""
    members: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for key, raw in result.cluster.pods.items():
        group = ((raw.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
        if group:
            members.setdefault((key.split("/", 1)[0], group), []).append(raw)
    by_key = {f"{p['namespace']}/{p['name']}": p for p in pods}
    entries = []
    for key, raw in sorted(result.cluster.pod_groups.items()):
        namespace, name = key.split("/", 1)
        statuses = [
            by_key[f"{namespace}/{pod['metadata']['name']}"]["status"]
            for pod in members.get((namespace, name), [])
        ]
        min_member = int((raw.get("spec") or {}).get("minMember") or 0)
        bound = statuses.count("Bound")
        entries.append(
            {
                "namespace": namespace,
                "name": name,
                "minMember": min_member,
                "members": len(statuses),
                "bound": bound,
                "pending": statuses.count("Pending"),
                "complete": bound >= min_member,
            }
        )
    return entries


def _utilisation_entries(result: SimulationResult) -> dict[str, Any]:
    """Each node's utilisation at the start and at the end, and the cluster's total. A
    simulation adds and removes no node, so the nodes are those of the end, in their order."""
    before, after = result.utilisation_before, result.utilisation_after
    names = [name for name in after if name in before]
    resources = resources_of([*before.values(), *after.values()])

    def entry(start: Utilisation, end: Utilisation) -> dict[str, dict[str, int]]:
        return {
            "allocatable": {key: end.allocatable.get(key, 0) for key in resources},
            "before": {key: start.requested.get(key, 0) for key in resources},
            "after": {key: end.requested.get(key, 0) for key in resources},
        }

    return {
        "nodes": [{"node": name, **entry(before[name], after[name])} for name in names],
        "total": entry(
            total((before[name] for name in names), resources),
            total((after[name] for name in names), resources),
        ),
    }


def build_report(
    result: SimulationResult, *, explain: bool = False, added: list[str] | None = None
) -> dict[str, Any]:
    cluster = result.cluster
    pods: list[dict[str, Any]] = []
    for key in sorted(set(cluster.pods) | set(cluster.deleted)):
        if key in cluster.pods:
            pods.append(_pod_entry(result, key, cluster.pods[key], False))
        else:
            pods.append(_pod_entry(result, key, cluster.deleted[key], True))
    preemptions = []
    for attempt in result.attempts:
        record = attempt.preemption
        if record is None or record.get("outcome") != OUTCOME_NOMINATED:
            continue
        # A gang's plan makes room on several nodes at once: a row for each.
        by_node = record.get("victims_by_node") or ((record["nominated_node"], record["victims"]),)
        for node, victims in by_node:
            preemptions.append(
                {
                    "preemptor": record["preemptor"],
                    "node": node,
                    "victims": list(victims),
                    "pdbViolations": record["num_pdb_violations"],
                    "decidedBy": record["deciding_criterion"],
                }
            )
    events = [
        {
            "type": e.type,
            "reason": e.reason,
            "object": e.object,
            "message": e.message,
            "time": round(e.time - result.cluster.clock.now() + result.virtual_seconds, 3),
        }
        for e in cluster.events
    ]
    summary = {
        "bound": sum(1 for p in pods if p["status"] == "Bound"),
        "pending": sum(1 for p in pods if p["status"] == "Pending"),
        "preempted": sum(1 for p in pods if p["status"] == "Preempted"),
        "notOurs": sum(1 for p in pods if p["status"] == "NotOurs"),
        "virtualSeconds": round(result.virtual_seconds, 3),
    }
    report: dict[str, Any] = {
        "pods": pods,
        "preemptions": preemptions,
        "events": events,
        "summary": summary,
        "utilisation": _utilisation_entries(result),
    }
    if result.scheduler.warnings:
        report["warnings"] = list(result.scheduler.warnings)
    if cluster.pod_groups:
        report["podGroups"] = _pod_group_entries(result, pods)
        report["gangScheduling"] = any(
            plugin.name == GANG_PLUGIN
            for framework in result.scheduler.profiles.values()
            for plugin in framework.plugins.all
        )
    if explain:
        report["attempts"] = [a.as_dict() for a in result.attempts]
    if added:
        by_key = {f"{p['namespace']}/{p['name']}": p for p in pods}
        report["whatIf"] = [
            {
                **by_key[key],
                "preempts": [
                    victim
                    for preemption in preemptions
                    if preemption["preemptor"] == key
                    for victim in preemption["victims"]
                ],
            }
            for key in added
            if key in by_key
        ]
    return report


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False)


def render_yaml(report: dict[str, Any]) -> str:
    return yaml.safe_dump(report, sort_keys=False, width=120)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return lines


def render_table(report: dict[str, Any]) -> str:
    lines = [f"warning: {warning}" for warning in report.get("warnings", ())]
    if lines:
        lines.append("")
    if "whatIf" in report:
        lines.append("WHAT IF")
        lines += _table(
            ["POD", "STATUS", "NODE", "WOULD PREEMPT", "MESSAGE"],
            [
                [
                    f"{p['namespace']}/{p['name']}",
                    p["status"],
                    p["node"] or p["nominatedNode"] or "-",
                    ", ".join(p["preempts"]) or "-",
                    p["message"],
                ]
                for p in report["whatIf"]
            ],
        )
        lines.append("")
    lines.append("PODS")
    lines += _table(
        ["NAMESPACE/NAME", "PRIORITY", "STATUS", "NODE", "NOMINATED", "MESSAGE"],
        [
            [
                f"{p['namespace']}/{p['name']}",
                str(p["priority"]),
                p["status"],
                p["node"] or "-",
                p["nominatedNode"] or "-",
                (p["message"][:90] + "...") if len(p["message"]) > 93 else p["message"],
            ]
            for p in report["pods"]
        ],
    )
    if "podGroups" in report:
        lines += ["", "POD GROUPS"]
        if not report["gangScheduling"]:
            lines.append(
                f"(no profile enables {GANG_PLUGIN}: the scheduler ignores PodGroups, "
                "and their pods are scheduled one by one)"
            )
        lines += _table(
            ["NAMESPACE/NAME", "MIN MEMBER", "MEMBERS", "BOUND", "PENDING", "COMPLETE"],
            [
                [
                    f"{g['namespace']}/{g['name']}",
                    str(g["minMember"]),
                    str(g["members"]),
                    str(g["bound"]),
                    str(g["pending"]),
                    "yes" if g["complete"] else "no",
                ]
                for g in report["podGroups"]
            ],
        )
    lines += ["", "PREEMPTIONS"]
    if report["preemptions"]:
        lines += _table(
            ["PREEMPTOR", "NODE", "VICTIMS", "PDB VIOLATIONS", "DECIDED BY"],
            [
                [
                    p["preemptor"],
                    p["node"],
                    ", ".join(p["victims"]),
                    str(p["pdbViolations"]),
                    p["decidedBy"],
                ]
                for p in report["preemptions"]
            ],
        )
    else:
        lines.append("(none)")
    lines += ["", "EVENTS"]
    lines += _table(
        ["TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        [
            [f"{e['time']:g}s", e["type"], e["reason"], e["object"], e["message"]]
            for e in report["events"]
        ],
    )
    summary = report["summary"]
    lines += [
        "",
        f"SUMMARY  bound={summary['bound']} pending={summary['pending']} "
        f"preempted={summary['preempted']} not-ours={summary['notOurs']} "
        f"virtual-time={summary['virtualSeconds']:g}s",
    ]
    if "attempts" in report:
        lines += ["", "EXPLANATIONS"]
        lines += render_explanations(report["attempts"])
    return "\n".join(lines) + "\n"


def render_explanations(attempts: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for attempt in attempts:
        head = f"{attempt['pod']} attempt {attempt['attempt']}: {attempt['result']}"
        if attempt.get("node"):
            head += f" on {attempt['node']}"
        lines.append(head)
        for node in attempt["nodes"]:
            if node["feasible"]:
                scores = ", ".join(f"{k}={v}" for k, v in node["scores"].items())
                lines.append(
                    f"  {node['node']}: feasible, total {node['total']}"
                    + (f" ({scores})" if scores else "")
                )
            else:
                lines.append(
                    f"  {node['node']}: rejected by {node['plugin'] or '-'} ({node['code']}): "
                    + "; ".join(node["reasons"])
                    + (f" ({node['detail']})" if node.get("detail") else "")
                )
        for plugin, state in (attempt.get("plugins") or {}).items():
            # Sorted, as the annotation stores them, so both read the same.
            details = ", ".join(f"{k} {v}" for k, v in sorted(state.items()) if k != "summary")
            summary = state.get("summary") or ""
            lines.append(f"  {plugin}: {summary}" + (f" ({details})" if details else ""))
        if attempt.get("unlistedNodes"):
            lines.append(f"  other nodes: {attempt['unlistedNodes']}")
        preemption = attempt.get("preemption")
        if preemption:
            lines.append(
                f"  preemption: {preemption['outcome']}"
                + (
                    f" on {preemption['nominated_node']}"
                    if preemption.get("nominated_node")
                    else ""
                )
                + (f" ({preemption['reason']})" if preemption.get("reason") else "")
            )
            for candidate in preemption.get("candidates") or []:
                verdict = (
                    "chosen"
                    if not candidate.get("eliminated_by")
                    else f"lost on {candidate['eliminated_by']}"
                )
                criteria = candidate["criteria"]
                lines.append(
                    f"    candidate {candidate['node']}: "
                    f"victims [{', '.join(candidate['victims'])}], "
                    f"pdb violations {criteria['num_pdb_violations']}, highest victim priority "
                    f"{criteria['highest_victim_priority']}, "
                    f"victims {criteria['num_victims']}: {verdict}"
                )
    return lines
