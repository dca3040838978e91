"""``pending``: the pods waiting for this scheduler, how long they have waited and why.

A pod is this scheduler's when its ``spec.schedulerName`` is one of the profiles' names; it is
pending while it has no node. Its reason is what the scheduler last wrote on it: the
``PodScheduled=False`` condition. The condition of a failed attempt lists a count of nodes per
reason (``0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint ...``);
the reason that turned away the most nodes is the one to act on first, and is shown alone. A pod
without the condition has not been tried yet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.timeutil import parse_timestamp

NOT_TRIED = "not tried yet"
_NODE_REASON = re.compile(r"(\d+) (.+?)(?=, \d+ |\.(?: |$)|$)")
_AVAILABLE = "nodes are available: "


@dataclass(frozen=True)
class PendingPod:
    namespace: str
    name: str
    scheduler_name: str
    waiting_seconds: float | None
    reason: str
    top_reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "schedulerName": self.scheduler_name,
            "waitingSeconds": self.waiting_seconds,
            "reason": self.reason,
            "topReason": self.top_reason,
        }


def top_reason(message: str) -> str:
    """The reason that turned away the most nodes in a scheduling failure's ``message``
    (``3 Insufficient cpu``); the message itself when it has no count of nodes per reason."""
    start = message.find(_AVAILABLE)
    if start < 0:
        return message
    listed = message[start + len(_AVAILABLE) :].split(" preemption: ", maxsplit=1)[0]
    counts = [(int(count), text) for count, text in _NODE_REASON.findall(listed)]
    if not counts:
        return message
    count, text = max(counts, key=lambda pair: pair[0])
    return f"{count} {text}"


def _scheduled_condition(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None


def _waiting(created: object, now: float) -> float | None:
    try:
        since = parse_timestamp(created, "metadata.creationTimestamp")
    except InvalidObjectError:
        return None
    return None if since is None else max(0.0, now - since)


def pending_pods(
    pods: Iterable[Mapping[str, Any]], scheduler_names: Sequence[str], now: float
) -> list[PendingPod]:
    """The pods among ``pods`` that wait for a scheduler in ``scheduler_names``, longest first."""
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        scheduler = spec.get("schedulerName") or "default-scheduler"
        if scheduler not in scheduler_names or spec.get("nodeName"):
            continue
        if status.get("phase") not in (None, "Pending"):
            continue
        condition = _scheduled_condition(status)
        if condition is None or condition.get("status") != "False":
            reason, top = "", NOT_TRIED
        else:
            reason = str(condition.get("reason") or "")
            top = top_reason(str(condition.get("message") or "")) or reason
        found.append(
            PendingPod(
                namespace=str(metadata.get("namespace") or ""),
                name=str(metadata.get("name") or ""),
                scheduler_name=scheduler,
                waiting_seconds=_waiting(metadata.get("creationTimestamp"), now),
                reason=reason,
                top_reason=top,
            )
        )
    found.sort(key=lambda pod: (-(pod.waiting_seconds or 0.0), pod.namespace, pod.name))
    return found


def duration(seconds: float | None) -> str:
    """A wait as kubectl shows an age: ``45s``, ``3m12s``, ``2h5m``, ``3d4h``; ``<unknown>``."""
    if seconds is None:
        return "<unknown>"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def render_table(pods: Sequence[PendingPod], all_namespaces: bool) -> str:
    """kubectl's layout: a header, columns padded to their widest cell, NAMESPACE only with -A."""
    headers = ["NAMESPACE"] if all_namespaces else []
    headers += ["NAME", "WAITING", "REASON", "TOP REASON"]
    rows = []
    for pod in pods:
        row = [pod.namespace] if all_namespaces else []
        row += [pod.name, duration(pod.waiting_seconds), pod.reason or "-", pod.top_reason]
        rows.append(row)
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    return "".join(
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in [headers, *rows]
    )
