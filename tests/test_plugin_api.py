"""``plugin_api`` is the one door plugin authors use: every name it offers resolves, and the
example plugin needs nothing from the scheduler beside it and the model."""

from __future__ import annotations

import ast
from pathlib import Path

from kopf_scheduler import plugin_api

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plugins"


def test_every_name_offered_resolves() -> None:
    missing = [name for name in plugin_api.__all__ if not hasattr(plugin_api, name)]
    assert missing == []
    assert len(set(plugin_api.__all__)) == len(plugin_api.__all__)


def _scheduler_imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "kopf_scheduler":
            modules.update(f"kopf_scheduler.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return {module for module in modules if module.split(".")[0] == "kopf_scheduler"}


def test_the_example_plugin_imports_the_scheduler_through_plugin_api_and_the_model() -> None:
    sources = sorted(EXAMPLES.glob("*/*.py"))
    assert sources
    for source in sources:
        for module in _scheduler_imports(source):
            assert module == "kopf_scheduler.plugin_api" or module.startswith(
                "kopf_scheduler.model."
            ), f"{source.name} imports {module}"


class _CountsPods(plugin_api.CountingPreFilterExtensions):
    def __init__(self) -> None:
        self.counted: list[tuple[str, int]] = []

    def count_pod(
        self,
        state: plugin_api.CycleState,
        pod: plugin_api.Pod,
        other: plugin_api.Pod,
        node_info: plugin_api.NodeInfo,
        delta: int,
    ) -> plugin_api.Status:
        self.counted.append((other.name, delta))
        return plugin_api.SUCCESS


def test_counting_extensions_count_an_added_pod_in_and_a_removed_pod_out() -> None:
    plugin = _CountsPods()
    extensions = plugin.pre_filter_extensions()
    assert extensions is plugin
    state = plugin_api.CycleState()
    incoming = plugin_api.Pod({"metadata": {"name": "incoming", "uid": "u1"}, "spec": {}})
    victim = plugin_api.Pod({"metadata": {"name": "victim", "uid": "u2"}, "spec": {}})
    node_info = plugin_api.NodeInfo()
    assert extensions.add_pod(state, incoming, victim, node_info).is_success()
    assert extensions.remove_pod(state, incoming, victim, node_info).is_success()
    assert plugin.counted == [("victim", 1), ("victim", -1)]
