"""Storage views: the class and binding rules they encode, and parse errors naming the field."""

from __future__ import annotations

import pytest

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    resource_version_newer,
)
from tests.builders import make_node, make_pod, node_info
from tests.storage_builders import make_claim, make_class, make_csi_node, make_volume


@pytest.mark.parametrize(
    ("annotation", "spec_class", "expected"),
    [
        pytest.param(None, "fast", "fast", id="spec-only"),
        pytest.param("legacy", "fast", "legacy", id="annotation-wins"),
        pytest.param("", "fast", "", id="empty-annotation-still-wins"),
        pytest.param(None, None, "", id="no-class"),
    ],
)
def test_claim_class_prefers_the_legacy_annotation(
    annotation: str | None, spec_class: str | None, expected: str
) -> None:
    builder = make_claim("data")
    if spec_class is not None:
        builder.storage_class(spec_class)
    if annotation is not None:
        builder.annotate(BETA_STORAGE_CLASS_ANNOTATION, annotation)
    assert builder.claim().storage_class_name == expected


def test_claim_is_bound_only_with_bind_completed() -> None:
    assert not make_claim("a").volume_name("pv").claim().is_bound
    assert make_claim("a").bound_to("pv").claim().is_bound


def test_claim_parses_size_mode_and_selector() -> None:
    claim = make_claim("a").size("5Gi").block().selector(tier="gold").claim()
    assert claim.request == 5 * 1024**3
    assert claim.volume_mode == "Block"
    assert claim.selector is not None and claim.selector.matches({"tier": "gold"})


def test_volume_reads_claim_ref_affinity_and_csi() -> None:
    volume = (
        make_volume("pv")
        .size("10Gi")
        .on_node("n1")
        .csi("ebs.csi.aws.com", "vol-1")
        .claimed_by("ns", "c", "u1")
        .volume()
    )
    assert volume.capacity == 10 * 1024**3
    assert volume.claim_ref is not None and volume.claim_ref.key == "ns/c"
    assert volume.node_affinity_matches("n1", {"kubernetes.io/hostname": "n1"})
    assert not volume.node_affinity_matches("n2", {"kubernetes.io/hostname": "n2"})
    assert volume.csi is not None and volume.csi.volume_handle == "vol-1"


def test_allowed_topologies_terms_are_ored_and_an_empty_term_selects_nothing() -> None:
    anywhere = make_class("any").storage_class()
    zoned = make_class("z").allowed_topology("zone", "a").allowed_topology("zone", "b")
    assert anywhere.allows_topology({})
    assert zoned.storage_class().allows_topology({"zone": "b"})
    assert not zoned.storage_class().allows_topology({"zone": "c"})
    empty_term = StorageClass(
        {"metadata": {"name": "e"}, "provisioner": "p", "allowedTopologies": [{}]}
    )
    assert not empty_term.allows_topology({"zone": "anything"})


def test_csi_node_counts() -> None:
    node = make_csi_node("n1", {"a.csi": 3, "b.csi": None})
    assert node.drivers["a.csi"].allocatable_count == 3
    assert node.drivers["b.csi"].allocatable_count is None


@pytest.mark.parametrize(
    ("kind", "raw", "field"),
    [
        pytest.param(PersistentVolumeClaim, {"metadata": {}}, "metadata.name", id="claim-name"),
        pytest.param(
            PersistentVolume,
            {"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "lots"}}},
            "spec.capacity.storage",
            id="volume-capacity",
        ),
        pytest.param(
            CSINode,
            {"metadata": {"name": "n"}, "spec": {"drivers": [{"allocatable": {"count": "3"}}]}},
            "spec.drivers[0].allocatable.count",
            id="csinode-count",
        ),
    ],
)
def test_malformed_objects_name_the_field(kind: type, raw: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidObjectError) as error:
        kind(raw)
    assert error.value.field.endswith(field)


def test_resource_versions_compare_as_integers() -> None:
    assert resource_version_newer("10", "9")
    assert not resource_version_newer("9", "10")
    assert not resource_version_newer("9", "9")


def test_pod_claim_keys_and_node_counts_of_persistent_claims_only() -> None:
    pod = make_pod("p", "ns").claim("data").ephemeral("scratch").pod()
    assert pod.claim_keys == ("ns/data", "ns/p-scratch")
    assert pod.pvc_volume_keys == ("ns/data",)
    info = node_info(make_node("n1"), pod, make_pod("q", "ns").claim("data").pod())
    assert info.pvc_ref_counts == {"ns/data": 2}
    info.remove_pod(pod)
    assert info.pvc_ref_counts == {"ns/data": 1}
    clone = info.clone()
    clone.remove_pod(info.pods[0])
    assert clone.pvc_ref_counts == {} and info.pvc_ref_counts == {"ns/data": 1}
