"""Decision records carry what plugins know about the pod beyond the attempt (a gang member's
group), asked for only when the record is read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.framework.runtime import ProfilePlugins
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.scheduler.explain import AttemptRecord, plugin_states
from tests.builders import make_pod


class Explaining:
    name: ClassVar[str] = "Explaining"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def explain_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        self.asked.append(pod.key)
        return {"summary": f"{pod.name} is known", "count": 1}


class Silent:
    name: ClassVar[str] = "Silent"

    def explain_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        return None


class NotExplaining:
    name: ClassVar[str] = "NotExplaining"


def record() -> AttemptRecord:
    return AttemptRecord(
        pod="default/p", profile="default-scheduler", cycle=1, attempt=1, time=0.0, result="x"
    )


def test_only_plugins_with_something_to_say_are_kept() -> None:
    pod = make_pod("p").pod()
    plugins = ProfilePlugins(all=[NotExplaining(), Silent(), Explaining()])
    states = plugin_states(plugins.explaining, pod)
    assert states == {"Explaining": {"summary": "p is known", "count": 1}}


def test_plugins_are_asked_once_and_only_when_the_record_is_read() -> None:
    plugin = Explaining()
    pod = make_pod("p").pod()
    attempt = record()
    attempt.plugin_states = lambda: plugin_states([plugin], pod)
    assert plugin.asked == []
    assert attempt.as_dict(with_nodes=False)["plugins"] == {
        "Explaining": {"summary": "p is known", "count": 1}
    }
    assert attempt.as_dict()["plugins"]["Explaining"]["count"] == 1
    assert plugin.asked == ["default/p"]


def test_a_record_without_plugin_states_has_no_plugins_field() -> None:
    assert "plugins" not in record().as_dict()
