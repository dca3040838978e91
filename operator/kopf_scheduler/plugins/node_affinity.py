"""NodeAffinity: honour the pod's ``nodeSelector`` and node affinity, plus an affinity the
scheduler profile adds to every pod (``NodeAffinityArgs.addedAffinity``).

Filter requires a node to match, in this order, the profile's added required affinity
(``node(s) didn't match scheduler-enforced node affinity``) and then both the pod's
``nodeSelector`` and its required node affinity (``node(s) didn't match Pod's node
affinity/selector``). Both rejections are UnschedulableAndUnresolvable: preemption cannot
change node labels.

PreFilter narrows the cycle to named nodes when every required term pins ``metadata.name In
[...]`` (the form DaemonSet pods use), and rejects the pod outright when those pins contradict
each other. A pod with neither a selector, required affinity nor added affinity skips Filter.

Score sums the weights of the preferred terms (the pod's and the added ones) a node matches;
NormalizeScore scales the sums so the best node gets 100.

As upstream, a required term whose label expression is not a valid selector (a malformed key
or value) matches no node, while the other terms still count; a malformed preferred term fails
PreScore with an error.

The batch Filter and Score evaluate selectors over the node columns' interned labels; a profile
with an added affinity has neither.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.selectors import (
    IN,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
)

NAME = "NodeAffinity"
REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"

_NODE_NAME_FIELD = "metadata.name"

# Label syntax, as a label selector requirement checks it when it is built.
_NAME_PART = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_PART_RE = re.compile(f"^{_NAME_PART}$")
_LABEL_VALUE_RE = re.compile(f"^({_NAME_PART})?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_MAX = 63
_PREFIX_MAX = 253
_NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_NAME_PART}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    f"'({_NAME_PART})?')"
)


def _label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a qualified label name (empty when it is one)."""
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character, with an optional DNS subdomain "
            "prefix and '/'"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN_RE.match(prefix):
            errors.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character"
            )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _NAME_MAX:
        errors.append(f"name part must be no more than {_NAME_MAX} characters")
    if not _NAME_PART_RE.match(name):
        errors.append(_NAME_PART_MSG)
    return errors


def _label_value_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > _NAME_MAX:
        errors.append(f"must be no more than {_NAME_MAX} characters")
    if not _LABEL_VALUE_RE.match(value):
        errors.append(_LABEL_VALUE_MSG)
    return errors


def requirement_errors(requirement: Requirement, path: str) -> list[str]:
    """Problems that keep a node-label requirement from forming a label selector."""
    errors = [
        f'{path}.key: Invalid value: "{requirement.key}": {message}'
        for message in _label_key_errors(requirement.key)
    ]
    for value in sorted(requirement.values):
        errors.extend(
            f'{path}.values: Invalid value: "{value}": {message}'
            for message in _label_value_errors(value)
        )
    return errors


