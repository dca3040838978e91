"""One test's private corner of the cluster: a namespace, fresh fake nodes, a pod watch.

The nodes carry the label and the NoSchedule taint ``e2e-test=<id>``; the test's pods get the
matching nodeSelector and toleration. Other tests' pods can therefore never land on these
nodes and these pods never land elsewhere, even when tests share a cluster. Everything is
deleted at teardown without waiting (pods with long grace periods finish in the background).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from e2e.localcluster import node_ready

from . import objects
from .kubectl import Kubectl, events_for, node_name, unschedulable_message
from .polling import wait_until
from .watch import PodWatch

NODE_READY_TIMEOUT = 90.0


def make_test_id(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    slug = slug.removeprefix("test-")[:24].strip("-")
    return f"{slug}-{secrets.token_hex(2)}"


class TestEnv:
    __test__ = False  # not a test class, despite the name

    def __init__(self, kubectl: Kubectl, test_id: str) -> None:
        self.kubectl = kubectl
        self.id = test_id
        self.namespace = f"e2e-{test_id}"
        self.node_names: list[str] = []
        kubectl.create(objects.namespace(self.namespace, test_id))
        wait_until(
            lambda: kubectl.get("serviceaccount", "default", self.namespace),
            timeout=30,
            what=f"serviceaccount {self.namespace}/default",
        )
        self.watch = PodWatch(kubectl, self.namespace)

    # -- nodes -----------------------------------------------------------------------------

    def create_nodes(
        self,
        count: int,
        cpu: str = "4",
        memory: str = "8Gi",
        labels: Sequence[dict[str, str]] = (),
    ) -> list[str]:
        """``count`` fresh nodes, Ready when this returns; ``labels[i]`` adds to node i's."""
        first = len(self.node_names)
        names = [f"e2e-{self.id}-{index}" for index in range(first, first + count)]
        extra = [*labels, *([{}] * (count - len(labels)))]
        self.kubectl.create(
            *(
                objects.fake_node(name, self.id, cpu, memory, labels=extra[offset])
                for offset, name in enumerate(names)
            )
        )
        self.node_names.extend(names)

        def ready() -> bool:
            nodes = {
                n["metadata"]["name"]: n
                for n in self.kubectl.items("nodes", selector=self.selector)
            }
            return all(name in nodes and node_ready(nodes[name]) for name in names)

        wait_until(ready, timeout=NODE_READY_TIMEOUT, what=f"nodes {names} Ready", interval=0.5)
        return names

    @property
    def selector(self) -> str:
        return f"{objects.ISOLATION_KEY}={self.id}"

    # -- pods ------------------------------------------------------------------------------

    def pod(self, name: str, **kwargs: Any) -> dict[str, Any]:
        return objects.pod(name, self.namespace, self.id, **kwargs)

    def create(self, *manifests: Mapping[str, Any]) -> None:
        self.kubectl.create(*manifests)

    def pods(self) -> dict[str, dict[str, Any]]:
        return self.kubectl.pods(self.namespace)

    def get_pod(self, name: str) -> dict[str, Any] | None:
        return self.kubectl.pod(self.namespace, name)

    def events(self) -> list[dict[str, Any]]:
        return self.kubectl.events(self.namespace)

    def pod_events(self, name: str, reason: str | None = None) -> list[Mapping[str, Any]]:
        return events_for(self.events(), name, reason)

    def wait_pod(
        self, name: str, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, what: str
    ) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            pod = self.get_pod(name)
            return pod if pod is not None and predicate(pod) else None

        return wait_until(
            probe,
            timeout=timeout,
            what=f"{self.namespace}/{name}: {what}",
            describe=lambda: self.watch.summary(name)[-5:],
        )

    def wait_bound(self, name: str, timeout: float = 30) -> str:
        pod = self.wait_pod(name, lambda p: node_name(p) is not None, timeout=timeout, what="bound")
        return str(node_name(pod))

    def wait_unschedulable(self, name: str, timeout: float = 30, contains: str = "") -> str:
        def matches(pod: dict[str, Any]) -> bool:
            message = unschedulable_message(pod)
            return message is not None and contains in message

        pod = self.wait_pod(
            name, matches, timeout=timeout, what=f"PodScheduled=False with {contains!r}"
        )
        return str(unschedulable_message(pod))

    def wait_event(self, name: str, reason: str, timeout: float = 30) -> list[Mapping[str, Any]]:
        return wait_until(
            lambda: self.pod_events(name, reason),
            timeout=timeout,
            what=f"a {reason} event for {self.namespace}/{name}",
            describe=lambda: [(e.get("reason"), e.get("note")) for e in self.pod_events(name)],
        )

    # -- teardown --------------------------------------------------------------------------

    def close(self) -> None:
        self.watch.stop()
        # Pods first, without grace: nothing lingers on nodes that are about to disappear.
        self.kubectl.run(
            "delete",
            "pods",
            "--all",
            "-n",
            self.namespace,
            "--grace-period=0",
            "--force",
            "--wait=false",
            check=False,
        )
        self.kubectl.run(
            "delete", "namespace", self.namespace, "--wait=false", "--ignore-not-found"
        )
        if self.node_names:
            self.kubectl.run(
                "delete", "nodes", "-l", self.selector, "--wait=false", "--ignore-not-found"
            )
