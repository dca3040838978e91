"""Coscheduling: gang scheduling compatible with scheduler-plugins' plugin of the same name.

The pods labelled ``scheduling.x-k8s.io/pod-group: NAME`` form the group of the PodGroup NAME
in their namespace; the group's pods are placed all together (at least ``minMember`` of them) or
not at all. ``groups`` keeps what the plugin knows about groups (members placed, back-off,
free capacity), ``plugin`` runs the extension points, ``args`` reads the configuration and
``preemptor`` is the seam for gang-wide preemption.
"""

from kopf_scheduler.plugins.coscheduling.args import CoschedulingArgs
from kopf_scheduler.plugins.coscheduling.plugin import NAME, Coscheduling, new
from kopf_scheduler.plugins.coscheduling.preemptor import GangPreemptor

__all__ = ["NAME", "Coscheduling", "CoschedulingArgs", "GangPreemptor", "new"]
