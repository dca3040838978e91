"""``kopf-scheduler explain [NAMESPACE/]NAME``: render the decision record stored on a pod.

The pod is named as kubectl names it: ``NAME`` in the namespace of ``-n`` or, without it, of the
kubeconfig's context (``--context`` chooses another), or ``NAMESPACE/NAME``.

Rejected nodes are stored in groups that share a plugin, code and reasons; the text output
names each node on a line of its own, as ``simulate``'s report does, and ``-o json``/``-o yaml``
give the record as stored.

The record is an annotation, and anyone who can patch the pod can write it, so it is checked
before it is rendered: text that is not JSON, JSON that is not a record, and a record that lacks
a field the rendering reads each get a one-line error naming what is wrong. What plugins add
about the pod (``plugins``: a gang member's group, from Coscheduling) is shown after the nodes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TypeGuard

import yaml

from kopf_scheduler import exit_codes
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.config.validation import (
    BOOLEAN,
    INTEGER,
    LIST,
    NUMBER,
    OBJECT,
    STRING,
    Expected,
    field_path,
)
from kopf_scheduler.k8s.client import make_api
from kopf_scheduler.k8s.errors import ClientConfigError
from kopf_scheduler.ports import ApiError, NotFoundError
from kopf_scheduler.service.explanations import ANNOTATION, stored_verdicts
from kopf_scheduler.service.startup import describe
from kopf_scheduler.sim.report import render_explanations

EXIT_RUNTIME = exit_codes.RUNTIME
EXIT_USAGE = exit_codes.USAGE


def _is_string_list(value: Any) -> TypeGuard[list[str]]:
    return LIST.accepts(value) and all(STRING.accepts(item) for item in value)


def _is_string_or_null(value: Any) -> TypeGuard[str | None]:
    return value is None or STRING.accepts(value)


def _is_scores(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return OBJECT.accepts(value) and all(NUMBER.accepts(score) for score in value.values())


STRING_LIST = Expected("a list of strings", _is_string_list)
STRING_OR_NULL = Expected("a string or null", _is_string_or_null)
SCORES = Expected("an object of numbers", _is_scores)

_ATTEMPT: dict[str, Expected[Any]] = {
    "pod": STRING,
    "attempt": INTEGER,
    "result": STRING,
    "node": STRING_OR_NULL,
    "nodes": LIST,
}
_FEASIBLE_NODE: dict[str, Expected[Any]] = {"node": STRING, "scores": SCORES, "total": NUMBER}
_REJECTED_NODE: dict[str, Expected[Any]] = {
    "node": STRING,
    "plugin": STRING_OR_NULL,
    "code": STRING,
    "reasons": STRING_LIST,
}
_REJECTED_GROUP: dict[str, Expected[Any]] = {
    "nodes": STRING_LIST,
    "plugin": STRING_OR_NULL,
    "code": STRING,
    "reasons": STRING_LIST,
}
_CRITERIA: dict[str, Expected[Any]] = {
    "num_pdb_violations": INTEGER,
    "highest_victim_priority": INTEGER,
    "num_victims": INTEGER,
}


class RecordError(ValueError):
    """The annotation does not hold a decision record that can be shown."""


def _require(record: Mapping[str, Any], fields: Mapping[str, Expected[Any]], where: str) -> None:
    for name, expected in fields.items():
        path = field_path(where, name)
        if name not in record:
            raise RecordError(f"{path} is missing")
        if not expected.accepts(record[name]):
            raise RecordError(f"{path} must be {expected.name}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not OBJECT.accepts(value):
        raise RecordError(f"{where} must be {OBJECT.name}")
    return value


def parse_record(text: str) -> dict[str, Any]:
    """The decision record in an annotation's ``text``; :class:`RecordError` says what is wrong."""
    try:
        record = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
        raise RecordError(f"not JSON ({reason})") from None
    if not isinstance(record, dict):
        raise RecordError(f"must be a JSON object, not {type(record).__name__}")
    _require(record, _ATTEMPT, "")
    for index, entry in enumerate(record["nodes"]):
        where = f"nodes[{index}]"
        node = _mapping(entry, where)
        _require(node, {"feasible": BOOLEAN}, where)
        _require(node, _FEASIBLE_NODE if node["feasible"] else _REJECTED_NODE, where)
    groups = record.get("rejected") or []
    if not LIST.accepts(groups):
        raise RecordError(f"rejected must be {LIST.name}")
    for index, entry in enumerate(groups):
        _require(_mapping(entry, f"rejected[{index}]"), _REJECTED_GROUP, f"rejected[{index}]")
    preemption = record.get("preemption")
    if preemption is not None:
        preemption = _mapping(preemption, "preemption")
        _require(preemption, {"outcome": STRING}, "preemption")
        candidates = preemption.get("candidates") or []
        if not LIST.accepts(candidates):
            raise RecordError(f"preemption.candidates must be {LIST.name}")
        for index, entry in enumerate(candidates):
            where = f"preemption.candidates[{index}]"
            candidate = _mapping(entry, where)
            _require(candidate, {"node": STRING, "victims": STRING_LIST}, where)
            criteria = _mapping(candidate.get("criteria"), f"{where}.criteria")
            _require(criteria, _CRITERIA, f"{where}.criteria")
    if "plugins" in record:
        for name, entry in _mapping(record["plugins"], "plugins").items():
            where = f"plugins.{name}"
            state = _mapping(entry, where)
            if "summary" in state and not STRING.accepts(state["summary"]):
                raise RecordError(f"{where}.summary must be {STRING.name}")
    return record


