"""Storage objects as a scenario file holds them, and a runner that can watch the cluster.

The builders return plain dictionaries without UIDs or resourceVersions, as a user writes them;
the in-memory cluster assigns both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import load_scenario
from tests.sim.support import write_yaml

Raw = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def storage_class(
    name: str,
    *,
    provisioner: str = "kubernetes.io/no-provisioner",
    wait_for_first_consumer: bool = False,
    zones: Sequence[str] = (),
    default: bool = False,
) -> Raw:
    raw: Raw = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait_for_first_consumer else "Immediate",
    }
    if zones:
        raw["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}
        ]
    if default:
        raw["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return raw


def volume(
    name: str,
    *,
    storage_class_name: str = "local",
    size: str = "10Gi",
    node: str | None = None,
    zone: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    claim: str | None = None,
    reclaim: str | None = None,
) -> Raw:
    """A static PV: local (pinned to ``node``) or a CSI disk (labelled with ``zone``)."""
    spec: Raw = {
        "storageClassName": storage_class_name,
        "capacity": {"storage": size},
        "accessModes": list(modes),
    }
    metadata: Raw = {"name": name}
    if node is not None:
        spec["local"] = {"path": f"/mnt/{name}"}
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                ]
            }
        }
    else:
        spec["csi"] = {"driver": "disk.csi.example.com", "volumeHandle": name}
    if zone is not None:
        metadata["labels"] = {ZONE: zone}
    if claim is not None:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    if reclaim is not None:
        spec["persistentVolumeReclaimPolicy"] = reclaim
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": metadata, "spec": spec}


def claim(
    name: str,
    *,
    storage_class_name: str | None = "local",
    size: str = "5Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume_name: str | None = None,
) -> Raw:
    """A claim; ``storage_class_name=None`` leaves the class out (the default class applies)."""
    spec: Raw = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    if volume_name is not None:
        spec["volumeName"] = volume_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def with_claims(pod: Raw, *claim_names: str) -> Raw:
    """The pod with one ``persistentVolumeClaim`` volume per claim (named after the claim)."""
    volumes = pod["spec"].setdefault("volumes", [])
    volumes.extend({"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claim_names)
    return pod


def with_ephemeral(pod: Raw, volume_name: str, storage_class_name: str, size: str = "1Gi") -> Raw:
    """The pod with a generic ephemeral volume (its claim will be ``<pod>-<volume>``)."""
    template = {
        "metadata": {"labels": {"purpose": "scratch"}},
        "spec": {
            "storageClassName": storage_class_name,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
        },
    }
    pod["spec"].setdefault("volumes", []).append(
        {"name": volume_name, "ephemeral": {"volumeClaimTemplate": template}}
    )
    return pod


def simulate_volumes(
    tmp_path: Path,
    docs: Iterable[Mapping[str, Any]],
    *,
    seed: int = 0,
    watched: list[tuple[str, str, str]] | None = None,
) -> SimulationResult:
    """Run the scenario; ``watched`` collects every change as (kind, event type, name)."""
    scenario = load_scenario([write_yaml(tmp_path / "scenario.yaml", docs)])
    simulation = Simulation(default_config(), seed=seed)
    if watched is not None:
        simulation.cluster.subscribe(
            lambda kind, event_type, raw: watched.append(
                (kind, event_type, raw["metadata"]["name"])
            )
        )
    return sim_loop.run(simulation.run(scenario))


def stored(result: SimulationResult, kind: str, key: str) -> Raw:
    return result.cluster.storage[kind][key]


def annotations_of(raw: Mapping[str, Any]) -> dict[str, str]:
    return dict((raw.get("metadata") or {}).get("annotations") or {})
