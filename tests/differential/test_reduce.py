"""Reduction: what goes together, what is pruned, and the greedy search on a stand-in player."""

from __future__ import annotations

from differential.campaign import ScenarioResult
from differential.generator import claim, local_volume, node, node_selector_term, pod
from differential.generator import priority_class as catalogue_class
from differential.generator import storage_class as catalogue_storage
from differential.normalise import ASPECTS, Outcome
from differential.reduce import prune, reduce, removal_units
from differential.scenario import Scenario, Wave, name_of

from tests.differential.test_scenario import attachment, csi_node


def with_claim(manifest: dict, claim_name: str) -> dict:  # type: ignore[type-arg]
    manifest["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
    ]
    return manifest


def scenario() -> Scenario:
    """node-0 runs r01 (RWOP claim rwop-1 on pv-rwop-1); node-1 runs r02; p01 shares rwop-1,
    p02 has its own claim data-p02; pv-9 is a free PV pinned to node-1."""
    r01 = with_claim(pod("r01-db", "db", 500, grace=1), "rwop-1")
    r01["spec"]["nodeName"] = "node-0"
    r02 = pod("r02-web", "web", 500, grace=1)
    r02["spec"]["nodeName"] = "node-1"
    r02["spec"]["priorityClassName"] = "diff-p10"
    bound = claim("rwop-1", 1, access_mode="ReadWriteOncePod", class_name="")
    bound["spec"]["volumeName"] = "pv-rwop-1"
    rwop_volume = local_volume(
        "pv-rwop-1",
        1,
        node_selector_term("kubernetes.io/hostname", ["node-0"]),
        access_mode="ReadWriteOncePod",
        class_name="",
        labels={},
    )
    rwop_volume["spec"]["claimRef"] = {"name": "rwop-1"}
    free = local_volume(
        "pv-9",
        5,
        node_selector_term("kubernetes.io/hostname", ["node-1"]),
        access_mode="ReadWriteOnce",
        class_name="diff-wffc",
        labels={},
    )
    return Scenario(
        name="reduce-me",
        priority_classes=[catalogue_class("diff-p10"), catalogue_class("diff-p200")],
        storage_classes=[catalogue_storage("diff-wffc"), catalogue_storage("diff-immediate")],
        nodes=[node("node-0", "zone-a", 4, 8, 110, {}), node("node-1", "zone-b", 2, 8, 110, {})],
        volumes=[rwop_volume, free],
        claims=[bound],
        running=[r01, r02],
        waves=[
            Wave(
                0.0,
                pods=[
                    with_claim(pod("p01-db", "db", 500, grace=1), "rwop-1"),
                    with_claim(pod("p02-web", "web", 500, grace=1), "data-p02"),
                ],
                claims=[claim("data-p02", 2, access_mode="ReadWriteOnce", class_name="diff-wffc")],
            )
        ],
    )


def test_removal_units_keep_claims_others_still_use() -> None:
    units = removal_units(scenario())
    assert units[0] == [("Pod", "p02-web"), ("PersistentVolumeClaim", "data-p02")]
    assert units[1] == [("Pod", "p01-db")]  # r01-db still mounts rwop-1
    assert units[2] == [("Pod", "r02-web")]
    assert units[3] == [("Pod", "r01-db")]  # p01-db still mounts rwop-1


def test_a_node_goes_with_its_pods_and_the_volumes_pinned_to_it() -> None:
    units = removal_units(scenario())
    assert units[-1] == [("Node", "node-0"), ("Pod", "r01-db")]
    assert units[-2] == [("Node", "node-1"), ("Pod", "r02-web"), ("PersistentVolume", "pv-9")]


def test_prune_drops_what_nothing_names() -> None:
    pruned = prune(scenario())
    assert [name_of(c) for c in pruned.priority_classes] == ["diff-p10"]
    assert [name_of(c) for c in pruned.storage_classes] == ["diff-wffc"]
    assert [name_of(v) for v in pruned.volumes] == ["pv-rwop-1", "pv-9"]


def attached() -> Scenario:
    """scenario() with CSINodes for both nodes, pv-9 attached to node-1 and (a stale
    attachment) to node-0, pv-rwop-1 to node-0, and pv-spare (of a class no claim uses, claimed
    by none) attached to node-0."""
    attached = scenario()
    attached.csi_nodes = [csi_node("node-0"), csi_node("node-1")]
    spare = local_volume(
        "pv-spare",
        1,
        node_selector_term("kubernetes.io/hostname", ["node-0", "node-1"]),
        access_mode="ReadWriteOnce",
        class_name="diff-immediate",
        labels={},
    )
    attached.volumes.append(spare)
    attached.attachments = [
        attachment("va-9", "node-1", "pv-9"),
        attachment("va-9-stale", "node-0", "pv-9"),
        attachment("va-rwop", "node-0", "pv-rwop-1"),
        attachment("va-spare", "node-0", "pv-spare"),
    ]
    return attached


def test_a_node_or_a_volume_goes_with_its_csi_node_and_attachments() -> None:
    units = removal_units(attached())
    # node-1's unit takes pv-9 (pinned to it), so also pv-9's attachment on node-0.
    assert units[-2][-3:] == [
        ("CSINode", "node-1"),
        ("VolumeAttachment", "va-9"),
        ("VolumeAttachment", "va-9-stale"),
    ]
    assert units[-1][-4:] == [
        ("CSINode", "node-0"),
        ("VolumeAttachment", "va-9-stale"),
        ("VolumeAttachment", "va-rwop"),
        ("VolumeAttachment", "va-spare"),
    ]
    assert units[0] == [("Pod", "p02-web"), ("PersistentVolumeClaim", "data-p02")]


def test_prune_keeps_an_attached_volume_and_its_class() -> None:
    pruned = prune(attached())
    assert [name_of(v) for v in pruned.volumes] == ["pv-rwop-1", "pv-9", "pv-spare"]
    assert [name_of(c) for c in pruned.storage_classes] == ["diff-wffc", "diff-immediate"]


def _result(candidate: Scenario, divergent: bool) -> ScenarioResult:
    upstream: Outcome = {aspect: {} for aspect in ASPECTS}
    ours: Outcome = {aspect: {} for aspect in ASPECTS}
    if divergent:
        ours["victims"] = {"r01-db": "deleted"}
    return ScenarioResult(candidate, upstream=[upstream, upstream], ours=[ours, ours])


def test_reduce_keeps_only_what_the_divergence_needs() -> None:
    """The stand-in divergence needs p01-db and r01-db: everything else goes."""

    def play(candidate: Scenario) -> ScenarioResult:
        names = set(candidate.pod_names())
        return _result(candidate, {"p01-db", "r01-db"} <= names)

    said: list[str] = []
    best = reduce(_result(scenario(), True), {"victims"}, play, say=said.append)
    assert best.scenario.pod_names() == ["r01-db", "p01-db"]
    assert [name_of(n) for n in best.scenario.nodes] == ["node-0"]
    assert [name_of(c) for c in best.scenario.all_claims()] == ["rwop-1"]
    assert [name_of(v) for v in best.scenario.volumes] == ["pv-rwop-1"]
    assert best.scenario.priority_classes == []
    assert any("needed" in line for line in said)


def test_reduce_stops_at_its_budget() -> None:
    trials: list[Scenario] = []

    def play(candidate: Scenario) -> ScenarioResult:
        trials.append(candidate)
        return _result(candidate, True)

    reduce(_result(scenario(), True), {"victims"}, play, budget=2, say=lambda _: None)
    assert len(trials) == 3  # two trials and the pruned scenario
