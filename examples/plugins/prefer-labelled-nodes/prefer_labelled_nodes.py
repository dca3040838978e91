"""PreferLabelledNodes: an out-of-tree Score plugin that prefers nodes carrying a label.

Operators often mark the nodes they would rather fill first (reserved capacity, a cheaper
instance family, nodes already paid for) with a label, and want that as a preference, not a
rule: a pod still goes elsewhere when no labelled node fits, which a ``nodeSelector`` or required
node affinity would not allow. Preferred node affinity says the same, but per pod; this plugin says
it once for every pod of a profile.

Score is ``MAX_NODE_SCORE`` (100) on a node whose label ``labelKey`` exists (and, when
``labelValue`` is given, has that value) and 0 elsewhere, so no normalisation is needed. Its
influence is the weight the profile gives it against the default scores (NodeResourcesFit 1,
TaintToleration 3, ...).

Args (``pluginConfig``): ``labelKey`` (required, a label key such as ``example.com/preferred``)
and ``labelValue`` (optional string). Bad args stop the scheduler at start with the field named,
as the in-tree plugins' do.

It is installed as its own distribution and found through the entry point
``PreferLabelledNodes = "prefer_labelled_nodes:new"`` in the group ``kopf_scheduler.plugins``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod

NAME = "PreferLabelledNodes"

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes label key (``[prefix/]name``), or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "must have at most one '/'"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"prefix {prefix!r} must be a DNS subdomain of at most 253 characters"
    if len(name) > 63 or not _NAME_PART.match(name):
        return (
            f"name {name!r} must be 1 to 63 characters, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


@dataclass(frozen=True)
class PreferLabelledNodesArgs:
    label_key: str
    label_value: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> PreferLabelledNodesArgs:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"labelKey", "labelValue"})
        key = args.get("labelKey")
        if key is None:
            raise api.InvalidArgsError("args.labelKey", "is required")
        if not isinstance(key, str):
            raise api.InvalidArgsError("args.labelKey", f"must be a string, got {key!r}")
        problem = _label_key_problem(key)
        if problem is not None:
            raise api.InvalidArgsError("args.labelKey", f"{key!r} is not a label key: {problem}")
        value = args.get("labelValue")
        if value is not None and not isinstance(value, str):
            raise api.InvalidArgsError("args.labelValue", f"must be a string, got {value!r}")
        return cls(key, value)


class PreferLabelledNodes:
    name: ClassVar[str] = NAME

    def __init__(self, args: PreferLabelledNodesArgs) -> None:
        self.args = args

    def _labelled(self, labels: Mapping[str, str]) -> bool:
        if self.args.label_key not in labels:
            return False
        return self.args.label_value is None or labels[self.args.label_key] == self.args.label_value

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        node = node_info.node
        if node is None:
            return 0, api.Status(api.Code.ERROR, "node not found")
        return (
            api.MAX_NODE_SCORE if self._labelled(node.labels) else api.MIN_NODE_SCORE
        ), api.SUCCESS

    def score_extensions(self) -> None:
        return None


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> PreferLabelledNodes:
    return PreferLabelledNodes(PreferLabelledNodesArgs.parse(args))
