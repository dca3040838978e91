"""Filling by waves gives the one-by-one count, and is left alone where copies interact."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.sim import capacity as capacity_module
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.capacity import CapacityResult, count_copies
from kopf_scheduler.sim.capacity_fill import admitted_copy, wave_obstacle
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import load_scenario
from kopf_scheduler.sim.templates import load_template
from tests.sim.support import SCHEDULER, node, pod, write_yaml

Raw = dict[str, Any]


def _uneven_cluster(seed: int) -> list[Raw]:
    """Nodes of three sizes, some tainted or labelled, partly filled with running pods."""
    rng = random.Random(seed)
    docs: list[Raw] = []
    for index in range(24):
        name = f"n{index:02d}"
        taints = [{"key": "gpu", "effect": "NoSchedule"}] if index % 7 == 0 else []
        docs.append(
            node(
                name,
                cpu=rng.choice(["4", "8", "16"]),
                memory=rng.choice(["8Gi", "16Gi", "32Gi"]),
                pods=rng.choice(["5", "110"]),
                labels={"disk": "ssd" if index % 3 else "hdd"},
                taints=taints,
            )
        )
        for number in range(rng.randrange(4)):
            docs.append(
                pod(
                    f"busy-{name}-{number}",
                    cpu=rng.choice(["500m", "1", "2"]),
                    memory=rng.choice(["512Mi", "2Gi"]),
                    node_name=name,
                )
            )
    return docs


def _count(tmp_path: Path, cluster: list[Raw], template: Raw, **options: Any) -> CapacityResult:
    scenario = load_scenario([write_yaml(tmp_path / "cluster.yaml", cluster)])
    loaded = load_template(write_yaml(tmp_path / "template.yaml", [template]))
    return sim_loop.run(count_copies(default_config(), scenario, [loaded], **options))


def _waves_placed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many copies each count placed by waves."""
    placed: list[int] = []
    fill = capacity_module.fill_by_waves

    def recording(*args: Any, **kwargs: Any) -> int:
        placed.append(fill(*args, **kwargs))
        return placed[-1]

    monkeypatch.setattr(capacity_module, "fill_by_waves", recording)
    return placed


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "template",
    [
        pod("web", cpu="1", memory="1Gi", scheduler=None),
        pod("ssd", cpu="500m", memory="3Gi", scheduler=None, node_selector={"disk": "ssd"}),
        pod(
            "tolerant",
            cpu="2",
            scheduler=None,
            tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        ),
    ],
    ids=["plain", "node-selector", "toleration"],
)
def test_waves_end_where_one_by_one_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, template: Raw
) -> None:
    cluster = _uneven_cluster(seed)
    # The node matrix needs every copy's attempt, so that count goes one by one.
    one_by_one = _count(tmp_path, cluster, template, matrix=True)
    placed = _waves_placed(monkeypatch)
    waves = _count(tmp_path, cluster, template)

    assert placed == [one_by_one.total] and one_by_one.total > 0
    assert waves.total == one_by_one.total
    assert waves.counts[0].nodes == one_by_one.counts[0].nodes
    assert waves.stop_type == one_by_one.stop_type
    assert waves.stop_message == one_by_one.stop_message
    assert waves.counts[0].fail_summary == one_by_one.counts[0].fail_summary


def test_copies_that_repel_each_other_go_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = pod("single", cpu="100m", labels={"app": "single"}, scheduler=None)
    template["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "single"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    placed = _waves_placed(monkeypatch)
    result = _count(tmp_path, [node("a"), node("b"), node("c")], template)
    assert placed == []
    assert result.total == 3
    assert dict(result.counts[0].nodes) == {"a": 1, "b": 1, "c": 1}


def _obstacle(template: Raw, pending: list[Raw] | None = None, *, preemption: bool = False) -> str:
    simulation = Simulation(default_config())
    framework = simulation.start().profiles[SCHEDULER]
    copy_pod = admitted_copy(template, simulation.cluster.priority_classes)
    waiting = [Pod(raw) for raw in pending or []]
    return wave_obstacle(framework, copy_pod, waiting, preemption=preemption)


def _with_spec(**spec: Any) -> Raw:
    template = pod("copy", cpu="1", labels={"app": "copy"}, scheduler=SCHEDULER)
    template["spec"].update(spec)
    return template


def test_a_plain_template_has_no_obstacle() -> None:
    volumes = [{"name": "conf", "configMap": {"name": "conf"}}, {"name": "tmp", "emptyDir": {}}]
    assert _obstacle(_with_spec(volumes=volumes)) == ""


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "copy"}},
                    }
                ]
            },
            "the template spreads with DoNotSchedule",
        ),
        (
            {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
            "the template's volume 'data' is one plugins account for",
        ),
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]},
            "the template claims devices",
        ),
    ],
    ids=["hard-spread", "claim-volume", "device-claim"],
)
def test_templates_whose_copies_interact_have_an_obstacle(spec: Raw, expected: str) -> None:
    assert _obstacle(_with_spec(**spec)) == expected


def test_preemption_is_an_obstacle() -> None:
    assert _obstacle(_with_spec(), preemption=True) == "preemption may evict pods for a copy"


def test_a_pending_pod_a_copy_could_help_is_an_obstacle() -> None:
    waiting = pod("waiting", cpu="1")
    waiting["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "copy"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    assert _obstacle(_with_spec(), [waiting]) == (
        "pending pod default/waiting has pod affinity or spread a copy could satisfy"
    )
