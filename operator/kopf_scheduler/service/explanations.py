"""Store each pod's latest decision record on the pod, so ``kopf-scheduler explain`` can show it.

kube-scheduler keeps only an aggregated histogram ("3 Insufficient cpu"); the record here names,
per node, the plugin and reason that rejected it or the scores it got, and for preemption every
candidate and the criterion that decided. The annotation is bounded in size: when a record is too
large, node verdicts are dropped from the end and counted in ``truncatedNodes``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import structlog

from kopf_scheduler.config.types import Explanations
from kopf_scheduler.ports import ApiError, PodRef
from kopf_scheduler.scheduler.explain import AttemptRecord

ANNOTATION = "kopf-scheduler.io/explanation"
logger = structlog.get_logger("kopf_scheduler.explanations")


class AnnotationWriter(Protocol):
    async def annotate(self, pod: PodRef, annotations: dict[str, str | None]) -> None: ...


def encode_record(record: dict[str, Any], max_bytes: int) -> str:
    """Compact JSON of ``record`` no longer than ``max_bytes`` (node verdicts trimmed first)."""
    text = json.dumps(record, separators=(",", ":"), sort_keys=True)
    if len(text.encode()) <= max_bytes:
        return text
    trimmed = dict(record)
    nodes = list(record.get("nodes") or [])
    total = len(nodes)
    preemption = trimmed.get("preemption")
    if isinstance(preemption, dict):
        preemption = dict(preemption)
        preemption.pop("node_statuses", None)
        trimmed["preemption"] = preemption
    while True:
        trimmed["nodes"] = nodes
        trimmed["truncatedNodes"] = total - len(nodes)
        text = json.dumps(trimmed, separators=(",", ":"), sort_keys=True)
        if len(text.encode()) <= max_bytes or not nodes:
            break
        nodes = nodes[: max(0, len(nodes) * 3 // 4)]
    if len(text.encode()) > max_bytes and isinstance(trimmed.get("preemption"), dict):
        trimmed["preemption"] = {
            k: v
            for k, v in trimmed["preemption"].items()
            if k not in ("candidates", "pdb_rejected")
        }
        text = json.dumps(trimmed, separators=(",", ":"), sort_keys=True)
    return text


class ExplanationRecorder:
    """Receives every attempt record and writes the ones the configuration asks for."""

    def __init__(
        self,
        settings: Explanations,
        writer: AnnotationWriter,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        get_pod: Callable[[str], PodRef | None],
    ) -> None:
        self.settings = settings
        self._writer = writer
        self._spawn = spawn
        self._get_pod = get_pod

    def wants(self, record: AttemptRecord) -> bool:
        mode = self.settings.annotate
        if mode == "none":
            return False
        if mode == "all":
            return True
        return record.result != "scheduled" or record.preemption is not None

    def __call__(self, record: AttemptRecord) -> None:
        if not self.wants(record):
            return
        pod = self._get_pod(record.pod)
        if pod is None:
            return
        text = encode_record(record.as_dict(), self.settings.max_bytes)
        self._spawn(self._write(pod, text))

    async def _write(self, pod: PodRef, text: str) -> None:
        try:
            await self._writer.annotate(pod, {ANNOTATION: text})
        except ApiError as error:
            logger.warning("explanation_not_stored", pod=pod.key, reason=str(error))
