"""A thin ``kubectl`` wrapper: run it, parse its JSON, apply or create objects from dicts.

The suite asserts on what ``kubectl`` reports (pods, conditions, events, Leases), so every read
goes through the real binary against the cluster under test rather than a client library.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


class KubectlError(RuntimeError):
    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"kubectl {' '.join(args)} failed ({returncode}): {stderr.strip()}")
        self.returncode = returncode
        self.stderr = stderr

    @property
    def not_found(self) -> bool:
        return "NotFound" in self.stderr or "not found" in self.stderr


class Kubectl:
    """``kubectl`` bound to one binary and one kubeconfig."""

    def __init__(self, binary: str | Path, kubeconfig: str | Path | None) -> None:
        self.binary = str(binary)
        self.kubeconfig = str(kubeconfig) if kubeconfig else None

    def command(self, *args: str) -> list[str]:
        base = [self.binary]
        if self.kubeconfig:
            base.append(f"--kubeconfig={self.kubeconfig}")
        return [*base, *args]

    def run(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.command(*args),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise KubectlError(args, proc.returncode, proc.stderr)
        return proc

    def json(self, *args: str, timeout: float = 60) -> Any:
        return json.loads(self.run(*args, "-o", "json", timeout=timeout).stdout)

    # -- objects -------------------------------------------------------------------------

    def apply(self, *objects: Mapping[str, Any], server_side: bool = False) -> None:
        args = ["apply", "-f", "-"]
        if server_side:
            args += ["--server-side", "--force-conflicts"]
        self.run(*args, input=_as_list(objects))

    def create(self, *objects: Mapping[str, Any]) -> None:
        self.run("create", "-f", "-", input=_as_list(objects))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """One object, or None when it does not exist."""
        args = ["get", kind, name]
        if namespace:
            args += ["-n", namespace]
        try:
            result: dict[str, Any] = self.json(*args)
        except KubectlError as error:
            if error.not_found:
                return None
            raise
        return result

    def items(
        self, kind: str, namespace: str | None = None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        args = ["get", kind]
        args += ["-n", namespace] if namespace else ["--all-namespaces"]
        if selector:
            args += ["-l", selector]
        items: list[dict[str, Any]] = self.json(*args)["items"]
        return items

    def delete(self, kind: str, *names: str, namespace: str | None = None, **flags: str) -> None:
        args = ["delete", kind, *names, "--ignore-not-found"]
        if namespace:
            args += ["-n", namespace]
        args += [f"--{key.replace('_', '-')}={value}" for key, value in flags.items()]
        self.run(*args, timeout=120)

    # -- what the suite reads most ---------------------------------------------------------

    def pods(self, namespace: str) -> dict[str, dict[str, Any]]:
        return {pod["metadata"]["name"]: pod for pod in self.items("pods", namespace)}

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get("pod", name, namespace)

    def events(self, namespace: str) -> list[dict[str, Any]]:
        """``events.k8s.io/v1`` Events in ``namespace`` (the API kube-scheduler writes)."""
        return self.items("events.v1.events.k8s.io", namespace)

    def nodes(self) -> list[dict[str, Any]]:
        return self.items("nodes")


def _as_list(objects: Iterable[Mapping[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


# -- reading pods ------------------------------------------------------------------------


def condition(pod: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return None


def node_name(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def nominated_node(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("nominatedNodeName") or None


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def unschedulable_message(pod: Mapping[str, Any]) -> str | None:
    """The PodScheduled=False message, when the pod has that condition."""
    scheduled = condition(pod, "PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        return str(scheduled.get("message") or "")
    return None


def events_for(
    events: Iterable[Mapping[str, Any]], pod_name: str, reason: str | None = None
) -> list[Mapping[str, Any]]:
    """Events whose ``regarding`` object is the pod ``pod_name`` (and of ``reason``)."""
    return [
        event
        for event in events
        if (event.get("regarding") or {}).get("kind") == "Pod"
        and (event.get("regarding") or {}).get("name") == pod_name
        and (reason is None or event.get("reason") == reason)
    ]


def occurrences(event: Mapping[str, Any]) -> int:
    """How many times an event happened: 1, or its ``series.count``."""
    return int((event.get("series") or {}).get("count") or 1)
