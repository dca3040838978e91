"""The strict YAML and JSON readers: what the API machinery refuses is refused, with the line."""

from __future__ import annotations

import json

import pytest

from kopf_scheduler.config.documents import (
    MAX_DEPTH,
    DocumentError,
    DocumentSyntaxError,
    decode_utf8,
    load_json,
    load_yaml,
    load_yaml_all,
)


def nested_yaml(depth: int) -> str:
    """A mapping whose value is ``depth - 1`` nested flow lists (``depth`` nodes deep)."""
    return "a: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def nested_list(lists: int) -> list[object]:
    value: list[object] = []
    for _ in range(lists - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "profiles:\n- schedulerName: a\nprofiles:\n- schedulerName: b\n",
            'line 3: duplicate key "profiles" (first at line 1)',
            id="duplicate-top-level-key",
        ),
        pytest.param(
            "profiles:\n- schedulerName: a\n  plugins: {}\n  schedulerName: b\n",
            'line 4: duplicate key "schedulerName" (first at line 2)',
            id="duplicate-nested-key",
        ),
        pytest.param(
            "a: {b: 1, b: 2}\n",
            'line 1: duplicate key "b" (first at line 1)',
            id="duplicate-flow-key",
        ),
        pytest.param(
            "qps: .nan\n",
            "line 1: .nan is not a finite number (Kubernetes numbers are finite)",
            id="nan",
        ),
        pytest.param(
            "a:\n  b: [1, -.inf]\n",
            "line 2: -.inf is not a finite number (Kubernetes numbers are finite)",
            id="negative-infinity-in-a-list",
        ),
        pytest.param(
            nested_yaml(MAX_DEPTH + 1),
            f"line 1: nested more than {MAX_DEPTH} levels deep",
            id="one-level-too-deep",
        ),
        pytest.param(
            nested_yaml(100_000),
            f"line 1: nested more than {MAX_DEPTH} levels deep",
            id="far-too-deep-for-the-recursion-limit",
        ),
        pytest.param(
            "a: [1, 2\n",
            "line 2, column 1: not valid YAML: while parsing a flow sequence, "
            "expected ',' or ']', but got '<stream end>'",
            id="syntax-error-on-one-line",
        ),
    ],
)
def test_yaml_refusals_name_the_line(text: str, message: str) -> None:
    with pytest.raises(DocumentError) as info:
        load_yaml(text)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            nested_yaml(MAX_DEPTH), {"a": nested_list(MAX_DEPTH - 1)}, id="deepest-allowed"
        ),
        pytest.param(
            "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n",
            {"base": {"x": 1, "y": 2}, "d": {"x": 3, "y": 2}},
            id="merge-key-overridden-explicitly",
        ),
        pytest.param("qps: 2.5\n", {"qps": 2.5}, id="finite-float"),
        pytest.param("", None, id="empty"),
    ],
)
def test_yaml_that_the_api_accepts_is_read(text: str, expected: object) -> None:
    assert load_yaml(text) == expected


def test_lenient_yaml_keeps_the_last_duplicate_as_client_libraries_do() -> None:
    assert load_yaml("a: 1\na: 2\n", strict=False) == {"a": 2}


def test_every_document_of_a_stream() -> None:
    assert load_yaml_all("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, None, {"b": 2}]
    with pytest.raises(DocumentError, match='line 5: duplicate key "b"'):
        load_yaml_all("a: 1\n---\nb: 2\nc: 3\nb: 4\n")


@pytest.mark.parametrize(
    ("text", "message", "syntax"),
    [
        pytest.param('{"a": 1, "a": 2}', 'duplicate key "a" in a JSON object', False, id="dup"),
        pytest.param(
            '{"a": {"b": 1}, "c": [{"d": 1, "d": 1}]}',
            'duplicate key "d" in a JSON object',
            False,
            id="dup-deep-in-a-list",
        ),
        pytest.param(
            '{"a" : 1, "b": 2, "a": 3}',
            'duplicate key "a" in a JSON object',
            False,
            id="dup-with-a-space-before-a-colon",
        ),
        pytest.param(
            '{"a": "{\\"x\\": 1}", "a": 2}',
            'duplicate key "a" in a JSON object',
            False,
            id="dup-beside-quoted-json",
        ),
        pytest.param(
            '{"a\\\\": 1, "b": 2, "b": 3}',
            'duplicate key "b" in a JSON object',
            False,
            id="dup-after-a-key-ending-in-a-backslash",
        ),
        pytest.param(
            '{"qps": NaN}',
            "NaN is not a finite number (Kubernetes numbers are finite)",
            False,
            id="nan",
        ),
        pytest.param(
            "[Infinity]",
            "Infinity is not a finite number (Kubernetes numbers are finite)",
            False,
            id="infinity",
        ),
        pytest.param(
            "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
            f"nested more than {MAX_DEPTH} levels deep",
            False,
            id="too-deep",
        ),
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            f"nested more than {MAX_DEPTH} levels deep",
            False,
            id="far-too-deep-for-the-recursion-limit",
        ),
        pytest.param(
            '{"kind": "Node",',
            "line 1, column 17: not valid JSON: Expecting property name enclosed in double quotes",
            True,
            id="syntax",
        ),
    ],
)
def test_json_refusals(text: str, message: str, syntax: bool) -> None:
    with pytest.raises(DocumentError) as info:
        load_json(text)
    assert str(info.value) == message
    assert isinstance(info.value, DocumentSyntaxError) == syntax


def test_json_as_deep_as_allowed_is_read() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_bytes_that_are_not_utf8_name_their_offset() -> None:
    with pytest.raises(DocumentError) as info:
        decode_utf8(b"kind: Node\n\xff\xfe")
    assert str(info.value) == "not UTF-8 text: byte 0xff at offset 11 (invalid start byte)"
    assert decode_utf8("naïve".encode()) == "naïve"


@pytest.mark.parametrize(
    "text",
    [
        '{"kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}}}',
        '{"note": "{\\"kind\\":\\"Pod\\"}", "image": "registry:5000/app:1"}',
        '{"a" : 1, "b"\n: {"c"\t: 2}}',
        '{"path\\\\": "c:\\\\", "empty": {}, "list": [{}, []]}',
    ],
    ids=["plain", "quoted-json-and-colons-in-strings", "whitespace-before-colons", "backslashes"],
)
def test_json_with_unique_keys_reads_as_pythons_parser_reads_it(text: str) -> None:
    assert load_json(text) == json.loads(text)