async def explain(
    pod: str,
    kubeconfig: str | None,
    output: str,
    *,
    namespace: str | None = None,
    context: str | None = None,
) -> int:
    """Show the record of ``pod`` (``NAME`` in ``namespace``, or ``NAMESPACE/NAME``)."""
    given, slash, name = pod.partition("/") if "/" in pod else ("", "", pod)
    if not name or "/" in name or (slash and not given):
        print("error: give the pod as NAME or NAMESPACE/NAME", file=sys.stderr)
        return EXIT_USAGE
    try:
        context_namespace = check_kubeconfig(kubeconfig, context_name=context)
        api = await make_api(kubeconfig, context=context)
    except (ConfigError, ClientConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    namespace = given or namespace or context_namespace
    pod = f"{namespace}/{name}"
    try:
        raw = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    except NotFoundError:
        print(f"error: pod {pod} not found", file=sys.stderr)
        return EXIT_RUNTIME
    except ApiError as error:
        print(f"error: {describe(error)}", file=sys.stderr)
        return EXIT_RUNTIME
    finally:
        await api.close()
    annotations = (raw.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ANNOTATION)
    status = raw.get("status") or {}
    if not text:
        node = (raw.get("spec") or {}).get("nodeName")
        where = f"bound to {node}" if node else "pending"
        print(
            f"{pod} is {where}; no decision record is stored on it "
            "(records are kept for failed attempts and preemptions by default)."
        )
        return 0
    try:
        record = parse_record(text)
    except RecordError as error:
        print(f"error: the {ANNOTATION} annotation of {pod}: {error}", file=sys.stderr)
        return EXIT_RUNTIME
    if output == "json":
        print(json.dumps(record, indent=2))
        return 0
    if output == "yaml":
        print(yaml.safe_dump(record, sort_keys=False), end="")
        return 0
    print("\n".join(render_explanations([{**record, "nodes": stored_verdicts(record)}])))
    if record.get("truncatedNodes"):
        print(f"  ({record['truncatedNodes']} more nodes not stored)")
    nominated = status.get("nominatedNodeName")
    if nominated:
        print(f"  currently nominated to {nominated}")
    return 0
