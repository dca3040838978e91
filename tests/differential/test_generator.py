"""The scenario generator: the same scenario for the same seed, valid objects, small sizes.

Every generated object is read back through the scheduler's own views (the scenario check
does that), so a manifest the scheduler would reject fails here rather than on a cluster.
"""

from __future__ import annotations

from typing import Any

import pytest
from differential.generator import PRIORITY_CLASSES, PROFILES, generate
from differential.scenario import Wave, check, dump, from_document, name_of, to_document

SEEDS = range(1, 61)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_same_seed_gives_the_same_scenario(profile: str) -> None:
    for seed in (1, 7, 50):
        assert dump(generate(seed, profile)) == dump(generate(seed, profile))


@pytest.mark.parametrize("profile", PROFILES)
def test_seeds_give_different_scenarios(profile: str) -> None:
    dumps = {dump(generate(seed, profile)) for seed in range(1, 21)}
    assert len(dumps) == 20


@pytest.mark.parametrize("profile", PROFILES)
def test_scenarios_are_valid_and_survive_their_file_format(profile: str) -> None:
    for seed in SEEDS:
        scenario = generate(seed, profile)
        check(scenario)
        document = to_document(scenario)
        assert to_document(from_document(document)) == document


SMALL = [p for p in PROFILES if p != "preemption-wide"]


@pytest.mark.parametrize("profile", SMALL)
def test_scenarios_stay_small(profile: str) -> None:
    for seed in SEEDS:
        scenario = generate(seed, profile)
        assert 3 <= len(scenario.nodes) <= 5
        assert len(scenario.running) <= 15
        assert 1 <= len(scenario.pending()) <= 8
        assert len(scenario.waves) <= 3


def test_wide_scenarios_have_more_nodes_and_waves_but_stay_bounded() -> None:
    for seed in SEEDS:
        scenario = generate(seed, "preemption-wide")
        assert 6 <= len(scenario.nodes) <= 8
        assert len(scenario.running) <= 24
        assert 6 <= len(scenario.pending()) <= 10
        assert 3 <= len(scenario.waves) <= 4


def _is_plain_with_memory(pod: dict[str, Any]) -> bool:
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    return not pod["spec"].get("priorityClassName") and "memory" in requests


def _preemptors(wave: Wave) -> int:
    """Pods of the wave that may preempt the running pods (priority 100 or more, not Never)."""
    classes = [PRIORITY_CLASSES.get(pod["spec"].get("priorityClassName", "")) for pod in wave.pods]
    return sum(
        1
        for found in classes
        if found is not None and found[0] >= 100 and found[1] == "PreemptLowerPriority"
    )


def test_wide_scenarios_put_plain_pods_with_memory_in_waves_of_several_preemptors() -> None:
    """The shape a wide scenario exists for: a pod without priority class that asks for memory,
    arriving in the same wave as two or more pods that may preempt."""
    shaped = [
        seed
        for seed in SEEDS
        if any(
            _preemptors(wave) >= 2 and any(_is_plain_with_memory(pod) for pod in wave.pods)
            for wave in generate(seed, "preemption-wide").waves
        )
    ]
    assert len(shaped) >= 5


@pytest.mark.parametrize("profile", PROFILES)
def test_node_sizes_never_repeat_in_a_scenario(profile: str) -> None:
    for seed in SEEDS:
        cpus = [node["status"]["capacity"]["cpu"] for node in generate(seed, profile).nodes]
        assert len(set(cpus)) == len(cpus)


@pytest.mark.parametrize("profile", PROFILES)
def test_running_pods_fit_their_nodes(profile: str) -> None:
    for seed in SEEDS:
        scenario = generate(seed, profile)
        capacity = {
            name_of(node): int(node["status"]["allocatable"]["cpu"]) * 1000
            for node in scenario.nodes
        }
        used: dict[str, int] = {}
        for pod in scenario.running:
            cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            node = pod["spec"]["nodeName"]
            used[node] = used.get(node, 0) + int(cpu.removesuffix("m"))
        assert all(used[node] <= capacity[node] for node in used)


@pytest.mark.parametrize("profile", PROFILES)
def test_only_a_backlog_arrives_all_at_once(profile: str) -> None:
    for seed in SEEDS:
        for wave in generate(seed, profile).waves:
            assert (wave.gap_seconds == 0) is wave.backlog


def test_priority_classes_come_from_the_shared_catalogue() -> None:
    for profile in PROFILES:
        for seed in SEEDS:
            for item in generate(seed, profile).priority_classes:
                value, policy = PRIORITY_CLASSES[name_of(item)]
                assert (item["value"], item["preemptionPolicy"]) == (value, policy)


def _features(profile: str) -> set[str]:
    seen: set[str] = set()
    for seed in SEEDS:
        scenario = generate(seed, profile)
        for pod in scenario.pending():
            spec = pod["spec"]
            affinity = spec.get("affinity") or {}
            seen.update(affinity)
            seen.update(key for key in ("topologySpreadConstraints", "tolerations") if key in spec)
            if spec.get("nodeSelector"):
                seen.add("nodeSelector")
            if spec.get("volumes"):
                seen.add("volumes")
            if "ports" in spec["containers"][0]:
                seen.add("hostPort")
            if spec.get("priorityClassName", "").endswith("never"):
                seen.add("never")
        if scenario.pdbs:
            seen.add("pdb")
        if scenario.waves[0].backlog:
            seen.add("backlog")
        if any(v["spec"]["accessModes"] == ["ReadWriteOncePod"] for v in scenario.volumes):
            seen.add("rwop")
        if any(n["spec"].get("taints") for n in scenario.nodes):
            seen.add("taints")
    return seen


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        pytest.param(
            "mixed",
            {
                "nodeAffinity",
                "podAffinity",
                "podAntiAffinity",
                "topologySpreadConstraints",
                "tolerations",
                "nodeSelector",
                "volumes",
                "hostPort",
                "never",
                "pdb",
                "rwop",
                "taints",
                "backlog",
            },
            id="mixed",
        ),
        pytest.param(
            "preemption",
            {
                "podAntiAffinity",
                "topologySpreadConstraints",
                "volumes",
                "never",
                "pdb",
                "rwop",
                "backlog",
            },
            id="preemption",
        ),
        pytest.param(
            "preemption-wide",
            {"podAntiAffinity", "topologySpreadConstraints", "never", "pdb", "backlog"},
            id="preemption-wide",
        ),
    ],
)
def test_profiles_cover_their_features(profile: str, expected: set[str]) -> None:
    assert expected <= _features(profile)


def test_an_unknown_profile_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown profile 'gpu'; profiles: mixed, preemption"):
        generate(1, "gpu")