def term_errors(term: NodeSelectorTerm, path: str) -> list[str]:
    """Problems with a term's label expressions (field expressions are checked when parsed)."""
    errors: list[str] = []
    for index, requirement in enumerate(term.label_requirements):
        errors.extend(requirement_errors(requirement, f"{path}.matchExpressions[{index}]"))
    return errors


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` ANDed with its required node affinity terms (ORed).

    Terms with malformed label expressions are dropped up front: they match no node, and a
    failed match reports ``had_errors`` so callers that care (the queueing hint) can tell.
    """

    __slots__ = ("had_errors", "node_selector", "terms")

    def __init__(self, pod: Pod) -> None:
        self.node_selector: Mapping[str, str] = pod.node_selector
        required = pod.node_affinity_required
        self.terms: tuple[NodeSelectorTerm, ...] | None = None
        self.had_errors = False
        if required is not None:
            valid = [term for term in required.terms if not term_errors(term, "")]
            self.had_errors = len(valid) != len(required.terms)
            self.terms = tuple(valid)

    def match(self, node: Node) -> tuple[bool, bool]:
        """``(matched, error)``; ``error`` is set when no term matched and some were invalid."""
        labels = node.labels
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False, False
        if self.terms is None:
            return True, False
        for term in self.terms:
            if term.matches(node.name, labels):
                return True, False
        return False, self.had_errors

    def matches(self, node: Node) -> bool:
        return self.match(node)[0]

    def clone(self) -> RequiredNodeAffinity:
        return self


@dataclass(frozen=True, slots=True, eq=False)
class _PreScoreState(api.SharedState):
    """The pod's valid preferred terms. Never modified."""

    preferred: tuple[PreferredSchedulingTerm, ...]


PRE_FILTER_KEY: api.StateKey[RequiredNodeAffinity] = api.StateKey("PreFilter" + NAME)
PRE_SCORE_KEY: api.StateKey[_PreScoreState] = api.StateKey("PreScore" + NAME)


def preferred_score(terms: tuple[PreferredSchedulingTerm, ...], node: Node) -> int:
    """Sum of the weights of ``terms`` that ``node`` matches."""
    return sum(t.weight for t in terms if t.term.matches(node.name, node.labels))


def pod_preferred_terms(pod: Pod) -> tuple[PreferredSchedulingTerm, ...]:
    """The pod's preferred terms that can match; raises ``ValueError`` for malformed ones."""
    errors: list[str] = []
    terms: list[PreferredSchedulingTerm] = []
    for index, preferred in enumerate(pod.node_affinity_preferred):
        term = preferred.term
        if preferred.weight == 0 or not (term.label_requirements or term.field_requirements):
            continue
        found = term_errors(term, f"[{index}]")
        if found:
            errors.extend(found)
        else:
            terms.append(preferred)
    if errors:
        raise ValueError(_aggregate(errors))
    return tuple(terms)


def node_names_from_required(required: NodeSelector) -> frozenset[str] | None:
    """The node names the required terms pin with ``metadata.name In``.

    ``None`` when some term has no such pin (then any node may match). Within a term the pins
    intersect; across terms they unite.
    """
    names: set[str] = set()
    for term in required.terms:
        term_names: set[str] | None = None
        for requirement in term.field_requirements:
            if requirement.key != _NODE_NAME_FIELD or requirement.operator != IN:
                continue
            values = set(requirement.values)
            term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


# Arguments -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddedAffinity:
    """The node affinity a profile adds to every pod it schedules."""

    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True)
class NodeAffinityArgs:
    added_affinity: AddedAffinity | None = None

    @classmethod
    def parse(cls, raw: Any) -> NodeAffinityArgs:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"addedAffinity"})
        added = args.get("addedAffinity")
        if added is None:
            return cls()
        return cls(_parse_added_affinity(added, "args.addedAffinity"))


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _parse_added_affinity(raw: Any, field: str) -> AddedAffinity:
    added = api.ensure_mapping(raw, field)
    api.reject_unknown(added, {_REQUIRED, _PREFERRED}, field)
    required: NodeSelector | None = None
    if added.get(_REQUIRED) is not None:
        required = _parse_node_selector(added[_REQUIRED], f"{field}.{_REQUIRED}")
    preferred: list[PreferredSchedulingTerm] = []
    raw_preferred = added.get(_PREFERRED) or []
    if not isinstance(raw_preferred, list):
        raise api.InvalidArgsError(f"{field}.{_PREFERRED}", "must be a list")
    for index, entry in enumerate(raw_preferred):
        parsed = _parse_preferred(entry, f"{field}.{_PREFERRED}[{index}]")
        if parsed is not None:
            preferred.append(parsed)
    return AddedAffinity(required, tuple(preferred))


def _parse_node_selector(raw: Any, field: str) -> NodeSelector:
    selector = api.ensure_mapping(raw, field)
    api.reject_unknown(selector, {"nodeSelectorTerms"}, field)
    raw_terms = selector.get("nodeSelectorTerms") or []
    if not isinstance(raw_terms, list):
        raise api.InvalidArgsError(f"{field}.nodeSelectorTerms", "must be a list")
    return NodeSelector(
        [_parse_term(t, f"{field}.nodeSelectorTerms[{i}]") for i, t in enumerate(raw_terms)]
    )


def _parse_preferred(raw: Any, field: str) -> PreferredSchedulingTerm | None:
    entry = api.ensure_mapping(raw, field)
    api.reject_unknown(entry, {"weight", "preference"}, field)
    weight = entry.get("weight", 0)
    if not isinstance(weight, int) or isinstance(weight, bool):
        raise api.InvalidArgsError(f"{field}.weight", f"must be an integer, got {weight!r}")
    if not -(2**31) <= weight < 2**31:
        raise api.InvalidArgsError(f"{field}.weight", f"out of the int32 range: {weight}")
    term = _parse_term(entry.get("preference"), f"{field}.preference")
    if weight == 0 or not (term.label_requirements or term.field_requirements):
        return None
    return PreferredSchedulingTerm(weight, term)


def _parse_term(raw: Any, field: str) -> NodeSelectorTerm:
    if raw is not None:
        term_raw = api.ensure_mapping(raw, field)
        api.reject_unknown(term_raw, {"matchExpressions", "matchFields"}, field)
        for key in ("matchExpressions", "matchFields"):
            for index, requirement in enumerate(term_raw.get(key) or []):
                if isinstance(requirement, Mapping):
                    api.reject_unknown(
                        requirement, {"key", "operator", "values"}, f"{field}.{key}[{index}]"
                    )
    try:
        term = NodeSelectorTerm.parse(raw, field)
    except InvalidObjectError as error:
        raise api.InvalidArgsError(error.field, error.reason) from None
    errors = term_errors(term, field)
    if errors:
        raise api.InvalidArgsError(field, _aggregate(errors))
    return term


# Plugin ----------------------------------------------------------------------------------------


class NodeAffinity:
    name: ClassVar[str] = NAME

    def __init__(self, args: NodeAffinityArgs) -> None:
        self.args = args
        added = args.added_affinity
        self._added_required = added.required if added is not None else None
        self._added_preferred = added.preferred if added is not None else ()

    # PreFilter / Filter ------------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        required = pod.node_affinity_required
        if required is None and self._added_required is None and not pod.node_selector:
            return None, api.SKIP
        state.write(PRE_FILTER_KEY, RequiredNodeAffinity(pod))
        if required is None or not required.terms:
            return None, api.SUCCESS
        names = node_names_from_required(required)
        if names is None:
            return None, api.SUCCESS
        if not names:
            return None, api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)
        return api.PreFilterResult(names), api.SUCCESS

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        node = node_info.node
        if node is None:
            return api.Status(api.Code.ERROR, "node not found")
        added = self._added_required
        if added is not None and not added.matches(node.name, node.labels):
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_ENFORCED)
        required = state.get(PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity(pod)
        if not required.matches(node):
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_POD)
        return api.SUCCESS

    # PreScore / Score --------------------------------------------------------------------------

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        try:
            preferred = pod_preferred_terms(pod)
        except ValueError as error:
            return api.Status.from_error(error)
        if not pod.node_affinity_preferred and not self._added_preferred:
            return api.SKIP
        state.write(PRE_SCORE_KEY, _PreScoreState(preferred))
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        node = node_info.node
        if node is None:
            return 0, api.Status(api.Code.ERROR, "node not found")
        total = preferred_score(self._added_preferred, node) if self._added_preferred else 0
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            try:
                pre_score = _PreScoreState(pod_preferred_terms(pod))
            except ValueError as error:
                return 0, api.Status.from_error(error)
        if pre_score.preferred:
            total += preferred_score(pre_score.preferred, node)
        return total, api.SUCCESS

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(
        self, state: api.CycleState, pod: Pod, scores: list[api.NodeScore]
    ) -> api.Status:
        return api.default_normalize_score(api.MAX_NODE_SCORE, False, scores)

    # Batch Filter and Score --------------------------------------------------------------------

    def batch_filter(self) -> NodeAffinity | None:
        return self if self.args.added_affinity is None else None

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        required = state.get(PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity(pod)
        return api.NodeRejections(~nodes.selector_mask(required.node_selector, required.terms))

    def batch_score(self) -> NodeAffinity | None:
        return self if self.args.added_affinity is None else None

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            raise api.Fallback
        raw = np.zeros(len(positions), dtype=np.int64)
        for term in pre_score.preferred:
            raw += np.where(nodes.term_mask(term.term)[positions], term.weight, 0)
        highest = max(int(raw.max()) if len(raw) else 0, 0)
        if highest == 0:
            return raw
        return api.go_div_array(api.MAX_NODE_SCORE * raw, highest)

    # Events --------------------------------------------------------------------------------

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> api.QueueingHint:
        """Queue when a node is added that matches, or is relabelled from not matching to
        matching; the profile's added affinity must match the node too."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return api.QueueingHint.QUEUE
        added = self._added_required
        if added is not None and not added.matches(new.name, new.labels):
            return api.QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        matched, error = required.match(new)
        if error:
            return api.QueueingHint.QUEUE
        if not matched:
            return api.QueueingHint.QUEUE_SKIP
        if old is None:
            return api.QueueingHint.QUEUE
        was_matched, error = required.match(old)
        if error:
            return api.QueueingHint.QUEUE
        return api.QueueingHint.QUEUE_SKIP if was_matched else api.QueueingHint.QUEUE

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_LABEL
                ),
                self.is_schedulable_after_node_change,
            )
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeAffinity:
    return NodeAffinity(NodeAffinityArgs.parse(args))
