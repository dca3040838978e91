"""Store each pod's latest decision record on the pod, so ``kopf-scheduler explain`` can show it.

kube-scheduler keeps only an aggregated histogram ("3 Insufficient cpu"); the record here names,
per node, the plugin and reason that rejected it or the scores it got, and for preemption every
candidate and the criterion that decided. Nodes rejected alike (the same plugin, code and
reasons) are stored as one group naming them, so the annotation grows by a name per node rather
than a verdict. It is bounded in size: when a record is too large, node verdicts are dropped from
the end and counted in ``truncatedNodes``.

A pod that keeps failing the same way is not written to on every attempt: each write is a real
change to the pod, which every watcher of pods receives. A record is written when it says
something new: a different result, a message with other reasons (the numbers in it, how many
nodes gave each reason, left out), or another preemption outcome, nominated node or victims. A
record that repeats the last one written in those terms is written only once ``REFRESH_SECONDS``
have passed since that write, as kube-scheduler writes a repeated event's count every so often.
The per-node verdicts, the node counts and the preemption's random starting node change from one
attempt to the next while pods come and go; writing on each such change made one pod update per
failed attempt, and on a busy API server those writes slowed the very deletions the pods were
waiting for (EventHandlingPodDelete: 33,823 failed attempts and 40,328 PATCH requests against
4,381 and 2,963 without explanations).

A failed attempt whose PodScheduled condition changes sends a status patch anyway; a record due
then goes in that patch's annotations and costs no request of its own. A record that is not due
stays out of it even so: the condition's message changes with every count in it, and a record of
a few kilobytes in each of those patches reaches every watcher of pods (EventHandlingPodDelete at
3436385: 22.3 pods/s and the blockers' deletions 72.9 s with the records in every patch, 32.9
pods/s and 40.7 s with none). A record is due again, too, whenever the pod as last seen does not
carry the last one sent: a patch or a write that failed, or an annotation someone removed. Only
a version of the pod newer than the one the record was sent against can say so: until the watch
brings the pod back, it cannot show the record, and a pod retried within the second, as pods
waiting for deletions are, would otherwise send it again on every attempt while the watch lags.
A write of its own that fails is forgotten, so the next attempt makes it again; a status patch
that failed shows in a newer version of the pod without the record, or is made good by the
refresh.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import cachetools
import orjson
import structlog

from kopf_scheduler.config.types import Explanations
from kopf_scheduler.model.pod import EXPLANATION_ANNOTATION
from kopf_scheduler.ports import ApiError, PodRef
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict

ANNOTATION = EXPLANATION_ANNOTATION
REFRESH_SECONDS = 30.0
"""How long a record that repeats the last one written for the pod may go unwritten."""
REMEMBERED_PODS = 50_000
"""How many pods' last writes are remembered (the least recently written are forgotten)."""
_NUMBERS = re.compile(r"\d+")
logger = structlog.get_logger("kopf_scheduler.explanations")


class AnnotationWriter(Protocol):
    async def annotate(self, pod: PodRef, annotations: dict[str, str | None]) -> None: ...


class RecordedPod(PodRef, Protocol):
    """A pod as last seen: its version, and the record stored on it."""

    @property
    def resource_version(self) -> str: ...

    @property
    def explanation(self) -> str | None: ...


class _Sent(NamedTuple):
    gist: int
    time: float
    text_hash: int
    """``hash`` of the annotation's text, to tell whether the pod carries it."""
    resource_version: str
    """The pod's version when the record was sent: until a later one is seen, the pod cannot
    show the record yet."""


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class _Packed(NamedTuple):
    rejected: list[dict[str, Any]]
    feasible: list[dict[str, Any]]
    held: int
    """How many verdicts, from the start of the list, the two hold."""


def _pack(verdicts: Sequence[NodeVerdict], budget: int) -> _Packed:
    """The leading verdicts whose JSON adds no more than ``budget`` bytes to the record.

    Rejected nodes go into groups, one per plugin, code, reasons and detail, each listing its
    nodes by name; feasible nodes keep an entry each for their scores. The sizes add up exactly
    as the JSON arrays will: an element, and a comma before every element but the first.
    """
    groups: dict[tuple[str, str, tuple[str, ...], str], dict[str, Any]] = {}
    feasible: list[dict[str, Any]] = []
    used = 0
    held = 0
    for verdict in verdicts:
        if verdict.feasible:
            entry = verdict.as_dict()
            cost = len(_dumps(entry)) + (1 if feasible else 0)
            if used + cost > budget:
                break
            feasible.append(entry)
        else:
            key = (verdict.plugin, verdict.code, verdict.reasons, verdict.detail)
            name_bytes = len(_dumps(verdict.node))
            group = groups.get(key)
            if group is None:
                group = _rejected_group(verdict)
                cost = len(_dumps(group)) + (1 if groups else 0) + name_bytes
            else:
                cost = name_bytes + 1
            if used + cost > budget:
                break
            groups.setdefault(key, group)["nodes"].append(verdict.node)
        used += cost
        held += 1
    return _Packed(list(groups.values()), feasible, held)


