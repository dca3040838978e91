"""The term census counts each distinct affinity term of the pods on a node, and a row replaced
because one pod came or went is recounted without keying the terms of the pods it still holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.node_columns import term_census
from kopf_scheduler.framework.node_columns.term_census import Role, TermCensus
from kopf_scheduler.framework.node_columns.value_keys import term_key
from kopf_scheduler.model.pod import Pod
from tests.builders import make_node, make_pod


def _anti_affinity(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod(name: str, app: str) -> Pod:
    return Pod(make_pod(name).uid(name).node("n1").affinity(_anti_affinity(app)).obj())


class _Mirror:
    """The one row of a mirror the census reads: its NodeInfo, replaced at will."""

    def __init__(self, info: NodeInfo) -> None:
        self.infos = [info]
        self.size = 1
        self.listeners: list[TermCensus] = []

    def subscribe(self, listener: TermCensus) -> None:
        self.listeners.append(listener)

    def replace(self, info: NodeInfo) -> None:
        self.infos[0] = info
        for listener in self.listeners:
            listener.rows_replaced([0])


def _counts(census: TermCensus) -> dict[str, int]:
    found: dict[str, int] = {}
    for entry in census.entries([Role.REQUIRED_ANTI_AFFINITY]):
        app = entry.term.selector.match_labels["app"]
        found[app] = entry.occurrences.get(0, 0)
    return found


def test_a_recount_keys_only_the_pods_new_to_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    node = make_node("n1").node()
    pods: Sequence[Pod] = [_pod(f"web-{index}", "web") for index in range(5)]
    mirror = _Mirror(NodeInfo(node, tuple(pods)))
    census = TermCensus(mirror)  # type: ignore[arg-type]
    assert _counts(census) == {"web": 5}

    keyed: list[str] = []

    def counted(term: Any) -> Any:
        keyed.append(term.selector.match_labels["app"])
        return term_key(term)

    monkeypatch.setattr(term_census, "term_key", counted)
    mirror.replace(NodeInfo(node, (*pods, _pod("db-0", "db"))))
    assert _counts(census) == {"web": 5, "db": 1}
    assert keyed == ["db"]

    keyed.clear()
    mirror.replace(NodeInfo(node, (*pods[1:], _pod("db-0", "db"))))
    assert _counts(census) == {"web": 4, "db": 1}
    assert keyed == ["db"]  # a new object for db-0: keyed again

    keyed.clear()
    mirror.replace(NodeInfo(node, ()))
    assert _counts(census) == {}
    assert keyed == []
