"""What-if on a live cluster reads the storage objects too, with LIST requests only, so the
answer respects volumes: where a local PV is free, which node a bound PV pins a pod to."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api, ListResult
from kopf_scheduler.model.storage import BIND_COMPLETED_ANNOTATION, BOUND_BY_CONTROLLER_ANNOTATION
from kopf_scheduler.ports import ApiError
from kopf_scheduler.service.whatif import cluster_scenario
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.runner import Simulation
from tests.sim.support import node, pod, write_yaml
from tests.sim.volume_support import claim, storage_class, volume, with_claims

Raw = dict[str, Any]


class ListOnlyApi:
    """Answers LIST requests from fixed collections; it has no way to write anything."""

    def __init__(self, collections: Mapping[str, list[Raw]], forbidden: frozenset[str]) -> None:
        self.collections = collections
        self.forbidden = forbidden
        self.listed: list[str] = []

    async def list(self, path: str, query: Mapping[str, str] | None = None) -> ListResult:
        self.listed.append(path)
        if path in self.forbidden:
            raise ApiError(403, "Forbidden", f"cannot list resource at {path}")
        return ListResult([dict(item) for item in self.collections.get(path, [])], "42")


def _live(raw: Raw, uid: str, version: str) -> Raw:
    """An object as the API server returns it: UID, resourceVersion, managed fields."""
    metadata = raw["metadata"]
    metadata.update(uid=uid, resourceVersion=version, managedFields=[{"manager": "kubectl"}])
    return raw


def _bound_pair() -> tuple[Raw, Raw]:
    """A claim and the local PV on n2 it is bound to, as the PV controller left them."""
    data = _live(claim("data", volume_name="n2-disk"), "uid-data", "7")
    data["metadata"]["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
    data["status"] = {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "10Gi"},
    }
    disk = _live(volume("n2-disk", node="n2", claim="data"), "uid-disk", "8")
    disk["spec"]["claimRef"].update(uid="uid-data", kind="PersistentVolumeClaim")
    disk["metadata"]["annotations"] = {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
    disk["status"] = {"phase": "Bound"}
    return data, disk


def _collections() -> dict[str, list[Raw]]:
    data, disk = _bound_pair()
    return {
        "/api/v1/nodes": [_live(node(name), f"uid-{name}", "1") for name in ("n1", "n2", "n3")],
        "/api/v1/pods": [
            _live(with_claims(pod("db", node_name="n2"), "data"), "uid-db", "9"),
        ],
        "/apis/storage.k8s.io/v1/storageclasses": [
            _live(storage_class("local", wait_for_first_consumer=True), "uid-local", "2"),
        ],
        "/api/v1/persistentvolumeclaims": [data],
        "/api/v1/persistentvolumes": [
            disk,
            _live(volume("n3-disk", node="n3", size="50Gi"), "uid-n3", "3"),
        ],
    }


def _scenario(
    tmp_path: Path, added: list[Raw], forbidden: frozenset[str] = frozenset()
) -> tuple[Any, list[str], ListOnlyApi]:
    api = ListOnlyApi(_collections(), forbidden)
    path = write_yaml(tmp_path / "add.yaml", added)
    scenario, keys = asyncio.run(cluster_scenario(cast(Api, api), [path]))
    return scenario, keys, api


def test_storage_objects_are_listed_and_steer_the_added_pods(tmp_path: Path) -> None:
    added = [
        claim("scratch", size="20Gi"),
        with_claims(pod("reuses-data"), "data"),
        with_claims(pod("needs-local-disk"), "scratch"),
    ]
    scenario, keys, api = _scenario(tmp_path, added)
    assert {
        "/apis/storage.k8s.io/v1/storageclasses",
        "/apis/storage.k8s.io/v1/csidrivers",
        "/apis/storage.k8s.io/v1/csinodes",
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/persistentvolumes",
        "/apis/storage.k8s.io/v1/volumeattachments",
    } <= set(api.listed)
    assert keys == ["default/reuses-data", "default/needs-local-disk"]
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in scenario.storage)
    assert kinds == [
        ("PersistentVolume", "n2-disk"),
        ("PersistentVolume", "n3-disk"),
        ("PersistentVolumeClaim", "data"),
        ("PersistentVolumeClaim", "scratch"),
        ("StorageClass", "local"),
    ]
    assert all("resourceVersion" not in o["metadata"] for o in scenario.storage)

    result = sim_loop.run(Simulation(default_config()).run(scenario))
    answers = {
        a["name"]: (a["status"], a["node"]) for a in build_report(result, added=keys)["whatIf"]
    }
    assert answers == {"reuses-data": ("Bound", "n2"), "needs-local-disk": ("Bound", "n3")}
    # The live binding was taken as it is: the claim still on its PV, nothing released.
    storage = result.cluster.storage
    assert storage["PersistentVolumeClaim"]["default/data"]["spec"]["volumeName"] == "n2-disk"
    assert storage["PersistentVolume"]["n2-disk"]["status"]["phase"] == "Bound"


def test_a_collection_the_identity_may_not_list_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        _scenario(tmp_path, [pod("p")], frozenset({"/api/v1/persistentvolumes"}))
    assert str(info.value) == (
        "cannot list /api/v1/persistentvolumes: "
        "403 Forbidden: cannot list resource at /api/v1/persistentvolumes"
    )


@pytest.mark.parametrize(
    ("added", "message"),
    [
        pytest.param(
            [volume("extra")],
            "--add takes pending pods (and PriorityClasses, Namespaces, PersistentVolumeClaims, "
            "ResourceClaims, ResourceClaimTemplates or PodGroups they need); it got nodes, "
            "running pods, PDBs or other storage or device objects ['extra']",
            id="a-volume",
        ),
        pytest.param(
            [claim("data"), pod("p")],
            "--add: PersistentVolumeClaim default/data already exists in the cluster",
            id="an-existing-claim",
        ),
    ],
)
def test_added_files_hold_pods_and_their_new_claims_only(
    tmp_path: Path, added: list[Raw], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        _scenario(tmp_path, added)
    assert str(info.value) == message
