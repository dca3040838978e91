"""PodGroup objects and a Coscheduling plugin on a real framework, for the plugin's tests."""

from __future__ import annotations

from typing import Any

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.config.loader import API_VERSION, KIND, parse_config
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.informer.pod_groups import PodGroupStore
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL, PodGroup
from kopf_scheduler.plugins.coscheduling import Coscheduling, GangPreemptor, new
from tests.builders import PodBuilder, make_pod


def coscheduling_config(
    scheduler_name: str = "kopf-scheduler", queue: dict[str, Any] | None = None, **args: Any
) -> SchedulerConfig:
    """One profile with Coscheduling at every point it serves, its queue sort replacing
    PrioritySort; ``args`` are its pluginConfig args and ``queue`` the top-level backoff
    settings."""
    profile: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        },
    }
    if args:
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return parse_config(
        {"apiVersion": API_VERSION, "kind": KIND, **(queue or {}), "profiles": [profile]}
    )


def pod_group_obj(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    created: str = "2026-01-01T00:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": {"minMember": min_member, **spec},
    }


def member(name: str, group: str, namespace: str = "default") -> PodBuilder:
    return make_pod(name, namespace).label(POD_GROUP_LABEL, group)


class Gang:
    """One profile with Coscheduling at every point it serves, on a snapshot the test edits."""

    def __init__(
        self,
        nodes: list[NodeInfo],
        *,
        args: dict[str, Any] | None = None,
        now: float = 1000.0,
        gang_preemptor: GangPreemptor | None = None,
    ) -> None:
        self.now = now
        self.groups = PodGroupStore()
        self.activated: list[Pod] = []
        self.snapshot = Snapshot.from_node_infos(nodes)
        self.handle = Handle(
            snapshot=self.snapshot,
            now=lambda: self.now,
            pod_groups=self.groups,
            activate=self.activated.extend,
        )
        self.plugin: Coscheduling = new(args, self.handle, gang_preemptor=gang_preemptor)
        plugin = self.plugin
        self.framework = Framework(
            "kopf-scheduler",
            ProfilePlugins(
                queue_sort=plugin,
                pre_filter=[plugin],
                post_filter=[plugin],
                reserve=[plugin],
                permit=[plugin],
                all=[plugin],
            ),
            self.handle,
        )

    def add_group(self, raw: dict[str, Any]) -> PodGroup:
        group = PodGroup(raw)
        self.groups.groups[group.key] = group
        return group

    def add_pods(self, *pods: Pod) -> None:
        for pod in pods:
            self.groups.pod_changed(None, pod)

    def place(self, pod: Pod, node_name: str) -> Pod:
        """Put ``pod`` on a node of the snapshot, as the next cycle's snapshot shows it."""
        assigned = pod.assigned_to(node_name)
        info = self.snapshot.get(node_name)
        assert info is not None
        info.add_pod(assigned)
        return assigned
