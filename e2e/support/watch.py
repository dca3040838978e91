"""Record every change of the pods (or another kind) in a namespace, in the API server's order.

``kubectl get pods --watch -o json --output-watch-events`` runs in the background for the whole
test; each event is kept with the moment it arrived. Short-lived states that polling could miss
(a victim's DisruptionTarget condition during its grace period) and orderings that polling
could not prove (a preemptor bound only after its victims were deleted) are read back from
this history. Events of one watch arrive in resourceVersion order, so comparing positions in
the history compares the order in which the API server applied the changes.

When the API server ends the watch (the fault suite kills and restarts it), the watch starts
again (counted in ``restarts``): its LIST replays the current objects as ADDED events, so the
history still ends in the cluster's state, with the changes made meanwhile folded into one.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .kubectl import Kubectl, condition, is_terminating, node_name, nominated_node
from .polling import wait_until


@dataclass(frozen=True)
class WatchEvent:
    index: int
    received: float  # time.monotonic() when kubectl printed it
    type: str  # ADDED, MODIFIED, DELETED
    object: Mapping[str, Any]

    @property
    def pod(self) -> Mapping[str, Any]:
        """The object, for watches of pods."""
        return self.object

    @property
    def name(self) -> str:
        return str(self.object["metadata"]["name"])

    @property
    def resource_version(self) -> int:
        """The object's resourceVersion as a number.

        Opaque in general, but the revision of the one etcd behind the local control plane
        (and behind kind), so it orders changes of different kinds too.
        """
        return int(self.object["metadata"]["resourceVersion"])


class ObjectWatch:
    """Every change of the objects of one kind in one namespace."""

    def __init__(self, kubectl: Kubectl, namespace: str, resource: str, kind: str) -> None:
        self.namespace = namespace
        self.kind = kind
        self.restarts = 0
        self._events: list[WatchEvent] = []
        self._lock = threading.Lock()
        self._stopping = False
        self._command = kubectl.command(
            "get", resource, "-n", namespace, "--watch", "--output-watch-events", "-o", "json"
        )
        self._proc = self._spawn()
        self._reader = threading.Thread(target=self._run, name=f"watch-{namespace}", daemon=True)
        self._reader.start()

    def _spawn(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self._command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )

    def _run(self) -> None:
        """Read kubectl's output; when the API server ends the watch (it was restarted, say),
        watch again: the new LIST replays the current objects as ADDED events."""
        while True:
            self._read()
            self._proc.wait()
            if self._stopping:
                return
            time.sleep(0.5)
            with self._lock:
                if self._stopping:
                    return
                self.restarts += 1
                self._proc = self._spawn()

    def _read(self) -> None:
        decoder = json.JSONDecoder()
        buffer = ""
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            buffer += line
            while True:
                stripped = buffer.lstrip()
                if not stripped:
                    buffer = ""
                    break
                try:
                    item, end = decoder.raw_decode(stripped)
                except json.JSONDecodeError:
                    buffer = stripped
                    break
                buffer = stripped[end:]
                self._add(item)

    def _add(self, item: Mapping[str, Any]) -> None:
        obj = item.get("object")
        if not isinstance(obj, Mapping) or obj.get("kind") != self.kind:
            return
        with self._lock:
            event = WatchEvent(len(self._events), time.monotonic(), str(item.get("type")), obj)
            self._events.append(event)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._reader.join(5)
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    # -- queries ---------------------------------------------------------------------------

    def events(self, name: str | None = None) -> list[WatchEvent]:
        with self._lock:
            events = list(self._events)
        return [e for e in events if name is None or e.name == name]

    def first(
        self, predicate: Callable[[WatchEvent], bool], name: str | None = None
    ) -> WatchEvent | None:
        return next((e for e in self.events(name) if predicate(e)), None)

    def wait_first(
        self,
        predicate: Callable[[WatchEvent], bool],
        *,
        name: str | None = None,
        timeout: float,
        what: str,
    ) -> WatchEvent:
        return wait_until(
            lambda: self.first(predicate, name),
            timeout=timeout,
            what=what,
            describe=lambda: self.summary(name),
        )

    def deleted(self, name: str) -> WatchEvent | None:
        return self.first(lambda e: e.type == "DELETED", name)

    def summary(self, name: str | None = None) -> list[str]:
        """One line per recorded event, for failure messages."""
        return [f"#{e.index} {e.type} {e.name} rv={e.resource_version}" for e in self.events(name)]


class PodWatch(ObjectWatch):
    def __init__(self, kubectl: Kubectl, namespace: str) -> None:
        super().__init__(kubectl, namespace, "pods", "Pod")

    def bound(self, name: str) -> WatchEvent | None:
        return self.first(lambda e: e.type != "DELETED" and node_name(e.pod) is not None, name)

    def terminating(self, name: str) -> WatchEvent | None:
        return self.first(lambda e: is_terminating(e.pod), name)

    def with_condition(self, name: str, kind: str) -> WatchEvent | None:
        return self.first(lambda e: condition(e.pod, kind) is not None, name)

    def nominated(self, name: str) -> WatchEvent | None:
        return self.first(lambda e: nominated_node(e.pod) is not None, name)

    def ever_bound_to(self, name: str) -> set[str]:
        return {n for e in self.events(name) if (n := node_name(e.pod)) is not None}

    def summary(self, name: str | None = None) -> list[str]:
        """One line per recorded event, for failure messages."""
        lines = []
        for e in self.events(name):
            pod = e.pod
            scheduled = condition(pod, "PodScheduled") or {}
            lines.append(
                f"#{e.index} {e.type} {e.name} node={node_name(pod)} "
                f"nominated={nominated_node(pod)} terminating={is_terminating(pod)} "
                f"scheduled={scheduled.get('status')}:{scheduled.get('reason')}"
            )
        return lines
