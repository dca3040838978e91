"""In-tree PVs on nodes migrated to CSI: the node affinity VolumeBinding checks, and the volumes
the translation refuses; cases follow upstream's TestFindPodVolumesWithCSIMigration and the
csi-translation library's topology rules."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.storage import CSINode
from kopf_scheduler.plugins.volume_binding import REASON_NODE_CONFLICT
from kopf_scheduler.plugins.volume_binding.decisions import node_affinity_on
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError
from tests.builders import make_node, make_pod
from tests.plugins.volume_binding_support import (
    WAIT,
    csi_node,
    filter_all,
    handle_with,
    plugin_on,
    storage_with,
)
from tests.storage_builders import VolumeBuilder, make_claim, make_volume

GCE = "kubernetes.io/gce-pd"
GKE_ZONE = "topology.gke.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"


def _in_tree(name: str, source: str, fields: dict[str, str]) -> VolumeBuilder:
    """A volume with an in-tree source (set directly: Azure's ``kind`` field is a keyword of
    the builder's ``source``)."""
    volume = make_volume(name)
    volume.spec[source] = dict(fields)
    return volume


def _gce_volume(**labels: str) -> VolumeBuilder:
    volume = make_volume("pv-migrated").storage_class(WAIT)
    volume.source("gcePersistentDisk", pdName="test-disk", fsType="ext4")
    for key, value in labels.items():
        volume.label(key, value)
    return volume.claimed_by("default", "pvc-a", "pvc-uid-default-pvc-a").phase("Bound")


@pytest.mark.parametrize(
    ("node_zone", "csi", "expected"),
    [
        pytest.param("us-east-1", csi_node("node1", GCE), SUCCESS, id="migrated-zone-matches"),
        pytest.param(
            "us-east-2",
            csi_node("node1", GCE),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_NODE_CONFLICT),
            id="migrated-other-zone",
        ),
        pytest.param("us-east-2", csi_node("node1", ""), SUCCESS, id="not-migrated"),
        pytest.param("us-east-2", None, SUCCESS, id="no-csi-node"),
    ],
)
def test_bound_in_tree_volume(node_zone: str, csi: CSINode | None, expected: Status) -> None:
    volume = _gce_volume(**{BETA_ZONE: "us-east-1", BETA_REGION: "us-east-1a"})
    objects: list[Any] = [make_claim("pvc-a").storage_class(WAIT).bound_to("pv-migrated"), volume]
    if csi is not None:
        objects.append(csi)
    handle = handle_with(storage_with(*objects), [make_node("node1").label(GKE_ZONE, node_zone)])
    plugin = plugin_on(handle)
    state = CycleState()
    pod = make_pod("pod-a").claim("pvc-a").pod()
    plugin.pre_filter(state, pod, [])
    assert filter_all(plugin, state, pod, handle)["node1"] == expected


def _expressions(volume: VolumeBuilder, csi: CSINode | None) -> list[list[tuple[str, list[str]]]]:
    """The translated affinity's terms as (key, values) lists."""
    affinity = node_affinity_on(volume.volume(), csi)
    assert affinity is not None
    return [[(r.key, sorted(r.values)) for r in term.label_requirements] for term in affinity.terms]


def test_zone_label_becomes_driver_topology() -> None:
    volume = _gce_volume(**{GA_ZONE: "us-east1-b__us-east1-c"})
    assert _expressions(volume, csi_node("node1", GCE)) == [
        [(GKE_ZONE, ["us-east1-b", "us-east1-c"])]
    ]


def test_zone_in_affinity_is_renamed_and_added_to_nothing() -> None:
    volume = _gce_volume(**{GA_ZONE: "ignored"}).node_affinity(GA_ZONE, "us-east1-b")
    assert _expressions(volume, csi_node("node1", GCE)) == [[(GKE_ZONE, ["us-east1-b"])]]


def test_beta_zone_in_affinity_moves_beta_region_to_ga() -> None:
    volume = _gce_volume()
    volume.spec["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": BETA_ZONE, "operator": "In", "values": ["us-east1-b"]},
                        {"key": BETA_REGION, "operator": "In", "values": ["us-east1"]},
                    ]
                }
            ]
        }
    }
    assert _expressions(volume, csi_node("node1", GCE)) == [
        [(GKE_ZONE, ["us-east1-b"]), (GA_REGION, ["us-east1"])]
    ]


def test_zone_from_labels_is_added_to_every_term() -> None:
    volume = _gce_volume(**{GA_ZONE: "us-east1-b"})
    volume.spec["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]},
                {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]},
            ]
        }
    }
    assert _expressions(volume, csi_node("node1", GCE)) == [
        [("rack", ["r1"]), (GKE_ZONE, ["us-east1-b"])],
        [("rack", ["r2"]), (GKE_ZONE, ["us-east1-b"])],
    ]


def test_volume_without_zone_keeps_no_affinity() -> None:
    assert node_affinity_on(_gce_volume().volume(), csi_node("node1", GCE)) is None


