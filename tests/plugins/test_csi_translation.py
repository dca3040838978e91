"""The in-tree-to-CSI translation both volume plugins share: what Go's URL parser says about an
``aws://`` EBS volume ID, which CSINode entries turn migration on, and the node affinity of
translated PVs. The expected texts are csi-translation-lib v0.34.10's (through Go's net/url).
The handles and the refusals NodeVolumeLimits reads are tested in ``test_node_volume_limits``,
the affinity VolumeBinding checks in ``test_volume_binding_migration``."""

from __future__ import annotations

import pytest

from kopf_scheduler.model.storage import CSINode
from kopf_scheduler.plugins.csi_translation import (
    TranslationError,
    csi_volume_handle,
    is_migration_on,
    migrated_node_affinity,
    plugin_for_source,
    plugin_named,
)
from tests.storage_builders import make_csi_node, make_volume

EBS_PREFIX = "failed to translate Kubernetes ID to EBS Volume ID "


def _ebs_handle(volume_id: str) -> str | None:
    plugin = plugin_for_source("awsElasticBlockStore")
    assert plugin is not None
    return csi_volume_handle(plugin, {"volumeID": volume_id}, {})


@pytest.mark.parametrize(
    ("volume_id", "want"),
    [
        pytest.param("vol-1", "vol-1", id="bare-id"),
        pytest.param("anything/at all", "anything/at all", id="bare-id-taken-as-it-is"),
        pytest.param("aws://us-east-1a/vol-1", "vol-1", id="zone-url"),
        pytest.param("aws:///vol-1", "vol-1", id="url-without-zone"),
        pytest.param("aws://us-east-1a:443/vol-1", "vol-1", id="host-with-port"),
        pytest.param("aws://z/vol-1%2F", "vol-1", id="escaped-slash-trimmed"),
        pytest.param("aws://z/vol-1?x=%zz", "vol-1", id="query-not-parsed"),
        pytest.param("aws://u:p@z/vol-1", "vol-1", id="user-information"),
    ],
)
def test_ebs_volume_ids(volume_id: str, want: str) -> None:
    assert _ebs_handle(volume_id) == want


@pytest.mark.parametrize(
    ("volume_id", "reason"),
    [
        pytest.param(
            "aws://us-east-1a/vol-%zz",
            'parse "aws://us-east-1a/vol-%zz": invalid URL escape "%zz"',
            id="bad-escape-in-path",
        ),
        pytest.param(
            "aws://us-east-1a/vol-1%",
            'parse "aws://us-east-1a/vol-1%": invalid URL escape "%"',
            id="cut-escape",
        ),
        pytest.param(
            "aws://z/vol-%é",
            'parse "aws://z/vol-%é": invalid URL escape "%é"',
            id="escape-quoted-as-three-bytes",
        ),
        pytest.param(
            "aws://us%41east/vol-1",
            'parse "aws://us%41east/vol-1": invalid URL escape "%41"',
            id="host-escapes-only-non-ascii",
        ),
        pytest.param(
            "aws://us east/vol-1",
            'parse "aws://us east/vol-1": invalid character " " in host name',
            id="host-character",
        ),
        pytest.param(
            "aws://us-east-1a:x/vol-1",
            'parse "aws://us-east-1a:x/vol-1": invalid port ":x" after host',
            id="host-port",
        ),
        pytest.param(
            "aws://[fe80::1/vol-1",
            "parse \"aws://[fe80::1/vol-1\": missing ']' in host",
            id="unclosed-ip-literal",
        ),
        pytest.param(
            "aws://user^@us-east-1a/vol-1",
            'parse "aws://user^@us-east-1a/vol-1": net/url: invalid userinfo',
            id="user-information-character",
        ),
        pytest.param(
            "aws://user%zz@z/vol-1",
            'parse "aws://user%zz@z/vol-1": invalid URL escape "%zz"',
            id="user-information-escape",
        ),
        pytest.param(
            "aws://z/vol-1#%zz",
            'parse "aws://z/vol-1#%zz": invalid URL escape "%zz"',
            id="fragment-escape-quotes-the-whole-id",
        ),
        pytest.param(
            "aws://z/vol-1\n#x",
            'parse "aws://z/vol-1\\n": net/url: invalid control character in URL',
            id="control-character",
        ),
    ],
)
def test_ebs_ids_go_cannot_parse(volume_id: str, reason: str) -> None:
    with pytest.raises(TranslationError) as raised:
        _ebs_handle(volume_id)
    assert str(raised.value) == f"{EBS_PREFIX}Invalid disk name ({volume_id}): {reason}"


@pytest.mark.parametrize(
    "volume_id",
    [
        pytest.param("aws://z/disk-1", id="not-vol"),
        pytest.param("aws://z/vol-1/extra", id="two-segments"),
        pytest.param('aws://z/"vol', id="quoted"),
    ],
)
def test_ebs_urls_without_a_volume_id(volume_id: str) -> None:
    with pytest.raises(TranslationError) as raised:
        _ebs_handle(volume_id)
    assert str(raised.value) == f"{EBS_PREFIX}Invalid format for AWS volume ({volume_id})"


@pytest.mark.parametrize(
    ("annotation", "want"),
    [
        pytest.param("kubernetes.io/gce-pd,kubernetes.io/aws-ebs", True, id="listed"),
        pytest.param("kubernetes.io/gce-pd, kubernetes.io/aws-ebs", False, id="space-kept"),
        pytest.param("kubernetes.io/aws-ebs ", False, id="trailing-space-kept"),
        pytest.param(",kubernetes.io/aws-ebs,", True, id="empty-entries"),
        pytest.param("", False, id="empty"),
    ],
)
def test_migrated_plugins_are_entries_as_written(annotation: str, want: bool) -> None:
    plugin = plugin_named("kubernetes.io/aws-ebs")
    assert plugin is not None
    csi_node = make_csi_node("node1", migrated=annotation)
    assert ("kubernetes.io/aws-ebs" in csi_node.migrated_plugins) is want
    assert is_migration_on(csi_node, plugin) is want


def _requirements(csi_node: CSINode | None, **labels: str) -> list[list[tuple[str, list[str]]]]:
    volume = make_volume("pv").source("awsElasticBlockStore", volumeID="vol-1")
    for key, value in labels.items():
        volume.label(key, value)
    volume.node_affinity("rack", "r1")
    affinity = migrated_node_affinity(volume.volume(), csi_node)
    assert affinity is not None
    return [[(r.key, sorted(r.values)) for r in term.label_requirements] for term in affinity.terms]


@pytest.mark.parametrize(
    ("csi_node", "want"),
    [
        pytest.param(
            make_csi_node("node1", migrated="kubernetes.io/aws-ebs"),
            [[("rack", ["r1"]), ("topology.ebs.csi.aws.com/zone", ["a", "b"])]],
            id="migrated",
        ),
        pytest.param(
            make_csi_node("node1", migrated="kubernetes.io/gce-pd"),
            [[("rack", ["r1"])]],
            id="other-plugin",
        ),
        pytest.param(None, [[("rack", ["r1"])]], id="no-csi-node"),
    ],
)
def test_migrated_node_affinity(
    csi_node: CSINode | None, want: list[list[tuple[str, list[str]]]]
) -> None:
    assert _requirements(csi_node, **{"topology.kubernetes.io/zone": "b__ a"}) == want
