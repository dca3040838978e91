"""What the cluster lacks to hold a PodGroup's ``minResources``, worded as scheduler-plugins
words it.

Why
    Coscheduling's PreFilter turns a group away while the free room of all nodes together cannot
    hold ``minResources`` and ``minMember`` pods, and gang preemption must not plan for a group
    that check would still turn away. Both ask this module over a list of nodes: the
    scheduler's snapshot, or the nodes as a plan leaves them.

The computation
    Each node offers its allocatable minus what its pods request, the group's own pods not
    counted (the minimum includes them), and ``pods`` is the node's pod capacity minus its other
    pods. A node requesting more than it has offers a negative amount, which widens the gap, as
    upstream's plain subtraction does. Nodes are taken in order until nothing is missing.

The message
    Upstream prints the missing amounts as Go prints a ``ResourceList``:
    ``resource gap: map[cpu:{{1500 -3} {<nil>}  DecimalSI} pods:{{2 0} {<nil>}  DecimalSI}]``:
    per resource, sorted by name, the quantity's integer value and decimal scale, then its
    format. The scale is the one Go's arithmetic leaves: the requested quantity's own (as
    written in the PodGroup) until a node's non-zero amount is subtracted, then the smaller of
    the two (milli for CPU, units for the rest). A quantity Go does not hold as a 64-bit value
    with a scale (an exponent beyond its fast path, a fraction of a binary unit) is printed
    with a pointer in upstream's text; such an amount is written here in its canonical form
    instead (``cpu:1500m``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL, PodGroup
from kopf_scheduler.model.resources import CPU, PODS

_DECIMAL_SUFFIXES = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18
}  # fmt: skip
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(.*)$")
_MAX_INT64_DIGITS = 18
_NANO = -9


@dataclass(frozen=True)
class _GoQuantity:
    """A quantity as Go's ``resource.Quantity`` holds it on its 64-bit fast path."""

    value: int
    scale: int
    format: str


def _go_quantity(written: Any) -> _GoQuantity | None:
    """How Go parses ``written`` (a PodGroup's quantity); ``None`` off the fast path."""
    match = _QUANTITY.match(str(written).strip())
    if match is None:
        return None
    sign, num, denom, suffix = match.groups()
    denom = denom or ""
    num = num.lstrip("0") or ("0" if not denom else "")
    if suffix in _BINARY_SUFFIXES:
        exponent = _BINARY_SUFFIXES[suffix]
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        if denom or precision < 0:
            return None
        value, scale, form = int(num or "0") << exponent, 0, "BinarySI"
    else:
        if suffix in _DECIMAL_SUFFIXES:
            exponent, form = _DECIMAL_SUFFIXES[suffix], "DecimalSI"
        elif suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
            exponent, form = int(suffix[1:]), "DecimalExponent"
        else:
            return None
        scale = exponent - len(denom)
        if _MAX_INT64_DIGITS - len(num) - len(denom) < 0 or scale < _NANO:
            return None
        value = int((num + denom) or "0")
    return _GoQuantity(-value if sign == "-" else value, scale, form)


_NODE_SCALE = {CPU: -3}
"""The scale of what a node offers, by resource (Go's NewMilliQuantity for CPU, else units)."""
_UNIT_SCALE = {CPU: -3}
"""The scale of our own integers, by resource (millicores for CPU, else units)."""


@dataclass
class _Missing:
    amount: int
    """In our units (millicores for CPU)."""
    quantity: _GoQuantity | None
    scale: int
    """Go's scale for the amount so far."""


def resource_gap(group: PodGroup, nodes: Iterable[api.NodeInfo]) -> dict[str, _Missing] | None:
    """What ``nodes`` lack to hold ``group``'s ``minResources`` and ``minMember`` pods; ``None``
    when they have room (or the group sets no minimum)."""
    if group.min_resources is None:
        return None
    written: Mapping[str, Any] = (group.raw.get("spec") or {}).get("minResources") or {}
    missing: dict[str, _Missing] = {}
    for name in group.min_resources.names():
        quantity = _go_quantity(written.get(name))
        scale = quantity.scale if quantity is not None else _UNIT_SCALE.get(name, 0)
        missing[name] = _Missing(group.min_resources.get(name), quantity, scale)
    missing[PODS] = _Missing(group.min_member, _GoQuantity(group.min_member, 0, "DecimalSI"), 0)
    for info in nodes:
        if info.node is None:
            continue
        free = info.allocatable.copy()
        free.subtract(info.requested)
        own = [pod for pod in info.pods if _is_member(pod.namespace, pod.labels, group)]
        for pod in own:
            free.add(pod.requests)
        free.allowed_pod_number = info.allocatable.allowed_pod_number - (len(info.pods) - len(own))
        for name in list(missing):
            offered = free.get(name)
            entry = missing[name]
            entry.amount -= offered
            if offered:
                entry.scale = min(entry.scale, _NODE_SCALE.get(name, 0))
            if entry.amount <= 0:
                del missing[name]
        if not missing:
            return None
    return missing or None


def _is_member(namespace: str, labels: Mapping[str, str], group: PodGroup) -> bool:
    return namespace == group.namespace and labels.get(POD_GROUP_LABEL) == group.name


def describe_gap(gap: Mapping[str, _Missing]) -> str:
    """``resource gap: map[...]``, upstream's message for ``gap``."""
    return (
        "resource gap: map["
        + " ".join(f"{name}:{_go_text(name, gap[name])}" for name in sorted(gap))
        + "]"
    )


def _go_text(name: str, missing: _Missing) -> str:
    if missing.quantity is None:
        return _canonical(name, missing.amount)
    unit = _UNIT_SCALE.get(name, 0)
    if missing.scale <= unit:
        value = missing.amount * 10 ** (unit - missing.scale)
    else:
        value = missing.amount // 10 ** (missing.scale - unit)
    return f"{{{{{value} {missing.scale}}} {{<nil>}}  {missing.quantity.format}}}"


def _canonical(name: str, amount: int) -> str:
    if name == CPU:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    return str(amount)
