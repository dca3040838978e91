"""The StatefulSet controller's OrderedReady creation, simulated: one pod at a time, in order.

Under ``podManagementPolicy: OrderedReady`` the controller creates ordinal N only once every
ordinal before it is Running and Ready, and creates a pod's claims just before the pod. So a
pod that cannot be scheduled holds back every later ordinal, which then never exists: a
simulation shows them nowhere, as a cluster would not. The simulated kubelet starts a bound
pod's containers at once and runs no probes, so here a pod is Running and Ready as soon as it is
bound (and until it starts terminating).

The controller keeps the pods still to create (``sim/workloads.py`` made them) and looks at them
whenever the cluster's controllers run; a pod deleted later (a preemption victim) is not
recreated, and the pods after it that are still to come wait again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.sim.cluster_objects import ClusterObjects
from kopf_scheduler.sim.workloads import CreatedPod

Raw = dict[str, Any]
CLAIM = "PersistentVolumeClaim"


def running_and_ready(pod: Mapping[str, Any] | None) -> bool:
    """Bound, Running and not terminating: ready, for a kubelet without probes."""
    if pod is None:
        return False
    return (
        bool((pod.get("spec") or {}).get("nodeName"))
        and (pod.get("status") or {}).get("phase") == "Running"
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
    )


class OrderedPodCreation:
    def __init__(self, api: ClusterObjects) -> None:
        self._api = api
        self._waiting: list[tuple[CreatedPod, Callable[[Raw], None]]] = []
        self._running = False

    def add(self, waiting: CreatedPod, created: Callable[[Raw], None]) -> None:
        """Create ``waiting`` once the pods it waits for are running and ready; ``created`` is
        called with each pod this controller creates."""
        self._waiting.append((waiting, created))

    def run(self) -> None:
        if self._running:
            return
        self._running = True
        try:
            progressed = True
            while progressed:
                progressed = False
                # Sets whose next ordinal cannot be created yet: their later ones cannot either.
                blocked: set[str] = set()
                for entry in list(self._waiting):
                    waiting, created = entry
                    owner = waiting.pod["metadata"]["ownerReferences"][0]["uid"]
                    if owner in blocked:
                        continue
                    if all(running_and_ready(self._api.pods.get(k)) for k in waiting.waits_for):
                        self._waiting.remove(entry)
                        created(self._create(waiting))
                        progressed = True
                    else:
                        blocked.add(owner)
        finally:
            self._running = False

    def _create(self, waiting: CreatedPod) -> Raw:
        """The pod's claims that do not exist yet (the controller takes an existing claim as it
        is), then the pod."""
        claims = self._api.objects(CLAIM)
        for claim in waiting.claims:
            metadata = claim["metadata"]
            if f"{metadata['namespace']}/{metadata['name']}" not in claims:
                self._api.create(claim)
        return self._api.create(waiting.pod)
