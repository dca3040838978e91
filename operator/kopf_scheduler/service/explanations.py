"""Store each pod's latest decision record on the pod, so ``kopf-scheduler explain`` can show it.

kube-scheduler keeps only an aggregated histogram ("3 Insufficient cpu"); the record here names,
per node, the plugin and reason that rejected it or the scores it got, and for preemption every
candidate and the criterion that decided. The annotation is bounded in size: when a record is too
large, node verdicts are dropped from the end and counted in ``truncatedNodes``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

import orjson
import structlog

from kopf_scheduler.config.types import Explanations
from kopf_scheduler.model.pod import EXPLANATION_ANNOTATION
from kopf_scheduler.ports import ApiError, PodRef
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict

ANNOTATION = EXPLANATION_ANNOTATION
logger = structlog.get_logger("kopf_scheduler.explanations")


class AnnotationWriter(Protocol):
    async def annotate(self, pod: PodRef, annotations: dict[str, str | None]) -> None: ...


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _fitting(verdicts: Sequence[NodeVerdict], budget: int) -> list[dict[str, Any]]:
    """The leading verdicts whose JSON array elements fit in ``budget`` bytes."""
    entries: list[dict[str, Any]] = []
    used = 0
    for verdict in verdicts:
        entry = verdict.as_dict()
        used += len(_dumps(entry)) + (1 if entries else 0)
        if used > budget:
            break
        entries.append(entry)
    return entries


def encode_record(record: AttemptRecord, max_bytes: int) -> str:
    """Compact JSON of ``record`` no longer than ``max_bytes`` (node verdicts trimmed first).

    A record that fits is stored whole. Otherwise the preemption's per-node statuses go first,
    then the node verdicts are kept from the start of the list for as long as they fit (the rest
    are counted in ``truncatedNodes``), and if the record does not fit even without verdicts,
    the preemption's candidate lists go too. Verdicts past the limit are never turned into JSON:
    a failed attempt on 5000 nodes must not cost 5000 encodings for an annotation that keeps a
    few hundred.
    """
    head = record.as_dict(with_nodes=False)
    verdicts = record.nodes
    entries = _fitting(verdicts, max_bytes - len(_dumps({**head, "nodes": []})))
    if len(entries) == len(verdicts):
        return _dumps({**head, "nodes": entries}).decode()

    preemption = head.get("preemption")
    if isinstance(preemption, dict):
        head["preemption"] = {k: v for k, v in preemption.items() if k != "node_statuses"}
    head["truncatedNodes"] = len(verdicts)
    entries = _fitting(verdicts, max_bytes - len(_dumps({**head, "nodes": []})))
    head["truncatedNodes"] = len(verdicts) - len(entries)
    text = _dumps({**head, "nodes": entries})
    if len(text) > max_bytes and isinstance(head.get("preemption"), dict):
        head["preemption"] = {
            k: v for k, v in head["preemption"].items() if k not in ("candidates", "pdb_rejected")
        }
        text = _dumps({**head, "nodes": entries})
    return text.decode()


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
        text = encode_record(record, self.settings.max_bytes)
        self._spawn(self._write(pod, text))

    async def _write(self, pod: PodRef, text: str) -> None:
        try:
            await self._writer.annotate(pod, {ANNOTATION: text})
        except ApiError as error:
            logger.warning("explanation_not_stored", pod=pod.key, reason=str(error))
