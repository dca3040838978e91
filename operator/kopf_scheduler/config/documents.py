"""Reading YAML and JSON documents strictly, as the Kubernetes API machinery reads them.

PyYAML's safe loader and Python's ``json`` are lenient where kube-scheduler and the API server
are not: a key written twice silently replaces the first (a second ``profiles:`` drops the first
list), ``.nan`` and ``.inf`` (``NaN`` and ``Infinity`` in JSON) become floats that no Kubernetes
field can hold, and a document nested a few hundred levels deep ends in ``RecursionError``. The
readers here reject all three, and turn parser errors (several lines in PyYAML) into one line
that names the line of the file. Configuration files and scenario files both read through here,
and :func:`copy_document` hands a read object to a new owner.
"""

from __future__ import annotations

import copy
import json
import marshal
import math
from collections.abc import Hashable, Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

MAX_DEPTH = 100
"""The deepest nesting a document may have; Kubernetes objects stay far below it."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DocumentError(ValueError):
    """A document that cannot be read; ``line`` and ``column`` are 1-based when known."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        where = f"line {line}" if line is not None else ""
        if where and column is not None:
            where += f", column {column}"
        super().__init__(f"{where}: {reason}" if where else reason)


class DocumentSyntaxError(DocumentError):
    """The text does not follow the YAML or JSON grammar."""


def decode_utf8(data: bytes) -> str:
    """``data`` as text; bytes that are not UTF-8 are an error naming their offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        raise DocumentError(
            f"not UTF-8 text: byte 0x{byte:02x} at offset {error.start} ({error.reason})"
        ) from None


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a depth limit, no duplicate keys and finite floats only."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.get_mark().line + 1
                raise DocumentError(f"nested more than {MAX_DEPTH} levels deep", line)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        first_lines: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_lines:
                raise DocumentError(
                    f'duplicate key "{key}" (first at line {first_lines[key]})', line
                )
            first_lines[key] = line
        return super().construct_mapping(node, deep)

    def construct_finite_float(self, node: ScalarNode) -> float:
        value = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise DocumentError(
                f"{node.value} is not a finite number (Kubernetes numbers are finite)",
                node.start_mark.line + 1,
            )
        return value


_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_finite_float)


def _yaml_error(error: yaml.YAMLError) -> DocumentError:
    """PyYAML's multi-line message as one line: what went wrong and where."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        parts = [part for part in (error.context, error.problem) if part]
        reason = "not valid YAML: " + (", ".join(parts) or "parse error")
        if mark is not None:
            return DocumentSyntaxError(reason, mark.line + 1, mark.column + 1)
        return DocumentSyntaxError(reason)
    return DocumentSyntaxError("not valid YAML: " + " ".join(str(error).split()))


def load_yaml(text: str, *, strict: bool = True) -> Any:
    """The single YAML document in ``text`` (``None`` when there is none).

    ``strict=False`` reads as the Kubernetes client libraries read kubeconfig files: duplicate
    keys and non-finite floats pass (the last key wins); errors are still one line.
    """
    loader = _StrictLoader(text) if strict else yaml.SafeLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    finally:
        loader.dispose()


def load_yaml_all(text: str) -> list[Any]:
    """Every YAML document in ``text``, empty ones included as ``None``."""
    loader = _StrictLoader(text)
    documents: list[Any] = []
    try:
        while loader.check_node():
            documents.append(loader.construct_document(loader.get_node()))
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    finally:
        loader.dispose()
    return documents


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DocumentError(f'duplicate key "{key}" in a JSON object')
            seen.add(key)
    return result


def _no_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not a finite number (Kubernetes numbers are finite)")


def _walk(document: Any) -> int:
    """The number of keys of every object in ``document``; DocumentError when it is nested more
    than :data:`MAX_DEPTH` levels deep."""
    keys = 0
    level: list[Any] = [document] if isinstance(document, dict | list) else []
    for _ in range(MAX_DEPTH):
        below: list[Any] = []
        for value in level:  # only dicts and lists are kept in a level
            if type(value) is dict:
                keys += len(value)
                below.extend(value.values())
            else:
                below.extend(value)
        if not below:
            return keys
        level = [child for child in below if type(child) is dict or type(child) is list]
    raise DocumentError(f"nested more than {MAX_DEPTH} levels deep")


def _key_count(text: str) -> int | None:
    """The number of object keys written in valid JSON ``text``, when simple counting gives it.

    A key ends with a quote and a colon. Inside a string a quote is always escaped, so ``":`` is
    a key's end wherever no backslash stands before it and no whitespace is written between the
    key and its colon; None when the text has either, and the keys must be counted the slow way.
    """
    if any(odd in text for odd in ('\\":', '" :', '"\t:', '"\n:', '"\r:')):
        return None
    return text.count('":')


def _parse(text: str, object_pairs_hook: Any = None) -> Any:
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise DocumentSyntaxError(
            f"not valid JSON: {error.msg}", error.lineno, error.colno
        ) from None
    except RecursionError:
        raise DocumentError(f"nested more than {MAX_DEPTH} levels deep") from None


def load_json(text: str) -> Any:
    """The JSON value in ``text``, read with the same rules as :func:`load_yaml`.

    Python's parser keeps the last of two equal keys. Looking at every object's keys as it is
    built doubles the time a snapshot of a large cluster takes to read, so the text is read
    without looking first; when its objects hold as many keys as the text writes, none was
    written twice. Otherwise (or when the keys cannot be counted simply) it is read again, with
    every object's keys checked, to name the key.
    """
    document = _parse(text)
    if _walk(document) != _key_count(text):
        document = _parse(text, object_pairs_hook=_unique_keys)
    return document


def copy_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of an object as read from JSON or YAML, for a new owner to change.

    Objects made only of dicts, lists, strings, numbers, booleans and None (every object read
    from JSON) go through a marshal round trip, which copies a 50,000-pod snapshot several times
    faster than :func:`copy.deepcopy`; anything else (a timestamp YAML read as a datetime) is
    deep-copied.
    """
    try:
        copied: dict[str, Any] = marshal.loads(marshal.dumps(dict(document)))
    except ValueError:
        return copy.deepcopy(dict(document))
    return copied
