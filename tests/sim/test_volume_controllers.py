"""The in-memory cluster's PV controller, provisioner and volume write port, without a scheduler.

Each case loads a cluster state and checks what the PV controller's rules make of it: which
claim ends up bound to which PV, with which phases and annotations. The write port is checked
for the API server's update rules (resourceVersion precondition, status kept, no-op updates).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import pytest

from kopf_scheduler.informer.handlers import MODIFIED
from kopf_scheduler.model.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
)
from kopf_scheduler.ports import ConflictError, NotFoundError
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.sim.support import node
from tests.sim.volume_support import annotations_of, claim, storage_class, volume

CLAIM = "PersistentVolumeClaim"
VOLUME = "PersistentVolume"
Raw = dict[str, Any]


def _loaded(*docs: Mapping[str, Any]) -> InMemoryCluster:
    cluster = InMemoryCluster(VirtualClock())
    cluster.load(docs)
    return cluster


def _claims(cluster: InMemoryCluster) -> dict[str, tuple[str, str]]:
    """Claim name -> (phase, volumeName)."""
    return {
        raw["metadata"]["name"]: (raw["status"]["phase"], raw["spec"].get("volumeName", ""))
        for raw in cluster.storage[CLAIM].values()
    }


def _volumes(cluster: InMemoryCluster) -> dict[str, tuple[str, str]]:
    """PV name -> (phase, name of the claim in its claimRef)."""
    return {
        name: (raw["status"]["phase"], (raw["spec"].get("claimRef") or {}).get("name", ""))
        for name, raw in cluster.storage[VOLUME].items()
    }


def _labelled(raw: Raw, **labels: str) -> Raw:
    raw["metadata"]["labels"] = labels
    return raw


def _selecting(raw: Raw, **labels: str) -> Raw:
    raw["spec"]["selector"] = {"matchLabels": labels}
    return raw


def _block(raw: Raw) -> Raw:
    raw["spec"]["volumeMode"] = "Block"
    return raw


def _marked_bound(raw: Raw) -> Raw:
    raw["metadata"]["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
    return raw


def _reserved_for_uid(raw: Raw, uid: str) -> Raw:
    raw["spec"]["claimRef"]["uid"] = uid
    return raw


IMMEDIATE = storage_class("zonal")
WAITING = storage_class("local", wait_for_first_consumer=True)


@pytest.mark.parametrize(
    ("docs", "claims", "volumes"),
    [
        pytest.param(
            [IMMEDIATE, volume("free", storage_class_name="zonal")],
            {},
            {"free": ("Available", "")},
            id="a-free-volume-is-available",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("big", storage_class_name="zonal", size="100Gi"),
                volume("small", storage_class_name="zonal", size="10Gi"),
                volume("too-small", storage_class_name="zonal", size="1Gi"),
                volume("other-class", storage_class_name="local", size="5Gi"),
                claim("data", storage_class_name="zonal", size="5Gi"),
            ],
            {"data": ("Bound", "small")},
            {
                "big": ("Available", ""),
                "small": ("Bound", "data"),
                "too-small": ("Available", ""),
                "other-class": ("Available", ""),
            },
            id="immediate-claim-takes-the-smallest-fitting-volume-of-its-class",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("plain", storage_class_name="zonal"),
                _labelled(volume("gold", storage_class_name="zonal", size="50Gi"), tier="gold"),
                _selecting(claim("data", storage_class_name="zonal"), tier="gold"),
            ],
            {"data": ("Bound", "gold")},
            {"plain": ("Available", ""), "gold": ("Bound", "data")},
            id="selector",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume(
                    "shared-modes",
                    storage_class_name="zonal",
                    size="10Gi",
                    modes=("ReadWriteOnce", "ReadWriteMany"),
                ),
                volume("exact-modes", storage_class_name="zonal", size="100Gi"),
                claim("data", storage_class_name="zonal"),
            ],
            {"data": ("Bound", "exact-modes")},
            {"shared-modes": ("Available", ""), "exact-modes": ("Bound", "data")},
            id="fewest-access-modes-first",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("fs", storage_class_name="zonal"),
                _block(claim("raw", storage_class_name="zonal")),
            ],
            {"raw": ("Pending", "")},
            {"fs": ("Available", "")},
            id="volume-mode-must-match",
        ),
        pytest.param(
            [WAITING, volume("local-1"), claim("data")],
            {"data": ("Pending", "")},
            {"local-1": ("Available", "")},
            id="wait-for-first-consumer-is-left-to-the-scheduler",
        ),
        pytest.param(
            [WAITING, volume("reserved", claim="data"), claim("data")],
            {"data": ("Bound", "reserved")},
            {"reserved": ("Bound", "data")},
            id="a-volume-reserved-by-the-user-binds-even-when-waiting",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("wanted", storage_class_name="zonal"),
                claim("data", storage_class_name="zonal", volume_name="wanted"),
            ],
            {"data": ("Bound", "wanted")},
            {"wanted": ("Bound", "data")},
            id="a-claim-naming-a-free-volume",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("tiny", storage_class_name="zonal", size="1Gi"),
                claim("data", storage_class_name="zonal", volume_name="tiny"),
            ],
            {"data": ("Pending", "tiny")},
            {"tiny": ("Available", "")},
            id="a-claim-naming-a-volume-too-small",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("taken", storage_class_name="zonal", claim="owner"),
                claim("owner", storage_class_name="zonal"),
                claim("intruder", storage_class_name="zonal", volume_name="taken"),
            ],
            {"owner": ("Bound", "taken"), "intruder": ("Pending", "taken")},
            {"taken": ("Bound", "owner")},
            id="a-claim-naming-someone-elses-volume",
        ),
        pytest.param(
            [
                IMMEDIATE,
                _marked_bound(claim("orphan", storage_class_name="zonal", volume_name="gone")),
            ],
            {"orphan": ("Lost", "gone")},
            {},
            id="a-bound-claim-whose-volume-is-gone-is-lost",
        ),
        pytest.param(
            [
                IMMEDIATE,
                _reserved_for_uid(
                    volume("left", storage_class_name="zonal", claim="gone"), "uid-gone"
                ),
            ],
            {},
            {"left": ("Released", "gone")},
            id="a-volume-whose-claim-is-gone-is-released",
        ),
    ],
)
def test_pv_controller_rules(
    docs: list[Raw], claims: dict[str, tuple[str, str]], volumes: dict[str, tuple[str, str]]
) -> None:
    cluster = _loaded(*docs)
    assert _claims(cluster) == claims
    assert _volumes(cluster) == volumes


@pytest.mark.parametrize(
    ("docs", "volume_marked", "claim_marked"),
    [
        pytest.param(
            [
                IMMEDIATE,
                volume("v", storage_class_name="zonal"),
                claim("c", storage_class_name="zonal"),
            ],
            True,
            True,
            id="controller-chose-both-sides",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("v", storage_class_name="zonal", claim="c"),
                claim("c", storage_class_name="zonal"),
            ],
            False,
            True,
            id="user-reserved-the-volume",
        ),
        pytest.param(
            [
                IMMEDIATE,
                volume("v", storage_class_name="zonal"),
                claim("c", storage_class_name="zonal", volume_name="v"),
            ],
            True,
            False,
            id="user-named-the-volume",
        ),
    ],
)
def test_bound_by_controller_marks_the_side_the_controller_chose(
    docs: list[Raw], volume_marked: bool, claim_marked: bool
) -> None:
    cluster = _loaded(*docs)
    bound_claim = cluster.storage[CLAIM]["default/c"]
    bound_volume = cluster.storage[VOLUME]["v"]
    assert annotations_of(bound_claim)[BIND_COMPLETED_ANNOTATION] == "yes"
    assert (BOUND_BY_CONTROLLER_ANNOTATION in annotations_of(bound_volume)) is volume_marked
    assert (BOUND_BY_CONTROLLER_ANNOTATION in annotations_of(bound_claim)) is claim_marked
    assert bound_volume["spec"]["claimRef"]["uid"] == bound_claim["metadata"]["uid"]
    assert bound_claim["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "10Gi"},
    }


def test_a_volume_created_later_binds_the_pending_claim() -> None:
    cluster = _loaded(IMMEDIATE, claim("data", storage_class_name="zonal"))
    assert _claims(cluster) == {"data": ("Pending", "")}
    cluster.create(volume("late", storage_class_name="zonal"))
    assert _claims(cluster) == {"data": ("Bound", "late")}


def test_a_default_class_created_later_is_given_to_the_claim_without_one() -> None:
    cluster = _loaded(node("n1"), claim("data", storage_class_name=None))
    assert "storageClassName" not in cluster.storage[CLAIM]["default/data"]["spec"]
    cluster.create(storage_class("standard", provisioner="disk.csi.example.com", default=True))
    data = cluster.storage[CLAIM]["default/data"]
    assert data["spec"]["storageClassName"] == "standard"
    assert _claims(cluster) == {"data": ("Bound", f"pvc-{data['metadata']['uid']}")}


def test_a_volume_bound_by_the_controller_to_a_claim_bound_elsewhere_is_freed() -> None:
    cluster = _loaded(
        IMMEDIATE,
        volume("chosen", storage_class_name="zonal", claim="data"),
        claim("data", storage_class_name="zonal"),
    )
    uid = cluster.storage[CLAIM]["default/data"]["metadata"]["uid"]
    stray = _reserved_for_uid(volume("stray", storage_class_name="zonal", claim="data"), uid)
    stray["metadata"]["annotations"] = {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
    cluster.create(stray)
    assert _volumes(cluster) == {"chosen": ("Bound", "data"), "stray": ("Available", "")}
    assert annotations_of(cluster.storage[VOLUME]["stray"]) == {}


@pytest.mark.parametrize(
    ("reclaim", "provisioned", "left"),
    [
        pytest.param("Retain", False, {"disk": ("Released", "data")}, id="retain"),
        pytest.param("Delete", True, {}, id="provisioned-delete"),
    ],
)
def test_deleting_a_bound_claim_releases_its_volume(
    reclaim: str, provisioned: bool, left: dict[str, tuple[str, str]]
) -> None:
    disk = volume("disk", storage_class_name="zonal", reclaim=reclaim)
    if provisioned:
        disk["metadata"]["annotations"] = {
            "pv.kubernetes.io/provisioned-by": "disk.csi.example.com"
        }
    cluster = _loaded(IMMEDIATE, disk, claim("data", storage_class_name="zonal"))
    assert _volumes(cluster) == {"disk": ("Bound", "data")}
    cluster.delete_object(CLAIM, "default/data")
    cluster.run_controllers()
    assert _volumes(cluster) == left


def test_provisioning_for_a_vanished_node_hands_the_claim_back() -> None:
    fast = storage_class("fast", provisioner="disk.csi.example.com", wait_for_first_consumer=True)
    waiting = claim("data", storage_class_name="fast")
    waiting["metadata"]["annotations"] = {SELECTED_NODE_ANNOTATION: "gone"}
    cluster = _loaded(fast, node("n1"), waiting)
    assert SELECTED_NODE_ANNOTATION not in annotations_of(cluster.storage[CLAIM]["default/data"])
    assert cluster.storage[VOLUME] == {}


# The write port ----------------------------------------------------------------------------------


def _watching(cluster: InMemoryCluster) -> list[tuple[str, str, Mapping[str, Any]]]:
    seen: list[tuple[str, str, Mapping[str, Any]]] = []
    cluster.subscribe(lambda kind, event_type, raw: seen.append((kind, event_type, raw)))
    return seen


def test_update_volume_writes_spec_keeps_status_and_leaves_binding_to_the_controller() -> None:
    cluster = _loaded(WAITING, node("n1"), volume("local-1", node="n1"), claim("data"))
    seen = _watching(cluster)
    current = cluster.storage[VOLUME]["local-1"]
    data = cluster.storage[CLAIM]["default/data"]
    wanted = {
        **current,
        "spec": {
            **current["spec"],
            "claimRef": {"namespace": "default", "name": "data", "uid": data["metadata"]["uid"]},
        },
    }
    wanted["status"] = {"phase": "Failed"}

    written = asyncio.run(cluster.update_volume(wanted))

    assert int(written["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])
    assert written["status"] == {"phase": "Available"}
    assert written["spec"]["claimRef"]["name"] == "data"
    assert [(kind, event_type) for kind, event_type, _ in seen] == [(VOLUME, MODIFIED)]
    assert _claims(cluster) == {"data": ("Pending", "")}
    cluster.run_controllers()
    assert _claims(cluster) == {"data": ("Bound", "local-1")}
    assert _volumes(cluster) == {"local-1": ("Bound", "data")}


def test_update_claim_with_the_selected_node_starts_provisioning() -> None:
    fast = storage_class("fast", provisioner="disk.csi.example.com", wait_for_first_consumer=True)
    cluster = _loaded(fast, node("n1"), claim("data", storage_class_name="fast"))
    current = cluster.storage[CLAIM]["default/data"]
    wanted = {
        **current,
        "metadata": {**current["metadata"], "annotations": {SELECTED_NODE_ANNOTATION: "n1"}},
    }
    asyncio.run(cluster.update_claim(wanted))
    cluster.run_controllers()
    uid = current["metadata"]["uid"]
    assert _claims(cluster) == {"data": ("Bound", f"pvc-{uid}")}
    assert (
        annotations_of(cluster.storage[CLAIM]["default/data"])[
            "volume.kubernetes.io/storage-provisioner"
        ]
        == "disk.csi.example.com"
    )


def test_update_with_a_stale_version_or_of_a_missing_object_is_refused() -> None:
    cluster = _loaded(IMMEDIATE, volume("v", storage_class_name="zonal"))
    current = cluster.storage[VOLUME]["v"]
    stale = {**current, "metadata": {**current["metadata"], "resourceVersion": "1"}}
    with pytest.raises(ConflictError) as conflict:
        asyncio.run(cluster.update_volume(stale))
    assert conflict.value.message == (
        'Operation cannot be fulfilled on persistentvolumes "v": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    missing = {**current, "metadata": {"name": "w", "resourceVersion": "1"}}
    with pytest.raises(NotFoundError) as not_found:
        asyncio.run(cluster.update_volume(missing))
    assert not_found.value.message == 'persistentvolumes "w" not found'
    other = {"metadata": {"name": "c", "namespace": "default"}}
    with pytest.raises(NotFoundError) as no_claim:
        asyncio.run(cluster.update_claim(other))
    assert no_claim.value.message == 'persistentvolumeclaims "c" not found'


def test_an_update_that_changes_nothing_writes_nothing() -> None:
    cluster = _loaded(IMMEDIATE, volume("v", storage_class_name="zonal"))
    seen = _watching(cluster)
    current = cluster.storage[VOLUME]["v"]
    returned = asyncio.run(cluster.update_volume(dict(current)))
    assert returned == current
    assert returned is not current
    assert seen == []


def test_stored_objects_are_replaced_never_changed_in_place() -> None:
    cluster = _loaded(IMMEDIATE, volume("v", storage_class_name="zonal"))
    first = cluster.storage[VOLUME]["v"]
    snapshot = copy.deepcopy(first)
    cluster.create(claim("data", storage_class_name="zonal"))
    assert cluster.storage[VOLUME]["v"]["status"]["phase"] == "Bound"
    assert first == snapshot
