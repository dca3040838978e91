"""VolumeBinding: place pods whose PersistentVolumeClaims still need binding, and bind them.

A pod's bound claims pin it to the nodes their PVs admit; its claims waiting for a first consumer
are matched, per node, to static PVs or checked for dynamic provisioning. The chosen node's
decisions are assumed at Reserve, so later pods see them, and written at PreBind, which waits
until the PV controller has bound every claim before the pod itself is bound.
"""

from kopf_scheduler.plugins.volume_binding.args import Args
from kopf_scheduler.plugins.volume_binding.decisions import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
)
from kopf_scheduler.plugins.volume_binding.plugin import (
    NAME,
    REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
    new,
)

__all__ = [
    "NAME",
    "REASON_BIND_CONFLICT",
    "REASON_NODE_CONFLICT",
    "REASON_NOT_ENOUGH_SPACE",
    "REASON_PV_NOT_EXIST",
    "REASON_UNBOUND_IMMEDIATE",
    "Args",
    "VolumeBinding",
    "new",
]
