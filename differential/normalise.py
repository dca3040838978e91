"""From a run's raw record to an :class:`Outcome` that does not depend on the run.

Two runs of one scenario differ in things no scheduler decides: the namespace, the pods' UIDs,
the scheduler's name (in ``DisruptionTarget`` messages and ``reportingController``), timestamps
and resource versions. The normaliser keeps what the scheduler decided, and what a user reads
with ``kubectl``, keyed by the scenario's own names:

- ``placements``: each pod's final node, ``pending``, ``deleted``, or ``absent`` (never seen);
- ``victims``: pods that were deleted or began terminating (the runner deletes nothing while a
  scenario runs, so every deletion is a preemption);
- ``nominations``: each pod's ``status.nominatedNodeName`` over time, consecutive repeats folded,
  ``-`` where it was cleared; only pods that were ever nominated;
- ``conditions``: the final ``PodScheduled`` condition (status, reason, message);
- ``events``: the distinct ``FailedScheduling``, ``Preempted`` and ``Scheduled`` Events of each
  pod as ``reason: note``. How often a FailedScheduling happened depends on timing, so it is
  not compared; a ``Preempted`` or ``Scheduled`` Event that happened more than once is marked
  ``(repeated)``. Counts above two are not told apart because client-go's events recorder
  writes only the first repeat at once (the rest when the series ends, minutes later);
- ``disruption_targets``: the first ``DisruptionTarget`` condition each victim showed;
- ``claims``: the PV each claim of the namespace ended up bound to, or ``unbound``;
- ``allocations``: each ResourceClaim's ``status.allocation`` and ``status.reservedFor`` as
  ``<node>: <request> <driver>/<pool>/<device>, ...; reserved for <pods>`` (or
  ``unallocated``). A claim the resource-claim controller made from a template has a random
  name; it is keyed ``<pod>/<entry of spec.resourceClaims>`` instead.

In every text, a pod's UID becomes its name, any other UID ``<uid>``, the namespace ``<ns>``
and the scheduler's name ``<scheduler>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .record import RunRecord
from .scenario import Raw, name_of

Outcome = dict[str, dict[str, Any]]
"""Aspect name -> key (a pod or claim name) -> a string or a list of strings."""

ASPECTS = (
    "placements",
    "victims",
    "nominations",
    "conditions",
    "events",
    "disruption_targets",
    "claims",
    "allocations",
)

EVENT_REASONS = ("FailedScheduling", "Preempted", "Scheduled")
COUNTED_REASONS = ("Preempted", "Scheduled")
PENDING = "pending"
DELETED = "deleted"
ABSENT = "absent"
CLEARED = "-"
UNBOUND = "unbound"
UNALLOCATED = "unallocated"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""Set by the resource-claim controller on the claims it makes: the pod's entry name."""
NO_CONDITION = "none"

_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


class TextNormaliser:
    """Replaces what differs between runs in a message by placeholders or scenario names."""

    def __init__(self, namespace: str, scheduler_name: str, uids: Mapping[str, str]) -> None:
        self.namespace = namespace
        self.scheduler_name = scheduler_name
        self.uids = dict(uids)
        self._namespace = re.compile(rf"(?<![\w-]){re.escape(namespace)}(?![\w-])")

    def __call__(self, text: str) -> str:
        text = _UID.sub(lambda match: self.uids.get(match.group(0), "<uid>"), text)
        text = self._namespace.sub("<ns>", text)
        return text.replace(self.scheduler_name, "<scheduler>")


def pod_uids(record: RunRecord) -> dict[str, str]:
    """UID -> name of every pod the run saw."""
    uids: dict[str, str] = {}
    for pod in [*record.pods, *(change["object"] for change in record.history)]:
        metadata = pod.get("metadata") or {}
        if metadata.get("uid") and metadata.get("name"):
            uids[str(metadata["uid"])] = str(metadata["name"])
    return uids


def normalise(record: RunRecord, pod_names: Iterable[str] = ()) -> Outcome:
    """The run's outcome; ``pod_names`` are the scenario's pods (reported even if never seen)."""
    text = TextNormaliser(record.namespace, record.scheduler_name, pod_uids(record))
    final = {name_of(pod): pod for pod in record.pods}
    changes = [(str(c.get("type")), c["object"]) for c in record.history]
    names = list(dict.fromkeys([*pod_names, *final, *(name_of(obj) for _, obj in changes)]))
    return {
        "placements": {name: _placement(name, final, changes) for name in names},
        "victims": _victims(final.values(), changes),
        "nominations": _nominations(changes),
        "conditions": {
            name: _condition_text(_condition(pod, "PodScheduled"), text)
            for name, pod in final.items()
        },
        "events": _events(record.events, text),
        "disruption_targets": _disruption_targets(changes, text),
        "claims": {
            name_of(claim): (claim.get("spec") or {}).get("volumeName") or UNBOUND
            for claim in record.claims
        },
        "allocations": dict(sorted(_allocation(claim, text) for claim in record.resource_claims)),
    }