def test_migrated_plugins_are_compared_as_written() -> None:
    volume = _gce_volume(**{GA_ZONE: "us-east1-b"})
    padded = csi_node("node1", f"kubernetes.io/aws-ebs, {GCE}")
    assert node_affinity_on(volume.volume(), padded) is None
    listed = csi_node("node1", f"kubernetes.io/aws-ebs,{GCE}")
    assert node_affinity_on(volume.volume(), listed) is not None


@pytest.mark.parametrize(
    ("source", "fields", "plugin", "key"),
    [
        pytest.param(
            "awsElasticBlockStore",
            {"volumeID": "aws://us-east-1a/vol-1"},
            "kubernetes.io/aws-ebs",
            "topology.ebs.csi.aws.com/zone",
            id="aws-ebs",
        ),
        pytest.param(
            "cinder",
            {"volumeID": "v1"},
            "kubernetes.io/cinder",
            "topology.cinder.csi.openstack.org/zone",
            id="cinder",
        ),
    ],
)
def test_driver_topology_keys(source: str, fields: dict[str, str], plugin: str, key: str) -> None:
    volume = _in_tree("pv-a", source, fields).label(GA_ZONE, "z1")
    assert _expressions(volume, csi_node("node1", plugin)) == [[(key, ["z1"])]]


@pytest.mark.parametrize(
    ("source", "fields", "plugin"),
    [
        pytest.param(
            "azureDisk",
            {"diskName": "d", "diskURI": "u", "kind": "Managed"},
            "kubernetes.io/azure-disk",
            id="azure-disk",
        ),
        pytest.param(
            "portworxVolume", {"volumeID": "v"}, "kubernetes.io/portworx-volume", id="portworx"
        ),
        pytest.param("rbd", {"image": "i"}, "kubernetes.io/rbd", id="never-migrated"),
    ],
)
def test_affinity_kept(source: str, fields: dict[str, str], plugin: str) -> None:
    volume = _in_tree("pv-a", source, fields).label(GA_ZONE, "z1")
    volume.node_affinity("rack", "r1")
    assert _expressions(volume, csi_node("node1", plugin)) == [[("rack", ["r1"])]]


@pytest.mark.parametrize(
    ("source", "fields", "labels", "plugin", "message"),
    [
        pytest.param(
            "azureDisk",
            {"diskName": "d", "diskURI": "u", "kind": "Shared"},
            {},
            "kubernetes.io/azure-disk",
            "could not translate pv: kind(Shared) is not supported in csi migration",
            id="azure-shared-disk",
        ),
        pytest.param(
            "awsElasticBlockStore",
            {"volumeID": "aws://us-east-1a/disk-1"},
            {},
            "kubernetes.io/aws-ebs",
            "could not translate pv: failed to translate Kubernetes ID to EBS Volume ID "
            "Invalid format for AWS volume (aws://us-east-1a/disk-1)",
            id="aws-bad-volume-id",
        ),
        pytest.param(
            "awsElasticBlockStore",
            {"volumeID": "aws://us-east-1a/vol-%zz"},
            {},
            "kubernetes.io/aws-ebs",
            "could not translate pv: failed to translate Kubernetes ID to EBS Volume ID "
            'Invalid disk name (aws://us-east-1a/vol-%zz): parse "aws://us-east-1a/vol-%zz": '
            'invalid URL escape "%zz"',
            id="aws-bad-escape",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "d"},
            {BETA_ZONE: "us-east1-b__europe-west1-b"},
            GCE,
            "could not translate pv: failed to get region from zones: multiple or no regions "
            "gotten from zones, got: map[europe-west1:{} us-east1:{}]",
            id="gce-zones-of-two-regions",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "d"},
            {GA_ZONE: "us-east1-b__zone"},
            GCE,
            "could not translate pv: failed to get region from zones: zone in unexpected "
            "format, expected: {locale}-{region}-{zone}, got: zone",
            id="gce-zone-format",
        ),
    ],
)
def test_untranslatable_volumes(
    source: str, fields: dict[str, str], labels: dict[str, str], plugin: str, message: str
) -> None:
    volume = _in_tree("pv-a", source, fields)
    for key, value in labels.items():
        volume.label(key, value)
    with pytest.raises(VolumeBindingError) as raised:
        node_affinity_on(volume.volume(), csi_node("node1", plugin))
    assert raised.value.message == message


def test_untranslatable_bound_volume_is_a_filter_error() -> None:
    volume = (
        _in_tree("pv-a", "azureDisk", {"diskName": "d", "diskURI": "u", "kind": "Dedicated"})
        .storage_class(WAIT)
        .claimed_by("default", "pvc-a", "pvc-uid-default-pvc-a")
    )
    handle = handle_with(
        storage_with(
            make_claim("pvc-a").storage_class(WAIT).bound_to("pv-a"),
            volume,
            csi_node("node1", "kubernetes.io/azure-disk"),
        ),
        [make_node("node1")],
    )
    plugin = plugin_on(handle)
    state = CycleState()
    pod = make_pod("pod-a").claim("pvc-a").pod()
    plugin.pre_filter(state, pod, [])
    status = filter_all(plugin, state, pod, handle)["node1"]
    assert (status.code, status.message()) == (
        Code.ERROR,
        "could not translate pv: kind(Dedicated) is not supported in csi migration",
    )
