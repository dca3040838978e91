"""What the runner knows of every pod in the cluster, from one watch of all namespaces.

scheduler_perf decides when an op is complete, and samples its throughput, from a pod informer:
a pod is *scheduled* once ``spec.nodeName`` is set and *attempted* once it carries a
``PodScheduled`` condition. :class:`PodState` keeps that
much of every pod (namespace, labels, node, condition) and answers the same
questions over namespaces and label selectors; :func:`follow` keeps it current from a list and
a watch of ``/api/v1/pods``, resuming each watch the server ends and listing again only when
its resourceVersion has expired.

Only the runner's creator client reads the pods, so neither scheduler pays for the watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bench.kube import Client, list_then_watch

PODS_PATH = "/api/v1/pods"


@dataclass
class PodRecord:
    namespace: str
    name: str
    labels: Mapping[str, str]
    node: str = ""
    attempted: bool = False


def selects(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """A ``matchLabels``-style selector: every key with its value (none: everything)."""
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def _was_attempted(raw: Mapping[str, Any]) -> bool:
    """Upstream's test: any ``PodScheduled`` condition (the API server writes one for a gated
    pod, the scheduler one for a pod it could not place)."""
    conditions = (raw.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" for c in conditions)


class PodState:
    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], PodRecord] = {}
        self.lists = 0
        """How many times the pods were listed: once, then only when the watched version expired."""
        self._on_scheduled: list[Callable[[PodRecord], None]] = []

    def observe(self, event_type: str, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        key = (str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        if event_type == "DELETED":
            self.pods.pop(key, None)
            return
        record = self.pods.get(key)
        if record is None:
            record = PodRecord(*key, labels=dict(metadata.get("labels") or {}))
            self.pods[key] = record
        record.labels = dict(metadata.get("labels") or {})
        node = str((raw.get("spec") or {}).get("nodeName") or "")
        record.attempted = record.attempted or _was_attempted(raw)
        if node and not record.node:
            record.node = node
            for listener in list(self._on_scheduled):
                listener(record)

    def on_scheduled(self, listener: Callable[[PodRecord], None]) -> Callable[[], None]:
        """Call ``listener`` with every pod that becomes scheduled; returns the unsubscriber."""
        self._on_scheduled.append(listener)
        return lambda: self._on_scheduled.remove(listener)

    def select(
        self, namespaces: Iterable[str] | None = None, selector: Mapping[str, str] | None = None
    ) -> Iterator[PodRecord]:
        wanted = set(namespaces) if namespaces is not None else None
        for record in self.pods.values():
            if (wanted is None or record.namespace in wanted) and selects(selector, record.labels):
                yield record

    def scheduled(
        self, namespaces: Iterable[str] | None = None, selector: Mapping[str, str] | None = None
    ) -> int:
        return sum(1 for record in self.select(namespaces, selector) if record.node)

    def attempted(
        self, namespaces: Iterable[str] | None = None, selector: Mapping[str, str] | None = None
    ) -> int:
        """Scheduled, or tried and found unschedulable."""
        return sum(
            1 for record in self.select(namespaces, selector) if record.node or record.attempted
        )


async def follow(client: Client, state: PodState, ready: asyncio.Event) -> None:
    """Keep ``state`` current until cancelled; ``ready`` is set once the first list is in."""

    def listed(items: list[dict[str, Any]]) -> None:
        state.lists += 1
        for raw in items:
            state.observe("MODIFIED", raw)
        present = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items}
        for key in [key for key in state.pods if key not in present]:
            state.observe("DELETED", {"metadata": {"namespace": key[0], "name": key[1]}})
        ready.set()

    await list_then_watch(client, PODS_PATH, listed, state.observe)