def _claim_key(claim: Mapping[str, Any]) -> str:
    metadata = claim.get("metadata") or {}
    entry = (metadata.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    owners = [o for o in metadata.get("ownerReferences") or [] if o.get("kind") == "Pod"]
    if entry and owners:
        return f"{owners[0].get('name')}/{entry}"
    return name_of(claim)


def _allocation(claim: Mapping[str, Any], text: TextNormaliser) -> tuple[str, str]:
    status = claim.get("status") or {}
    allocation = status.get("allocation")
    if not allocation:
        return _claim_key(claim), UNALLOCATED
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    nodes = sorted(
        str(value)
        for term in terms
        for field in term.get("matchFields") or []
        if field.get("key") == "metadata.name"
        for value in field.get("values") or []
    )
    devices = ", ".join(
        f"{r.get('request')} {r.get('driver')}/{r.get('pool')}/{r.get('device')}"
        for r in (allocation.get("devices") or {}).get("results") or []
    )
    users = sorted(text(str(entry.get("name"))) for entry in status.get("reservedFor") or [])
    where = ",".join(nodes) or "any node"
    return _claim_key(claim), f"{where}: {devices}; reserved for {', '.join(users) or 'nobody'}"


def _placement(
    name: str, final: Mapping[str, Raw], changes: list[tuple[str, Mapping[str, Any]]]
) -> str:
    pod = final.get(name)
    if pod is not None:
        return str((pod.get("spec") or {}).get("nodeName") or PENDING)
    return DELETED if any(name_of(obj) == name for _, obj in changes) else ABSENT


def _terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _victims(
    final: Iterable[Mapping[str, Any]], changes: list[tuple[str, Mapping[str, Any]]]
) -> dict[str, str]:
    victims: dict[str, str] = {}
    for kind, pod in changes:
        if kind == "DELETED":
            victims[name_of(pod)] = DELETED
        elif _terminating(pod):
            victims.setdefault(name_of(pod), "terminating")
    for pod in final:
        if _terminating(pod):
            victims[name_of(pod)] = "terminating"
    return dict(sorted(victims.items()))


def _nominations(changes: list[tuple[str, Mapping[str, Any]]]) -> dict[str, list[str]]:
    sequences: dict[str, list[str]] = {}
    for kind, pod in changes:
        if kind == "DELETED":
            continue
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or CLEARED
        sequence = sequences.setdefault(name_of(pod), [])
        if not sequence and nominated == CLEARED:
            continue  # not nominated yet
        if not sequence or sequence[-1] != nominated:
            sequence.append(nominated)
    return {name: seq for name, seq in sorted(sequences.items()) if seq}


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _condition_text(condition: Mapping[str, Any] | None, text: TextNormaliser) -> str:
    if condition is None:
        return NO_CONDITION
    parts = [str(condition.get("status"))]
    if condition.get("reason"):
        parts.append(str(condition["reason"]))
    rendered = " ".join(parts)
    if condition.get("message"):
        rendered += ": " + text(str(condition["message"]))
    return rendered


def _disruption_targets(
    changes: list[tuple[str, Mapping[str, Any]]], text: TextNormaliser
) -> dict[str, str]:
    targets: dict[str, str] = {}
    for _, pod in changes:
        name = name_of(pod)
        if name in targets:
            continue
        condition = _condition(pod, "DisruptionTarget")
        if condition is not None:
            targets[name] = _condition_text(condition, text)
    return dict(sorted(targets.items()))


def occurrences(event: Mapping[str, Any]) -> int:
    series = event.get("series") or {}
    return int(series.get("count") or event.get("deprecatedCount") or 1)


def _events(events: Iterable[Mapping[str, Any]], text: TextNormaliser) -> dict[str, list[str]]:
    counts: dict[tuple[str, str, str], int] = {}
    for event in events:
        regarding = event.get("regarding") or {}
        reason = str(event.get("reason") or "")
        if regarding.get("kind") != "Pod" or reason not in EVENT_REASONS:
            continue
        key = (str(regarding.get("name")), reason, text(str(event.get("note") or "")))
        counts[key] = counts.get(key, 0) + occurrences(event)
    by_pod: dict[str, list[str]] = {}
    for (pod, reason, note), count in counts.items():
        line = f"{reason}: {note}"
        if reason in COUNTED_REASONS and count > 1:
            line += " (repeated)"
        by_pod.setdefault(pod, []).append(line)
    return {pod: sorted(lines) for pod, lines in sorted(by_pod.items())}
