"""The warning that a profile schedules members of a PodGroup one pod at a time.

A pod that names a PodGroup (the ``scheduling.x-k8s.io/pod-group`` label) is a gang member only
for a profile that enables Coscheduling; any other profile schedules it as a pod of its own, so a
gang can end up partly placed, holding room it cannot use, with nothing on the pod or in the
events saying why. The scheduler says it once per profile, at the first such pod it schedules:
in the log, and in :attr:`GangNotice.warnings`, which ``simulate`` prints.
"""

from __future__ import annotations

import structlog

from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL

logger = structlog.get_logger("kopf_scheduler.scheduler")

GANG_PLUGIN = "Coscheduling"


class GangNotice:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        """Every warning given, in order: at most one per profile."""
        self._told: set[str] = set()

    def check(self, framework: Framework, pod: Pod) -> None:
        """Warn when ``pod`` names a PodGroup and ``framework``'s profile lacks Coscheduling,
        unless this profile was warned about already."""
        group = pod.labels.get(POD_GROUP_LABEL)
        profile = framework.scheduler_name
        if not group or profile in self._told:
            return
        self._told.add(profile)
        if any(plugin.name == GANG_PLUGIN for plugin in framework.plugins.all):
            return
        message = (
            f"profile {profile} schedules pods of PodGroups one by one: it does not enable "
            f"{GANG_PLUGIN} (first seen: {pod.key} of PodGroup {group})"
        )
        self.warnings.append(message)
        logger.warning(
            "pod_group_without_coscheduling",
            profile=profile,
            pod=pod.key,
            pod_group=group,
            message=message,
        )
