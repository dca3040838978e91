"""Which in-tree volume plugins have a CSI driver, and the CSI volume handle of their volumes.

Attach limits are published per CSI driver, so a volume of an in-tree plugin that has been
migrated to CSI (``awsElasticBlockStore`` served by ``ebs.csi.aws.com``, ...) counts against its
driver's limit. This module keeps the facts of Kubernetes' csi-translation library that the
scheduler reads, and nothing more:

- the seven in-tree plugins the library can translate, by volume source field, plugin name and
  CSI driver name;
- for the five whose migration the scheduler honours (AWS EBS, GCE PD, Azure Disk, Cinder,
  Portworx), how a PV's or an inline volume's in-tree source becomes a CSI volume handle, and the
  translation errors the library reports. Azure File and vSphere volumes are recognised as
  migratable but never counted, so their handles are never computed;
- whether migration is on for a plugin on a node: the node's CSINode lists the plugin in its
  ``storage.alpha.kubernetes.io/migrated-plugins`` annotation (a plain comma-separated list:
  entries are compared as written, not trimmed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from kopf_scheduler.model.storage import MIGRATED_PLUGINS_ANNOTATION, CSINode

_UNSPECIFIED = "UNSPECIFIED"
_GCE_ZONAL_HANDLE = "projects/{project}/zones/{zone}/disks/{disk}"
_GCE_REGIONAL_HANDLE = "projects/{project}/regions/{region}/disks/{disk}"
_MULTI_ZONE_SEPARATOR = "__"
_GA_ZONE_LABEL = "topology.kubernetes.io/zone"
_BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
_EBS_VOLUME_ID = re.compile(r"vol-[^/]*")
_AZURE_MANAGED_KIND = "Managed"


class TranslationError(Exception):
    """An in-tree source the translation library refuses (the message is the library's)."""


HandleFn = Callable[[Mapping[str, Any], Mapping[str, str]], str]
"""``handle(source, labels)``: the CSI volume handle of an in-tree source; ``labels`` are the
PV's (empty for an inline volume). Raises :class:`TranslationError`."""


@dataclass(frozen=True)
class InTreePlugin:
    source: str
    """The volume source field (``awsElasticBlockStore``) in a PV's or a pod volume's spec."""
    name: str
    """The in-tree plugin name (``kubernetes.io/aws-ebs``), also a StorageClass provisioner."""
    driver: str
    """The CSI driver the plugin migrates to."""
    volume_handle: HandleFn | None
    """How a volume's handle is computed; ``None`` for plugins the scheduler never counts."""


def _ebs_volume_id(kubernetes_id: str) -> str:
    """An EBS volume ID from ``vol-...`` or the ``aws://<zone>/vol-...`` form."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        path = urlsplit(kubernetes_id).path
    except ValueError as error:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {error}") from error
    volume_id = unquote(path).strip("/")
    if not _EBS_VOLUME_ID.fullmatch(volume_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return volume_id


def _aws_ebs_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    try:
        return _ebs_volume_id(str(source.get("volumeID") or ""))
    except TranslationError as error:
        raise TranslationError(
            f"failed to translate Kubernetes ID to EBS Volume ID {error}"
        ) from error


def _gce_region(zones: list[str]) -> str:
    """The one region (``<locale>-<region>``) all ``zones`` (``<locale>-<region>-<zone>``) share."""
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                "zone in unexpected format, expected: {locale}-{region}-{zone}, got: " + zone
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def _gce_pd_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """A PV's handle names its zone (or its region when labelled with several zones); an
    inline volume has no labels, so its zone is left unspecified."""
    disk = str(source.get("pdName") or "")
    zones = (labels.get(_BETA_ZONE_LABEL) or labels.get(_GA_ZONE_LABEL) or "").split(
        _MULTI_ZONE_SEPARATOR
    )
    if len(zones) > 1:
        try:
            region = _gce_region(zones)
        except TranslationError as error:
            raise TranslationError(f"failed to get region from zones: {error}") from error
        return _GCE_REGIONAL_HANDLE.format(project=_UNSPECIFIED, region=region, disk=disk)
    zone = zones[0] or _UNSPECIFIED
    return _GCE_ZONAL_HANDLE.format(project=_UNSPECIFIED, zone=zone, disk=disk)


def _azure_disk_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Only managed disks migrate (an unset kind counts as managed)."""
    kind = source.get("kind")
    if kind is not None and str(kind).lower() != _AZURE_MANAGED_KIND.lower():
        raise TranslationError(f"kind({kind}) is not supported in csi migration")
    return str(source.get("diskURI") or "")


def _volume_id_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    return str(source.get("volumeID") or "")


IN_TREE_PLUGINS: tuple[InTreePlugin, ...] = (
    InTreePlugin(
        "awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com", _aws_ebs_handle
    ),
    InTreePlugin(
        "gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io", _gce_pd_handle
    ),
    InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", _azure_disk_handle),
    InTreePlugin("cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org", _volume_id_handle),
    InTreePlugin(
        "portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com", _volume_id_handle
    ),
    InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com", None),
    InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", None),
)

_BY_SOURCE = {plugin.source: plugin for plugin in IN_TREE_PLUGINS}
_BY_NAME = {plugin.name: plugin for plugin in IN_TREE_PLUGINS}


def plugin_for_source(source: str) -> InTreePlugin | None:
    """The migratable in-tree plugin serving a volume source field, if any."""
    return _BY_SOURCE.get(source)


def plugin_named(name: str) -> InTreePlugin | None:
    """The migratable in-tree plugin called ``name`` (a StorageClass provisioner), if any."""
    return _BY_NAME.get(name)


def is_migration_on(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """Whether the node's CSINode says ``plugin``'s volumes are served by its CSI driver.

    Only plugins the scheduler counts qualify (Azure File and vSphere never do); without a
    CSINode nothing is migrated.
    """
    if csi_node is None or plugin.volume_handle is None:
        return False
    listed = csi_node.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin.name in listed.split(",")


def csi_volume_handle(
    plugin: InTreePlugin, source: Mapping[str, Any], labels: Mapping[str, str]
) -> str | None:
    """The CSI volume handle of ``plugin``'s in-tree ``source`` (``labels``: the PV's, empty for
    an inline volume); TranslationError when the library refuses the source. ``None`` for the
    plugins the scheduler never counts: their translation cannot fail and nothing reads it."""
    if plugin.volume_handle is None:
        return None
    return plugin.volume_handle(source, labels)
