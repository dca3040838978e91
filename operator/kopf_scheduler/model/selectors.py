"""Label selectors and node selectors with Kubernetes matching semantics.

Two subtleties matter to scheduling and are kept explicit here: a *missing* label selector matches
nothing while an *empty* one matches everything, and a node selector term without requirements
matches no node. Malformed selectors raise :class:`InvalidObjectError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError, expect_object

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

_LABEL_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
_NODE_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT})


class Requirement:
    """One ``key <operator> values`` requirement.

    A ``Gt``/``Lt`` value that is not an integer passes the API server's validation but cannot
    be compared; kube-scheduler keeps such a requirement as a parse error of its term, which then
    matches no node (and the pod reads "didn't match Pod's node affinity/selector"). ``bound`` is
    ``None`` for it, and it matches nothing.
    """

    __slots__ = ("bound", "key", "operator", "values")

    def __init__(self, key: str, operator: str, values: frozenset[str]) -> None:
        self.key = key
        self.operator = operator
        self.values = values
        self.bound: int | None = None
        if operator in (GT, LT) and len(values) == 1:
            try:
                self.bound = int(next(iter(values)))
            except ValueError:
                self.bound = None

    @classmethod
    def parse(cls, raw: Any, field: str, operators: frozenset[str]) -> Requirement:
        raw = expect_object(raw, field, "an object")
        key = raw.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidObjectError(f"{field}.key", "must be a non-empty string")
        operator = raw.get("operator")
        if operator not in operators:
            raise InvalidObjectError(
                f"{field}.operator",
                f"not a valid selector operator: {operator!r} "
                f"(allowed: {', '.join(sorted(operators))})",
            )
        values = raw.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidObjectError(f"{field}.values", "must be a list of strings")
        if operator in (IN, NOT_IN) and not values:
            raise InvalidObjectError(
                f"{field}.values", f"must be specified when `operator` is '{operator}'"
            )
        if operator in (EXISTS, DOES_NOT_EXIST) and values:
            raise InvalidObjectError(
                f"{field}.values", f"may not be specified when `operator` is '{operator}'"
            )
        if operator in (GT, LT) and len(values) != 1:
            raise InvalidObjectError(
                f"{field}.values", f"must be a single element when `operator` is '{operator}'"
            )
        return cls(key, operator, frozenset(values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        bound = self.bound
        if value is None or bound is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > bound if op == GT else number < bound

    def __repr__(self) -> str:
        return f"Requirement({self.key} {self.operator} {sorted(self.values)})"


class LabelSelector:
    """A ``metav1.LabelSelector``. ``matches_nothing`` marks a selector that was absent."""

    __slots__ = ("match_labels", "matches_nothing", "requirements")

    def __init__(
        self,
        match_labels: Mapping[str, str] | None = None,
        requirements: Sequence[Requirement] = (),
        *,
        matches_nothing: bool = False,
    ) -> None:
        self.match_labels: dict[str, str] = dict(match_labels or {})
        self.requirements: tuple[Requirement, ...] = tuple(requirements)
        self.matches_nothing = matches_nothing

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(matches_nothing=True)

    @classmethod
    def parse(cls, raw: Any, field: str) -> LabelSelector:
        """Parse a selector; ``None`` gives the selector that matches nothing."""
        if raw is None:
            return cls.nothing()
        raw = expect_object(raw, field, "a label selector object")
        match_labels = raw.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()
        ):
            raise InvalidObjectError(f"{field}.matchLabels", "must be a map of strings")
        expressions = raw.get("matchExpressions") or []
        if not isinstance(expressions, list):
            raise InvalidObjectError(f"{field}.matchExpressions", "must be a list")
        requirements = [
            Requirement.parse(expr, f"{field}.matchExpressions[{i}]", _LABEL_OPERATORS)
            for i, expr in enumerate(expressions)
        ]
        return cls(match_labels, requirements)

    def is_empty(self) -> bool:
        """True for ``{}``: a present selector without requirements (matches everything)."""
        return not self.matches_nothing and not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for key, value in self.match_labels.items():
            if labels.get(key) != value:
                return False
        return all(requirement.matches(labels) for requirement in self.requirements)

    def with_requirement(self, requirement: Requirement) -> LabelSelector:
        """A copy with one more requirement (used to merge ``matchLabelKeys``)."""
        if self.matches_nothing:
            return self
        return LabelSelector(self.match_labels, (*self.requirements, requirement))

    def __repr__(self) -> str:
        if self.matches_nothing:
            return "LabelSelector(<nothing>)"
        return f"LabelSelector({self.match_labels}, {list(self.requirements)})"


class NodeSelectorTerm:
    """One ``nodeSelectorTerms`` entry: label expressions and ``metadata.name`` fields."""

    __slots__ = ("field_requirements", "label_requirements")

    def __init__(
        self, label_requirements: Sequence[Requirement], field_requirements: Sequence[Requirement]
    ) -> None:
        self.label_requirements = tuple(label_requirements)
        self.field_requirements = tuple(field_requirements)

    @classmethod
    def parse(cls, raw: Any, field: str) -> NodeSelectorTerm:
        if raw is None:
            raw = {}
        raw = expect_object(raw, field, "a node selector term")
        expressions = raw.get("matchExpressions") or []
        fields = raw.get("matchFields") or []
        if not isinstance(expressions, list):
            raise InvalidObjectError(f"{field}.matchExpressions", "must be a list")
        if not isinstance(fields, list):
            raise InvalidObjectError(f"{field}.matchFields", "must be a list")
        labels = [
            Requirement.parse(e, f"{field}.matchExpressions[{i}]", _NODE_OPERATORS)
            for i, e in enumerate(expressions)
        ]
        field_reqs = []
        for i, e in enumerate(fields):
            requirement = Requirement.parse(e, f"{field}.matchFields[{i}]", frozenset({IN, NOT_IN}))
            if requirement.key != "metadata.name":
                raise InvalidObjectError(
                    f"{field}.matchFields[{i}].key",
                    f"not a valid field selector key: {requirement.key!r} (only metadata.name)",
                )
            if len(requirement.values) != 1:
                raise InvalidObjectError(
                    f"{field}.matchFields[{i}].values",
                    "must have one element for a metadata.name field selector",
                )
            field_reqs.append(requirement)
        return cls(labels, field_reqs)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.label_requirements and not self.field_requirements:
            return False
        if not all(r.matches(labels) for r in self.label_requirements):
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(fields) for r in self.field_requirements)


class NodeSelector:
    """A ``v1.NodeSelector``: the terms are ORed."""

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[NodeSelectorTerm]) -> None:
        self.terms = tuple(terms)

    @classmethod
    def parse(cls, raw: Any, field: str) -> NodeSelector:
        raw = expect_object(raw, field, "a node selector")
        terms = raw.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            raise InvalidObjectError(f"{field}.nodeSelectorTerms", "must have at least one term")
        return cls(
            [
                NodeSelectorTerm.parse(t, f"{field}.nodeSelectorTerms[{i}]")
                for i, t in enumerate(terms)
            ]
        )

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return any(term.matches(node_name, labels) for term in self.terms)


@dataclass(slots=True, eq=False)
class PreferredSchedulingTerm:
    """A weighted node affinity preference."""

    weight: int
    term: NodeSelectorTerm

    @classmethod
    def parse(cls, raw: Any, field: str) -> PreferredSchedulingTerm:
        raw = expect_object(raw, field, "an object")
        weight = raw.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise InvalidObjectError(
                f"{field}.weight", f"must be in the range 1-100, got {weight!r}"
            )
        return cls(weight, NodeSelectorTerm.parse(raw.get("preference"), f"{field}.preference"))


def parse_string_map(raw: Any, field: str) -> dict[str, str]:
    """A ``map[string]string`` field (labels, nodeSelector); ``None`` is empty."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise InvalidObjectError(field, f"must be a map of strings, got {raw!r}")
    return dict(raw)
