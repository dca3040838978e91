"""Everything a scheduling plugin imports from the scheduler, in one module.

A plugin is written against kube-scheduler's framework: it answers with statuses, keeps what it
learns in the cycle's state, implements the extension points' interfaces, reads the cluster
through its handle and a node's pods and resources through ``NodeInfo``, and reports the cluster
events that may make a pod it rejected schedulable. Those pieces live in several modules of this
package (``framework/``, ``cache/``, ``ports.py``); plugin authors, in-tree and installed, import
them from here instead. The objects plugins decide about (``Pod``, ``Node`` and the rest of
``model/``) are importable from ``model`` as well; the two a plugin always needs are here too.

An import-linter contract holds the in-tree plugins to this module, ``model``, ``dra`` (the
device allocator DynamicResources drives, as upstream's plugin drives its structured allocator)
and their own packages; DefaultPreemption and Coscheduling also use ``preemption``, as their
upstream counterparts use its evaluator.

The names under "batch forms" serve a plugin that offers a batch Filter or Score over the
snapshot's node columns (see ARCHITECTURE.md, "Batch forms").
"""

from __future__ import annotations

from kopf_scheduler.cache.node_info import HostPortUsage, ImageState, NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import (
    CLAIM_KIND,
    CSI_NODE_KIND,
    STORAGE_CLASS_KIND,
    VOLUME_ATTACHMENT_KIND,
    VOLUME_KIND,
    AssumeCache,
    AssumeConflictError,
    StorageCache,
    StorageListener,
)
from kopf_scheduler.framework.args import InvalidArgsError, ensure_mapping, int_arg, reject_unknown
from kopf_scheduler.framework.cycle_state import (
    CycleState,
    SharedState,
    StateKey,
    StateNotFoundError,
)
from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kopf_scheduler.framework.handle import Handle, PodGroupLister
from kopf_scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilter,
    BatchFilterOverPodVolumes,
    BatchFilterPlugin,
    BatchScore,
    BatchScorePlugin,
    BindPlugin,
    CountingPreFilterExtensions,
    EnqueueExtensions,
    FilterPlugin,
    NodeRejections,
    NodeScore,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from kopf_scheduler.framework.node_columns.arithmetic import go_div_array
from kopf_scheduler.framework.node_columns.columns import NODE_COLUMNS_KEY, NodeColumns
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.node_columns.free_capacity import FreeColumns
from kopf_scheduler.framework.node_columns.mirror import (
    SAFE_LIMIT,
    BoolArray,
    FloatArray,
    IntArray,
    LabelColumn,
    NodeMirror,
    RowListener,
    ScalarColumn,
)
from kopf_scheduler.framework.node_columns.term_census import Role
from kopf_scheduler.framework.node_columns.value_keys import selector_key, term_key
from kopf_scheduler.framework.pod_nominator import counts_against, nominated_pods_by_node
from kopf_scheduler.framework.runtime import Framework, WaitingPod
from kopf_scheduler.framework.scoring import default_normalize_score, go_div
from kopf_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from kopf_scheduler.framework.types import (
    NodeToStatus,
    NominatingInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import ApiError, ConflictError, PodStatusPatch, ResourceClaimWriter

__all__ = [
    "CLAIM_KIND",
    "CSI_NODE_KIND",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NODE_COLUMNS_KEY",
    "SAFE_LIMIT",
    "SKIP",
    "STORAGE_CLASS_KIND",
    "SUCCESS",
    "VOLUME_ATTACHMENT_KIND",
    "VOLUME_KIND",
    "ActionType",
    "ApiError",
    "AssumeCache",
    "AssumeConflictError",
    "BatchFilter",
    "BatchFilterOverPodVolumes",
    "BatchFilterPlugin",
    "BatchScore",
    "BatchScorePlugin",
    "BindPlugin",
    "BoolArray",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "ConflictError",
    "CountingPreFilterExtensions",
    "CycleState",
    "EnqueueExtensions",
    "EventResource",
    "Fallback",
    "FilterPlugin",
    "FloatArray",
    "Framework",
    "FreeColumns",
    "Handle",
    "HostPortUsage",
    "ImageState",
    "IntArray",
    "InvalidArgsError",
    "LabelColumn",
    "Node",
    "NodeColumns",
    "NodeInfo",
    "NodeMirror",
    "NodeRejections",
    "NodeScore",
    "NodeToStatus",
    "NominatingInfo",
    "PermitPlugin",
    "Plugin",
    "Pod",
    "PodGroupLister",
    "PodStatusPatch",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "ReservePlugin",
    "ResourceClaimWriter",
    "Role",
    "RowListener",
    "ScalarColumn",
    "ScoreExtensions",
    "ScorePlugin",
    "SharedState",
    "Snapshot",
    "StateKey",
    "StateNotFoundError",
    "Status",
    "StorageCache",
    "StorageListener",
    "WaitingPod",
    "counts_against",
    "default_normalize_score",
    "ensure_mapping",
    "go_div",
    "go_div_array",
    "int_arg",
    "nominated_pods_by_node",
    "reject_unknown",
    "selector_key",
    "term_key",
]
