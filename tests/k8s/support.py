"""Fakes for the API adapter tests: a clock that records sleeps, Status bodies, a Lease server."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import kmock

from kopf_scheduler.sim.virtual_clock import VirtualClock

START = 1_767_225_600.0
"""2026-01-01T00:00:00Z."""


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``Status`` body as the API server sends with errors."""
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def reply(code: int, reason: str = "", message: str = "") -> kmock.Response:
    """An error reply with a Status body."""
    return kmock.Response(status=code, payload=status(code, reason, message))


def ok(payload: dict[str, Any], code: int = 200) -> kmock.Response:
    """A success reply. Callable reactions that answer with several statuses must name the status
    on every reply: kmock keeps the last status of a reaction otherwise."""
    return kmock.Response(status=code, payload=payload)


async def drive(clock: VirtualClock, condition: Callable[[], bool], steps: int = 1000) -> None:
    """Let real I/O run and jump virtual time to the next sleeper until ``condition`` holds."""
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0.002)
        if condition():
            return
        deadline = clock.next_deadline()
        if deadline is not None:
            clock.advance_to(deadline)
    raise AssertionError("the condition never held")


class LeaseServer:
    """One namespace's Leases with resourceVersion checks, like the API server's optimistic locking.

    ``failures`` holds statuses to answer the next requests with (any method), in order.
    """

    def __init__(self, namespace: str = "kube-system") -> None:
        self.namespace = namespace
        self.leases: dict[str, dict[str, Any]] = {}
        self.version = 100
        self.failures: list[int] = []
        self.after_get: Callable[[], object] | None = None
        """Runs after a GET is answered: another candidate acting between our read and write."""

    @property
    def collection(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"

    def put_lease(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Store a Lease as another candidate would have written it."""
        self.version += 1
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "resourceVersion": str(self.version),
            },
            "spec": dict(spec),
        }
        self.leases[name] = lease
        return lease

    def __call__(self, request: kmock.Request) -> kmock.Response:
        if self.failures:
            code = self.failures.pop(0)
            return reply(code, "InternalError" if code >= 500 else "Failure", "injected")
        method = request.method.value
        path = request.url.path
        if method == "POST" and path == self.collection:
            name = request.data["metadata"]["name"]
            if name in self.leases:
                return reply(409, "AlreadyExists", f'leases.coordination.k8s.io "{name}" exists')
            return kmock.Response(status=201, payload=self.put_lease(name, request.data["spec"]))
        name = path.rsplit("/", 1)[-1]
        lease = self.leases.get(name)
        if lease is None:
            return reply(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
        if method == "GET":
            answer = kmock.Response(status=200, payload=copy.deepcopy(lease))
            if self.after_get is not None:
                self.after_get()
            return answer
        if method == "PUT":
            sent = request.data["metadata"].get("resourceVersion")
            if sent != lease["metadata"]["resourceVersion"]:
                return reply(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again",
                )
            return kmock.Response(status=200, payload=self.put_lease(name, request.data["spec"]))
        return reply(405, "MethodNotAllowed", method)