def _rejected_group(verdict: NodeVerdict) -> dict[str, Any]:
    group: dict[str, Any] = {
        "plugin": verdict.plugin,
        "code": verdict.code,
        "reasons": list(verdict.reasons),
        "nodes": [],
    }
    if verdict.detail:
        group["detail"] = verdict.detail
    return group


def _with_verdicts(head: dict[str, Any], packed: _Packed | None = None) -> dict[str, Any]:
    if packed is None:
        return {**head, "nodes": [], "rejected": []}
    return {**head, "nodes": packed.feasible, "rejected": packed.rejected}


def encode_record(record: AttemptRecord, max_bytes: int) -> str:
    """Compact JSON of ``record`` no longer than ``max_bytes`` (node verdicts trimmed first).

    Rejected nodes are stored in groups that share a plugin, code and reasons (``rejected``,
    each group naming its nodes), feasible ones with their scores (``nodes``): a node that fails
    for the same reason as another costs its name, not a verdict of its own (a pod too large
    for 50 nodes: 2.0 KB, against 8.8 KB with a verdict per node). :func:`stored_verdicts` reads
    them back.

    A record that fits is stored whole. Otherwise the preemption's per-node statuses go first,
    then the verdicts are kept from the start of the list for as long as they fit (the rest are
    counted in ``truncatedNodes``), and if the record does not fit even without verdicts, the
    preemption's candidate lists go too. Verdicts past the limit are never read: a failed
    attempt on 5000 nodes must not cost 5000 verdicts for an annotation that keeps a few hundred.
    """
    head = record.as_dict(with_nodes=False)
    verdicts = record.nodes
    packed = _pack(verdicts, max_bytes - len(_dumps(_with_verdicts(head))))
    if packed.held == len(verdicts):
        return _dumps(_with_verdicts(head, packed)).decode()

    preemption = head.get("preemption")
    if isinstance(preemption, dict):
        head["preemption"] = {k: v for k, v in preemption.items() if k != "node_statuses"}
    head["truncatedNodes"] = len(verdicts)
    packed = _pack(verdicts, max_bytes - len(_dumps(_with_verdicts(head))))
    head["truncatedNodes"] = len(verdicts) - packed.held
    text = _dumps(_with_verdicts(head, packed))
    if len(text) > max_bytes and isinstance(head.get("preemption"), dict):
        head["preemption"] = {
            k: v for k, v in head["preemption"].items() if k not in ("candidates", "pdb_rejected")
        }
        text = _dumps(_with_verdicts(head, packed))
    return text.decode()


def stored_verdicts(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-node verdicts of a stored record, as :meth:`NodeVerdict.as_dict` gives them.

    A group of rejected nodes becomes one verdict per node; a record written before the groups
    keeps its rejected nodes in ``nodes``, and those are taken as they are.
    """
    expanded: list[dict[str, Any]] = []
    for group in record.get("rejected") or ():
        shared = {k: v for k, v in group.items() if k != "nodes"}
        expanded.extend({"node": node, "feasible": False, **shared} for node in group["nodes"])
    return expanded + list(record["nodes"])


def _gist(record: AttemptRecord) -> int:
    """What ``record`` says, for the repeat check: its result, its message with the numbers
    taken out, and its preemption's outcome, nominated node and victims."""
    preemption = record.preemption
    outcome = None
    if preemption is not None:
        outcome = (
            preemption.get("outcome"),
            preemption.get("nominated_node"),
            preemption.get("victims"),
        )
    return hash((record.result, _NUMBERS.sub("#", record.message), outcome))


class ExplanationRecorder:
    """Receives every attempt record and writes the ones the configuration asks for."""

    def __init__(
        self,
        settings: Explanations,
        writer: AnnotationWriter,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        get_pod: Callable[[str], RecordedPod | None],
    ) -> None:
        self.settings = settings
        self._writer = writer
        self._spawn = spawn
        self._get_pod = get_pod
        self._sent: cachetools.LRUCache[str, _Sent] = cachetools.LRUCache(maxsize=REMEMBERED_PODS)
        """By pod UID: the last record sent, in a patch or a write of its own."""

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
        fingerprint = _gist(record)
        last = self._sent.get(pod.uid)
        if (
            last is not None
            and last.gist == fingerprint
            and record.time - last.time < REFRESH_SECONDS
            and (
                pod.resource_version == last.resource_version
                or hash(pod.explanation) == last.text_hash
            )
        ):
            return
        text = encode_record(record, self.settings.max_bytes)
        self._sent[pod.uid] = _Sent(fingerprint, record.time, hash(text), pod.resource_version)
        if record.status_patch is not None:
            record.status_patch.annotations[ANNOTATION] = text
        else:
            self._spawn(self._write(pod, text))

    async def _write(self, pod: PodRef, text: str) -> None:
        try:
            await self._writer.annotate(pod, {ANNOTATION: text})
        except ApiError as error:
            logger.warning("explanation_not_stored", pod=pod.key, reason=str(error))
            self._sent.pop(pod.uid, None)  # due again at the next attempt
