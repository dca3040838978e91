"""The nominator: which pending pods hold a reservation on which node.

A nominated pod (usually a preemptor waiting for its victims to go) is counted on its node when
equal- or lower-priority pods are filtered, so they do not take the room it made. The scheduler
records a nomination here before the ``status.nominatedNodeName`` patch reaches the API server,
so this in-memory view can be ahead of the pod objects; the rules below (kube-scheduler's) keep
the two from fighting:

- adding always replaces the pod's previous nomination; the node comes from the nominating info
  when it overrides, else from the pod's own ``status.nominatedNodeName``; an empty name clears;
- a pod that the watch cache no longer has, or that is already bound, is not nominated;
- an update where neither the old nor the new object carries a nomination keeps the in-memory
  one (the API write has not arrived yet);
- the pods returned for a node are the current objects from the scheduling queue, or bare
  name/namespace/UID stubs for pods not in any sub-queue (e.g. in flight).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from kopf_scheduler.framework.types import NominatingInfo, NominatingMode
from kopf_scheduler.model.pod import Pod


class PodRef(NamedTuple):
    name: str
    namespace: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def stub(self) -> Pod:
        """A pod object with only the identity fields set."""
        return Pod({"metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid}})


def _ref(pod: Pod) -> PodRef:
    return PodRef(pod.name, pod.namespace, pod.uid)


class Nominator:
    __slots__ = ("_by_node", "_by_uid", "get_pod", "lookup")

    def __init__(
        self,
        get_pod: Callable[[str], Pod | None] | None = None,
        lookup: Callable[[str], Pod | None] | None = None,
    ) -> None:
        self.get_pod = get_pod
        """The watch cache (``namespace/name`` → pod); ``None`` skips the existence check."""
        self.lookup = lookup
        """The current queued object of a pod by key; used by :meth:`nominated_pods_for_node`."""
        self._by_node: dict[str, list[PodRef]] = {}
        self._by_uid: dict[str, str] = {}

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None = None) -> None:
        self._delete(pod.uid)
        if info is not None and info.mode is NominatingMode.OVERRIDE:
            node_name = info.nominated_node_name
        else:
            node_name = pod.nominated_node_name
        if not node_name:
            return
        if self.get_pod is not None:
            current = self.get_pod(pod.key)
            if current is None or current.node_name:
                return
        self._by_uid[pod.uid] = node_name
        refs = self._by_node.setdefault(node_name, [])
        if any(ref.uid == pod.uid for ref in refs):
            return
        refs.append(_ref(pod))

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self._delete(pod.uid)

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        info: NominatingInfo | None = None
        if not old.nominated_node_name and not new.nominated_node_name:
            remembered = self._by_uid.get(old.uid)
            if remembered is not None:
                info = NominatingInfo.override(remembered)
        self._delete(old.uid)
        self.add_nominated_pod(new, info)

    def nominated_node(self, uid: str) -> str | None:
        return self._by_uid.get(uid)

    def nominated_refs_for_node(self, node_name: str) -> list[PodRef]:
        return list(self._by_node.get(node_name, ()))

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """The pods nominated to ``node_name``, as the queue currently holds them."""
        result: list[Pod] = []
        lookup = self.lookup
        for ref in self._by_node.get(node_name, ()):
            current = lookup(ref.key) if lookup is not None else None
            result.append(current if current is not None else ref.stub())
        return result

    def nominated_pods_by_node(self) -> Iterator[tuple[str, list[Pod]]]:
        """Every node with nominations and its nominated pods, as
        :meth:`nominated_pods_for_node` returns them."""
        for node_name in list(self._by_node):
            yield node_name, self.nominated_pods_for_node(node_name)

    def nominations(self) -> dict[str, list[PodRef]]:
        """Node name → nominated pod refs (a copy, for inspection)."""
        return {node: list(refs) for node, refs in self._by_node.items()}

    def _delete(self, uid: str) -> None:
        node_name = self._by_uid.pop(uid, None)
        if node_name is None:
            return
        refs = self._by_node.get(node_name)
        if refs is None:
            return
        for index, ref in enumerate(refs):
            if ref.uid == uid:
                del refs[index]
                break
        if not refs:
            del self._by_node[node_name]
