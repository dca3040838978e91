"""Shrink a scenario that shows a divergence to one that still shows it, to keep as a case.

Greedy, one unit at a time: a pending pod, a running pod, a PDB, or a node with everything
pinned to it; a pod goes with the claims only it uses, a claim with the PV bound to it, a node
with its CSINode, and a node or a PV with their VolumeAttachments.
A unit stays removed when the smaller scenario still shows a true divergence in one of the
aspects asked for (upstream agreeing with itself in every run); afterwards the classes and
volumes nothing refers to any more go too. Every trial is a full play (at least two runs
of each scheduler), so a budget bounds the number of trials.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from .campaign import ScenarioResult
from .compare import Verdict
from .scenario import Raw, Scenario, ScenarioError, check, name_of, without

Unit = list[tuple[str, str]]
"""(kind, name) of the objects removed together."""


def _claims_of(pod: Raw) -> list[str]:
    return [
        str(volume["persistentVolumeClaim"]["claimName"])
        for volume in (pod.get("spec") or {}).get("volumes") or []
        if volume.get("persistentVolumeClaim")
    ]


def _volume_affinity_hosts(volume: Raw) -> set[str]:
    hosts: set[str] = set()
    affinity = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == "kubernetes.io/hostname":
                hosts.update(expression.get("values") or [])
    return hosts


def _claim_unit(scenario: Scenario, claims: Collection[str], users: Collection[str]) -> Unit:
    """The claims only ``users`` use, and the PVs bound to them."""
    others = [pod for pod in [*scenario.running, *scenario.pending()] if name_of(pod) not in users]
    still_used = {claim for pod in others for claim in _claims_of(pod)}
    unit: Unit = []
    for claim in scenario.all_claims():
        name = name_of(claim)
        if name in claims and name not in still_used:
            unit.append(("PersistentVolumeClaim", name))
            bound = (claim.get("spec") or {}).get("volumeName")
            if bound:
                unit.append(("PersistentVolume", str(bound)))
    return unit


def _with_dependants(scenario: Scenario, unit: Unit) -> Unit:
    """``unit`` plus the CSINodes of its nodes and the attachments of its nodes and PVs."""
    nodes = {name for kind, name in unit if kind == "Node"}
    volumes = {name for kind, name in unit if kind == "PersistentVolume"}
    extra: Unit = [("CSINode", name_of(c)) for c in scenario.csi_nodes if name_of(c) in nodes]
    for attachment in scenario.attachments:
        spec = attachment.get("spec") or {}
        if (
            spec.get("nodeName") in nodes
            or (spec.get("source") or {}).get("persistentVolumeName") in volumes
        ):
            extra.append(("VolumeAttachment", name_of(attachment)))
    return [*unit, *extra]


def removal_units(scenario: Scenario) -> list[Unit]:
    """What :func:`reduce` tries to remove, the later arrivals first, nodes last."""
    return [_with_dependants(scenario, unit) for unit in _primary_units(scenario)]


def _primary_units(scenario: Scenario) -> list[Unit]:
    units: list[Unit] = []
    for pod in [*reversed(scenario.pending()), *reversed(scenario.running)]:
        name = name_of(pod)
        units.append([("Pod", name), *_claim_unit(scenario, _claims_of(pod), {name})])
    units.extend([("PodDisruptionBudget", name_of(pdb))] for pdb in scenario.pdbs)
    for node in reversed(scenario.nodes):
        host = name_of(node)
        pods = [name_of(p) for p in scenario.running if p["spec"].get("nodeName") == host]
        claims = {
            claim
            for pod in scenario.running
            if pod["spec"].get("nodeName") == host
            for claim in _claims_of(pod)
        }
        unit: Unit = [("Node", host), *(("Pod", name) for name in pods)]
        unit += _claim_unit(scenario, claims, set(pods))
        removed_claims = {name for kind, name in unit if kind == "PersistentVolumeClaim"}
        unit += [
            ("PersistentVolume", name_of(v))
            for v in scenario.volumes
            if _volume_affinity_hosts(v) == {host}
            and ("PersistentVolume", name_of(v)) not in unit
            and ((v.get("spec") or {}).get("claimRef") or {}).get("name", "")
            in {"", *removed_claims}
        ]
        units.append(unit)
    return units


def prune(scenario: Scenario) -> Scenario:
    """Drop classes nothing names and PVs neither pinned to a claim, nor of a class in use,
    nor attached to a node."""
    pods = [*scenario.running, *scenario.pending()]
    attached = {
        ((a.get("spec") or {}).get("source") or {}).get("persistentVolumeName")
        for a in scenario.attachments
    }
    used_priorities = {p["spec"].get("priorityClassName") for p in pods}
    claims = scenario.all_claims()
    used_storage = {(o.get("spec") or {}).get("storageClassName") for o in claims}
    names: Unit = [
        ("PriorityClass", name_of(c))
        for c in scenario.priority_classes
        if name_of(c) not in used_priorities
    ]
    names += [
        ("PersistentVolume", name_of(v))
        for v in scenario.volumes
        if not (v.get("spec") or {}).get("claimRef")
        and (v.get("spec") or {}).get("storageClassName") not in used_storage
        and name_of(v) not in attached
    ]
    volumes_left = {
        (v.get("spec") or {}).get("storageClassName")
        for v in scenario.volumes
        if ("PersistentVolume", name_of(v)) not in names
    }
    names += [
        ("StorageClass", name_of(c))
        for c in scenario.storage_classes
        if name_of(c) not in used_storage | volumes_left
    ]
    return without(scenario, names)


def _playable(scenario: Scenario) -> bool:
    if not scenario.nodes or not scenario.pending():
        return False
    try:
        check(scenario)
    except ScenarioError:
        return False
    return True


def shows(result: ScenarioResult, aspects: Collection[str]) -> bool:
    """A true divergence in one of ``aspects``, confirmed by reruns of both schedulers."""
    if result.error is not None or len(result.upstream) < 2 or len(result.ours) < 2:
        return False
    return any(r.aspect in aspects for r in result.comparison.of(Verdict.DIVERGENCE))


def reduce(
    original: ScenarioResult,
    aspects: Collection[str],
    play: Callable[[Scenario], ScenarioResult],
    *,
    budget: int = 40,
    say: Callable[[str], Any] = print,
) -> ScenarioResult:
    """The smallest scenario found that still :func:`shows` the divergence, with its result."""
    if not shows(original, aspects):
        raise ValueError(
            f"{original.scenario.name} shows no confirmed divergence in {sorted(aspects)}"
        )
    best = original
    needed: set[tuple[str, str]] = set()
    """Heads of the units whose removal made the divergence go away."""
    trials = 0
    while trials < budget:
        candidate = None
        for unit in removal_units(best.scenario):
            if unit[0] in needed:
                continue
            trial = without(best.scenario, unit)
            if _playable(trial):
                candidate = (unit, trial)
                break
            needed.add(unit[0])
        if candidate is None:
            break
        unit, trial = candidate
        trials += 1
        result = play(trial)
        if shows(result, aspects):
            say(f"reduce: trial {trials}: without {unit[0][0]} {unit[0][1]}: still divergent")
            best = result
        else:
            say(f"reduce: trial {trials}: without {unit[0][0]} {unit[0][1]}: needed")
            needed.add(unit[0])
    pruned = prune(best.scenario)
    if pruned != best.scenario:
        result = play(pruned)
        if shows(result, aspects):
            best = result
    return best
