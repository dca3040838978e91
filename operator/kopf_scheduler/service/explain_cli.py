"""``kopf-scheduler explain NAMESPACE/NAME``: render the decision record stored on a pod.

The record is an annotation, and anyone who can patch the pod can write it, so it is checked
before it is rendered: text that is not JSON, JSON that is not a record, and a record that lacks
a field the rendering reads each get a one-line error naming what is wrong.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.k8s.client import make_api
from kopf_scheduler.k8s.errors import ClientConfigError
from kopf_scheduler.ports import ApiError, NotFoundError
from kopf_scheduler.service.explanations import ANNOTATION
from kopf_scheduler.service.startup import describe
from kopf_scheduler.sim.report import render_explanations

EXIT_RUNTIME = 1
EXIT_USAGE = 2

_Check = Callable[[Any], bool]


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_name_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _is_scores(value: Any) -> bool:
    return isinstance(value, Mapping) and all(_is_number(score) for score in value.values())


_TYPE_NAMES: dict[_Check, str] = {
    _is_str: "a string",
    _is_int: "an integer",
    _is_number: "a number",
    _is_bool: "true or false",
    _is_str_list: "a list of strings",
    _is_name_or_none: "a string or null",
    _is_scores: "an object of numbers",
    _is_list: "a list",
}
_ATTEMPT = {
    "pod": _is_str,
    "attempt": _is_int,
    "result": _is_str,
    "node": _is_name_or_none,
    "nodes": _is_list,
}
_FEASIBLE_NODE = {"node": _is_str, "scores": _is_scores, "total": _is_number}
_REJECTED_NODE = {
    "node": _is_str,
    "plugin": _is_name_or_none,
    "code": _is_str,
    "reasons": _is_str_list,
}
_CRITERIA = {
    "num_pdb_violations": _is_int,
    "highest_victim_priority": _is_int,
    "num_victims": _is_int,
}


class RecordError(ValueError):
    """The annotation does not hold a decision record that can be shown."""


def _require(record: Mapping[str, Any], fields: Mapping[str, _Check], where: str) -> None:
    for name, check in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in record:
            raise RecordError(f"{path} is missing")
        if not check(record[name]):
            raise RecordError(f"{path} must be {_TYPE_NAMES[check]}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"{where} must be an object")
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
        _require(node, {"feasible": _is_bool}, where)
        _require(node, _FEASIBLE_NODE if node["feasible"] else _REJECTED_NODE, where)
    preemption = record.get("preemption")
    if preemption is not None:
        preemption = _mapping(preemption, "preemption")
        _require(preemption, {"outcome": _is_str}, "preemption")
        candidates = preemption.get("candidates") or []
        if not isinstance(candidates, list):
            raise RecordError("preemption.candidates must be a list")
        for index, entry in enumerate(candidates):
            where = f"preemption.candidates[{index}]"
            candidate = _mapping(entry, where)
            _require(candidate, {"node": _is_str, "victims": _is_str_list}, where)
            criteria = _mapping(candidate.get("criteria"), f"{where}.criteria")
            _require(criteria, _CRITERIA, f"{where}.criteria")
    return record


async def explain(pod: str, kubeconfig: str | None, output: str) -> int:
    namespace, _, name = pod.partition("/")
    if not namespace or not name:
        print("error: give the pod as NAMESPACE/NAME", file=sys.stderr)
        return EXIT_USAGE
    try:
        check_kubeconfig(kubeconfig)
        api = await make_api(kubeconfig)
    except (ConfigError, ClientConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
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
    print("\n".join(render_explanations([record])))
    if record.get("truncatedNodes"):
        print(f"  ({record['truncatedNodes']} more nodes not stored)")
    nominated = status.get("nominatedNodeName")
    if nominated:
        print(f"  currently nominated to {nominated}")
    return 0
