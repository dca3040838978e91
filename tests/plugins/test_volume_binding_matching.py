"""Static PV matching and the PV as Reserve binds it to its claim; cases follow upstream's
FindMatchingVolume and GetBindVolumeToClaim (component-helpers storage/volume) as the scheduler
uses them, and the StorageClass topology rule of dynamic provisioning."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from kopf_scheduler.plugins.volume_binding.matching import (
    bind_volume_to_claim,
    find_matching_volume,
)
from tests.storage_builders import ClaimBuilder, VolumeBuilder, make_claim, make_class, make_volume

NODE_LABELS = {"kubernetes.io/hostname": "node1", "zone": "a"}


def _claim() -> ClaimBuilder:
    return make_claim("pvc-a").storage_class("local").size("5Gi")


def _volume(name: str, size: str = "10Gi") -> VolumeBuilder:
    return make_volume(name).storage_class("local").size(size).on_node("node1")


def _with_spec(builder: Any, **fields: Any) -> Any:
    builder.spec.update(fields)
    return builder


def _deleted(builder: VolumeBuilder) -> VolumeBuilder:
    builder.raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return builder


def _by_name(volume: VolumeBuilder) -> VolumeBuilder:
    """Affinity on the node's name through ``matchFields`` (never matches in the scheduler)."""
    volume.spec["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}
            ]
        }
    }
    return volume


@pytest.mark.parametrize(
    ("claim", "volumes", "excluded", "expected"),
    [
        pytest.param(
            _claim(),
            [_volume("pv-20", "20Gi"), _volume("pv-10", "10Gi"), _volume("pv-15", "15Gi")],
            set(),
            "pv-10",
            id="smallest-fitting",
        ),
        pytest.param(
            _claim(),
            [_volume("pv-first", "10Gi"), _volume("pv-second", "10Gi")],
            set(),
            "pv-first",
            id="first-among-equals",
        ),
        pytest.param(_claim(), [_volume("pv-small", "1Gi")], set(), None, id="too-small"),
        pytest.param(_claim(), [_volume("pv-exact", "5Gi")], set(), "pv-exact", id="exact-size"),
        pytest.param(_claim(), [_volume("pv-a").block()], set(), None, id="volume-mode-differs"),
        pytest.param(_claim().block(), [_volume("pv-a").block()], set(), "pv-a", id="both-block"),
        pytest.param(
            _claim().access_modes("ReadWriteMany"),
            [_volume("pv-a")],
            set(),
            None,
            id="access-mode-missing",
        ),
        pytest.param(
            _claim().access_modes("ReadWriteOnce", "ReadOnlyMany"),
            [_volume("pv-a").access_modes("ReadOnlyMany", "ReadWriteOnce", "ReadWriteMany")],
            set(),
            "pv-a",
            id="access-modes-covered",
        ),
        pytest.param(
            _claim(), [_volume("pv-a").storage_class("other")], set(), None, id="other-class"
        ),
        pytest.param(
            _claim().selector(tier="gold"),
            [
                _volume("pv-silver").label("tier", "silver"),
                _volume("pv-gold").label("tier", "gold"),
            ],
            set(),
            "pv-gold",
            id="selector",
        ),
        pytest.param(
            _claim(), [_volume("pv-a").phase("Released")], set(), None, id="not-available"
        ),
        pytest.param(_claim(), [_volume("pv-a").phase("Bound")], set(), None, id="phase-bound"),
        pytest.param(
            _claim(),
            [_volume("pv-a").claimed_by("default", "other", "other-uid")],
            set(),
            None,
            id="claimed-by-another-claim",
        ),
        pytest.param(
            _claim(),
            [_volume("pv-a").claimed_by("default", "pvc-a", "stale-uid")],
            set(),
            None,
            id="claimed-by-an-older-claim-of-the-same-name",
        ),
        pytest.param(
            _claim(),
            [
                _volume("pv-small-free", "6Gi"),
                _volume("pv-prebound", "50Gi").claimed_by("default", "pvc-a").phase("Bound"),
            ],
            set(),
            "pv-prebound",
            id="prebound-volume-wins-whatever-its-size-and-phase",
        ),
        pytest.param(
            _claim(),
            [
                _volume("pv-free"),
                make_volume("pv-prebound")
                .storage_class("local")
                .size("10Gi")
                .on_node("node2")
                .claimed_by("default", "pvc-a", "pvc-uid-default-pvc-a"),
            ],
            set(),
            None,
            id="prebound-volume-on-another-node-means-no-match",
        ),
        pytest.param(
            _claim(),
            [_volume("pv-a"), _volume("pv-b", "20Gi")],
            {"pv-a"},
            "pv-b",
            id="excluded-volume-skipped",
        ),
        pytest.param(_claim(), [_deleted(_volume("pv-a"))], set(), None, id="volume-being-deleted"),
        pytest.param(
            _claim(),
            [make_volume("pv-a").storage_class("local").size("10Gi").on_node("node2")],
            set(),
            None,
            id="node-affinity-mismatch",
        ),
        pytest.param(
            _claim(),
            [make_volume("pv-a").storage_class("local").size("10Gi")],
            set(),
            "pv-a",
            id="no-node-affinity",
        ),
        pytest.param(_claim(), [_by_name(_volume("pv-a"))], set(), None, id="name-field-never"),
        pytest.param(
            _claim(),
            [_with_spec(_volume("pv-a"), volumeAttributesClassName="gold")],
            set(),
            None,
            id="attributes-class-only-on-volume",
        ),
        pytest.param(
            _with_spec(_claim(), volumeAttributesClassName="gold"),
            [
                _with_spec(_volume("pv-silver"), volumeAttributesClassName="silver"),
                _with_spec(_volume("pv-gold", "20Gi"), volumeAttributesClassName="gold"),
            ],
            set(),
            "pv-gold",
            id="attributes-class-equal",
        ),
    ],
)
def test_find_matching_volume(
    claim: ClaimBuilder, volumes: list[VolumeBuilder], excluded: set[str], expected: str | None
) -> None:
    found = find_matching_volume(
        claim.claim(), [v.volume() for v in volumes], NODE_LABELS, excluded
    )
    assert (found.name if found is not None else None) == expected


