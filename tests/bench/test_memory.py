"""``python -m bench memory``: the scheduler's live objects, by what they hold."""

from __future__ import annotations

from bench.scenarios import Group, Scenario

from bench import memory

TINY = Scenario(
    "S1", "SchedulingBasic/10Nodes", 10, (Group("default", 5),), (Group("default", 20),)
)


def test_every_pod_and_node_is_counted_once_in_its_own_categories() -> None:
    result = memory.run(TINY)
    rows = {row["category"]: row for row in result["rows"]}
    assert list(rows)[:4] == [
        "pods: API objects as received",
        "pods: parsed models",
        "nodes: API objects as received",
        "nodes: parsed models and NodeInfo",
    ]
    assert result["pods"] == 20
    # 25 pods (init and measured) each keep a JSON tree of a few hundred bytes at least; their
    # parsed models are counted apart from the trees.
    assert rows["pods: API objects as received"]["bytes_per_pod"] > 300
    assert rows["pods: API objects as received"]["bytes"] > 25 * 300
    assert 0 < rows["pods: parsed models"]["bytes"] < 25 * 10_000
    assert rows["nodes: API objects as received"]["bytes_per_node"] > 300
    assert result["counted_mib"] < result["rss_mb"]
    assert "| pods: parsed models |" in memory.render(result)
