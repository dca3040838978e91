import pytest

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.selectors import LabelSelector, NodeSelector


@pytest.mark.parametrize(
    ("raw", "labels", "expected"),
    [
        pytest.param(None, {"a": "b"}, False, id="missing-selector-matches-nothing"),
        pytest.param({}, {"a": "b"}, True, id="empty-selector-matches-everything"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True, id="match-labels"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "c"}, False, id="match-labels-differ"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]},
            {"a": "y"},
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]},
            {},
            True,
            id="not-in-missing-key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
            {"a": "1"},
            False,
            id="does-not-exist",
        ),
    ],
)
def test_label_selector(raw, labels, expected) -> None:
    assert LabelSelector.parse(raw, "selector").matches(labels) is expected


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]}, id="in-without-values"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            id="exists-with-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            id="gt-in-label-selector",
        ),
        pytest.param({"matchLabels": ["a"]}, id="labels-not-a-map"),
    ],
)
def test_invalid_label_selectors(raw) -> None:
    with pytest.raises(InvalidObjectError):
        LabelSelector.parse(raw, "selector")


def _node_selector(*expressions, fields=None):
    term = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = fields
    return NodeSelector.parse({"nodeSelectorTerms": [term]}, "required")


@pytest.mark.parametrize(
    ("selector", "name", "labels", "expected"),
    [
        pytest.param(
            _node_selector({"key": "cpu", "operator": "Gt", "values": ["4"]}),
            "n",
            {"cpu": "8"},
            True,
            id="gt",
        ),
        pytest.param(
            _node_selector({"key": "cpu", "operator": "Gt", "values": ["4"]}),
            "n",
            {"cpu": "x"},
            False,
            id="gt-not-a-number",
        ),
        pytest.param(
            _node_selector({"key": "cpu", "operator": "Lt", "values": ["4"]}),
            "n",
            {"cpu": "2"},
            True,
            id="lt",
        ),
        pytest.param(
            _node_selector(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}]),
            "n1",
            {},
            True,
            id="match-fields",
        ),
        pytest.param(
            NodeSelector.parse({"nodeSelectorTerms": [{}]}, "required"),
            "n1",
            {"a": "b"},
            False,
            id="empty-term-matches-nothing",
        ),
    ],
)
def test_node_selector(selector, name, labels, expected) -> None:
    assert selector.matches(name, labels) is expected
