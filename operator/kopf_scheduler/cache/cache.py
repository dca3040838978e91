"""The scheduler cache: nodes and assigned pods from watch events, plus assumed pods.

Assuming a pod counts it on its chosen node as soon as the scheduling cycle decides, so the next
cycle does not hand the same capacity out again while the binding request is in flight. When the
watch confirms the pod, the assumption becomes fact; a binding that is never confirmed expires a
configurable time after it finished (or the scheduler forgets it explicitly on failure).
All time comes from an injected clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from kopf_scheduler.cache.node_info import ImageState, NodeInfo
from kopf_scheduler.cache.node_tree import NodeTree, zone_key
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod

DEFAULT_ASSUMED_POD_TTL = 15 * 60.0


class CacheError(RuntimeError):
    """An operation that contradicts the cache's state (a bug in the caller, logged upstream)."""


@dataclass
class _PodState:
    pod: Pod
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    def __init__(
        self, clock: Callable[[], float], assumed_pod_ttl: float = DEFAULT_ASSUMED_POD_TTL
    ) -> None:
        self._now = clock
        self._ttl = assumed_pod_ttl
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._assumed: dict[str, None] = {}
        """Uids of the assumed pods in ``_pods``, in the order they were assumed: the gauge read
        every second counts them without a walk over every pod of the cluster."""
        self._expiring: dict[str, _PodState] = {}
        """Assumptions whose binding finished, by uid, in that order: the only ones that can
        expire, so the periodic cleanup looks at these instead of every pod. An entry whose pod
        was confirmed, forgotten or removed since is dropped at the next cleanup."""
        self._tree = NodeTree()
        self._images: dict[str, ImageState] = {}
        self._image_nodes: dict[str, set[str]] = {}
        self._namespace_labels: dict[str, dict[str, str]] = {}
        self._dirty: set[str] = set()
        self._tree_changed = True
        self._namespaces_changed = True
        self._generation = 0
        self._last_snapshot: Snapshot | None = None

    # Nodes ---------------------------------------------------------------------------------

    def _touch(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo()
        self._generation += 1
        info.generation = self._generation
        self._dirty.add(name)
        return info

    def add_node(self, node: Node) -> None:
        info = self._touch(node.name)
        if info.node is not None:
            self._remove_node_images(info.node)
        moved = info.node is None or zone_key(info.node) != zone_key(node)
        info.set_node(node)
        self._add_node_images(node, info)
        self._tree.add(node)
        if moved:
            # A new node, or one that changed zone: the examination order changes. Any other
            # update keeps the node's place and only its snapshot entry is replaced.
            self._tree_changed = True

    update_node = add_node

    def remove_node(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is None or info.node is None:
            return
        self._remove_node_images(info.node)
        self._tree.remove(name)
        self._tree_changed = True
        self._touch(name)
        info.node = None
        info.image_states = {}
        if not info.pods:
            del self._nodes[name]

    def _add_node_images(self, node: Node, info: NodeInfo) -> None:
        states: dict[str, ImageState] = {}
        for image in node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is None:
                    state = self._images[name] = ImageState(image.size_bytes, 0)
                nodes = self._image_nodes.setdefault(name, set())
                if node.name not in nodes:
                    nodes.add(node.name)
                    state.num_nodes = len(nodes)
                states[name] = state
        info.image_states = states

    def _remove_node_images(self, node: Node) -> None:
        for image in node.images:
            for name in image.names:
                nodes = self._image_nodes.get(name)
                if nodes is None:
                    continue
                nodes.discard(node.name)
                if nodes:
                    self._images[name].num_nodes = len(nodes)
                else:
                    del self._image_nodes[name]
                    del self._images[name]

    # Namespaces (for namespaceSelector in pod affinity terms) ---------------------------------

    def set_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self._namespace_labels[name] = dict(labels)
        self._namespaces_changed = True

    def remove_namespace(self, name: str) -> None:
        self._namespace_labels.pop(name, None)
        self._namespaces_changed = True

    # Pods ------------------------------------------------------------------------------------

    def _add_to_node(self, pod: Pod) -> None:
        self._touch(pod.node_name).add_pod(pod)

    def _remove_from_node(self, pod: Pod) -> None:
        info = self._nodes.get(pod.node_name)
        if info is None:
            return
        self._touch(pod.node_name)
        info.remove_pod(pod)
        if info.node is None and not info.pods:
            del self._nodes[pod.node_name]

    def assume_pod(self, pod: Pod) -> None:
        """Count ``pod`` (``node_name`` = the chosen node) before its binding is confirmed."""
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} ({pod.uid}) is in the cache, so can't be assumed")
        self._add_to_node(pod)
        self._pods[pod.uid] = _PodState(pod, assumed=True)
        self._assumed[pod.uid] = None

    def finish_binding(self, pod: Pod) -> None:
        """The binding request returned: start the expiry countdown of the assumption."""
        state = self._pods.get(pod.uid)
        if state is not None and state.assumed:
            state.binding_finished = True
            state.deadline = self._now() + self._ttl
            self._expiring[pod.uid] = state

    def forget_pod(self, pod: Pod) -> bool:
        """Undo an assumption (the binding failed); ``False`` when there is none left to undo.

        A binding can succeed on the API server while its reply is lost (the connection broke);
        the watch may then confirm the pod before the binding cycle hears of the failure. The
        assumption has already become fact, so there is nothing to forget: the cache keeps the pod
        where the watch put it. (kube-scheduler reports this race as a cache error.)
        """
        state = self._pods.get(pod.uid)
        if state is None or not state.assumed:
            return False
        if state.pod.node_name != pod.node_name:
            raise CacheError(
                f"pod {pod.key} was assumed on {state.pod.node_name} "
                f"but forgotten on {pod.node_name}"
            )
        self._remove_from_node(state.pod)
        del self._pods[pod.uid]
        self._assumed.pop(pod.uid, None)
        return True

    def add_pod(self, pod: Pod) -> None:
        """An assigned pod seen by the watch (confirms an assumption if there was one)."""
        state = self._pods.get(pod.uid)
        if state is not None and state.assumed:
            if state.pod.node_name != pod.node_name:
                self._remove_from_node(state.pod)
                self._add_to_node(pod)
            else:
                self._replace_on_node(state.pod, pod)
            self._pods[pod.uid] = _PodState(pod)
            self._assumed.pop(pod.uid, None)
            return
        if state is not None:
            self.update_pod(state.pod, pod)
            return
        self._add_to_node(pod)
        self._pods[pod.uid] = _PodState(pod)

    def _replace_on_node(self, old: Pod, new: Pod) -> None:
        info = self._touch(new.node_name)
        info.remove_pod(old)
        info.add_pod(new)

    def update_pod(self, old: Pod, new: Pod) -> None:
        state = self._pods.get(new.uid)
        if state is None or state.assumed:
            self.add_pod(new)
            return
        if state.pod.node_name != new.node_name:
            self._remove_from_node(state.pod)
            self._add_to_node(new)
        else:
            self._replace_on_node(state.pod, new)
        state.pod = new

    def remove_pod(self, pod: Pod) -> None:
        state = self._pods.pop(pod.uid, None)
        if state is None:
            return
        self._assumed.pop(pod.uid, None)
        self._remove_from_node(state.pod)

    def is_assumed(self, pod: Pod) -> bool:
        state = self._pods.get(pod.uid)
        return state is not None and state.assumed

    def is_confirmed_on(self, pod: Pod, node_name: str) -> bool:
        """Whether the watch has shown ``pod`` bound to ``node_name`` (not merely assumed there)."""
        state = self._pods.get(pod.uid)
        return state is not None and not state.assumed and state.pod.node_name == node_name

    def get_pod(self, uid: str) -> Pod | None:
        state = self._pods.get(uid)
        return state.pod if state is not None else None

    def cleanup_expired_assumed_pods(self) -> list[Pod]:
        """Forget assumed pods whose binding finished more than the TTL ago; return them."""
        now = self._now()
        expired = []
        for uid, state in list(self._expiring.items()):
            if self._pods.get(uid) is not state or not state.assumed:
                del self._expiring[uid]  # confirmed, forgotten or removed meanwhile
            elif state.deadline is not None and now >= state.deadline:
                del self._expiring[uid]
                expired.append(state.pod)
        for pod in expired:
            self._remove_from_node(pod)
            del self._pods[pod.uid]
            self._assumed.pop(pod.uid, None)
        return expired

    # Introspection ----------------------------------------------------------------------------

    def node_count(self) -> int:
        return len(self._tree)

    def pod_count(self) -> int:
        return len(self._pods)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def assumed_pods(self) -> list[Pod]:
        return [self._pods[uid].pod for uid in self._assumed]

    def node_infos(self) -> Iterator[NodeInfo]:
        return iter(self._nodes.values())

    def get_node_info(self, name: str) -> NodeInfo | None:
        return self._nodes.get(name)

    # Snapshot ------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date, cloning only the nodes changed since the last call."""
        if snapshot is not self._last_snapshot:
            self._last_snapshot = snapshot
            snapshot.node_info_map.clear()
            self._dirty.update(self._nodes)
            self._tree_changed = True
            self._namespaces_changed = True
        infos = snapshot.node_info_map
        rebuild_affinity = False
        for name in self._dirty:
            info = self._nodes.get(name)
            old = infos.get(name)
            if info is None or info.node is None:
                if old is not None:
                    del infos[name]
                    rebuild_affinity = True
                continue
            clone = info.clone()
            infos[name] = clone
            if (
                clone.pods_with_affinity
                or clone.pods_with_required_anti_affinity
                or (
                    old is not None
                    and (old.pods_with_affinity or old.pods_with_required_anti_affinity)
                )
            ):
                rebuild_affinity = True
            if not self._tree_changed:
                snapshot.replace_in_place(clone)
        if self._tree_changed:
            snapshot.lay_out([infos[name] for name in self._tree.ordered()])
            self._tree_changed = False
            rebuild_affinity = True
        self._dirty.clear()
        if rebuild_affinity:
            snapshot.rebuild_affinity_lists()
        if self._namespaces_changed:
            snapshot.namespace_labels = {k: dict(v) for k, v in self._namespace_labels.items()}
            self._namespaces_changed = False
        snapshot.generation = self._generation