def _bind(volume: PersistentVolume, claim: PersistentVolumeClaim) -> tuple[dict[str, Any], bool]:
    bound, changed = bind_volume_to_claim(volume, claim)
    return dict(bound.raw), changed


def test_binding_a_free_volume_sets_the_full_claim_ref_and_the_controller_mark() -> None:
    claim = _claim().version("42").claim()
    volume = _volume("pv-a").volume()
    raw, changed = _bind(volume, claim)
    assert changed
    assert raw["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "pvc-a",
        "uid": "pvc-uid-default-pvc-a",
        "apiVersion": "v1",
        "resourceVersion": "42",
    }
    assert raw["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert raw["metadata"]["resourceVersion"] == volume.resource_version
    assert volume.claim_ref is None
    assert "claimRef" not in volume.raw["spec"]


def test_binding_a_volume_prebound_by_name_completes_the_ref_without_the_mark() -> None:
    claim = _claim().claim()
    volume = _volume("pv-a").claimed_by("default", "pvc-a").volume()
    raw, changed = _bind(volume, claim)
    assert changed
    assert raw["spec"]["claimRef"]["uid"] == "pvc-uid-default-pvc-a"
    assert "annotations" not in raw["metadata"]


def test_binding_a_volume_already_bound_to_the_claim_changes_nothing() -> None:
    claim = _claim().claim()
    volume = _volume("pv-a").claimed_by("default", "pvc-a", "pvc-uid-default-pvc-a").volume()
    raw, changed = _bind(volume, claim)
    assert not changed
    assert raw == dict(volume.raw)


@pytest.mark.parametrize(
    ("topologies", "labels", "allowed"),
    [
        pytest.param([], {}, True, id="no-terms-admit-every-node"),
        pytest.param([("zone", ("a", "b"))], {"zone": "b"}, True, id="value-listed"),
        pytest.param([("zone", ("a",))], {"zone": "b"}, False, id="value-not-listed"),
        pytest.param([("zone", ("a",))], {}, False, id="label-missing"),
        pytest.param(
            [("zone", ("a",)), ("rack", ("r1",))], {"rack": "r1"}, True, id="terms-are-ored"
        ),
    ],
)
def test_allowed_topologies(
    topologies: list[tuple[str, tuple[str, ...]]], labels: dict[str, str], allowed: bool
) -> None:
    builder = make_class("c").provisioner("example.com/csi")
    for key, values in topologies:
        builder.allowed_topology(key, *values)
    assert builder.storage_class().allows_topology(labels) is allowed


def test_a_topology_term_without_expressions_admits_no_node() -> None:
    builder = make_class("c").provisioner("example.com/csi")
    builder.raw["allowedTopologies"] = [{"matchLabelExpressions": []}]
    assert builder.storage_class().allows_topology({"zone": "a"}) is False
