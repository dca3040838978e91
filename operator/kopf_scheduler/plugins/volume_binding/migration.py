"""In-tree volumes on nodes migrated to CSI: the node affinity volume binding checks for them.

When a node's CSINode lists an in-tree plugin in ``storage.alpha.kubernetes.io/migrated-plugins``
(a comma-separated list, entries compared as written), volume binding checks a bound in-tree PV of
that plugin as Kubernetes' csi-translation library rewrites it for the CSI driver, not as stored.
Only the node affinity matters here, and only five plugins count as migrated in v1.34 (AWS EBS,
GCE PD, Azure Disk, Cinder, Portworx; the library also knows Azure File and vSphere, but the
scheduler never treats those as migrated). Three of them move the volume's zone to their driver's
topology key:

- the zone key is the GA ``topology.kubernetes.io/zone`` if the affinity uses it, else the beta
  ``failure-domain.beta.kubernetes.io/zone`` if the affinity uses that, else whichever of the two
  the PV's labels carry (GA first), else GA;
- if the affinity has values for that key, the key is renamed to the driver's key in every term;
  otherwise the PV's zone label (``__`` separates several zones) becomes ``<driver key> In
  <zones>`` appended to every term (one new term when there are none);
- with the beta zone key, a beta region key in the affinity is renamed to the GA region key.

The library also refuses some volumes, and the scheduler reports its words prefixed with
``could not translate pv:``: an Azure disk whose ``kind`` is not ``Managed``, an EBS volume ID that
is neither ``vol-...`` nor ``aws://<zone>/vol-...``, and a GCE PD whose zone label lists zones
that do not share one ``{locale}-{region}`` (the zones are split on ``-`` and must have three
parts). Of the URL syntax errors Go's parser reports for an ``aws://`` ID, only malformed percent
escapes are told apart; any other malformed ID is reported as an invalid format.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from kopf_scheduler.model.selectors import NodeSelector
from kopf_scheduler.model.storage import (
    MIGRATED_PLUGINS_ANNOTATION,
    CSINode,
    PersistentVolume,
)
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError

GA_ZONE_LABEL = "topology.kubernetes.io/zone"
GA_REGION_LABEL = "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
MULTI_ZONE_SEPARATOR = "__"

_EBS_VOLUME_ID = re.compile(r"vol-[^/]*")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")

SourceCheck = Callable[[Mapping[str, Any], Mapping[str, str]], None]
"""Raises VolumeBindingError (with the library's words) for a source it cannot translate."""


def _gce_region_check(source: Mapping[str, Any], labels: Mapping[str, str]) -> None:
    zones_label = labels.get(BETA_ZONE_LABEL) or labels.get(GA_ZONE_LABEL, "")
    zones = zones_label.split(MULTI_ZONE_SEPARATOR)
    if len(zones) < 2:
        return
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise VolumeBindingError(
                "failed to get region from zones: zone in unexpected format, expected: "
                f"{{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        listed = " ".join(f"{region}:{{}}" for region in sorted(regions))
        raise VolumeBindingError(
            "failed to get region from zones: multiple or no regions gotten from zones, "
            f"got: map[{listed}]"
        )


def _ebs_volume_id_check(source: Mapping[str, Any], labels: Mapping[str, str]) -> None:
    volume_id = source.get("volumeID")
    volume_id = volume_id if isinstance(volume_id, str) else ""
    if not volume_id.startswith("aws://"):
        return
    prefix = "failed to translate Kubernetes ID to EBS Volume ID "
    bad_escape = _BAD_ESCAPE.search(volume_id)
    if bad_escape is not None:
        escape = volume_id[bad_escape.start() : bad_escape.start() + 3]
        raise VolumeBindingError(
            f'{prefix}Invalid disk name ({volume_id}): parse "{volume_id}": '
            f'invalid URL escape "{escape}"'
        )
    path = unquote(urlsplit(volume_id).path).strip("/")
    if not _EBS_VOLUME_ID.fullmatch(path):
        raise VolumeBindingError(f"{prefix}Invalid format for AWS volume ({volume_id})")


def _azure_kind_check(source: Mapping[str, Any], labels: Mapping[str, str]) -> None:
    kind = source.get("kind")
    if isinstance(kind, str) and kind.lower() != "managed":
        raise VolumeBindingError(f"kind({kind}) is not supported in csi migration")


@dataclass(frozen=True)
class _Migration:
    plugin: str
    """The in-tree plugin name as CSINode's migrated-plugins annotation lists it."""
    topology_key: str
    """The driver's zone key the affinity moves to (``""``: the affinity is kept)."""
    check: SourceCheck | None


_MIGRATIONS: dict[str, _Migration] = {
    "awsElasticBlockStore": _Migration(
        "kubernetes.io/aws-ebs", "topology.ebs.csi.aws.com/zone", _ebs_volume_id_check
    ),
    "gcePersistentDisk": _Migration(
        "kubernetes.io/gce-pd", "topology.gke.io/zone", _gce_region_check
    ),
    "azureDisk": _Migration("kubernetes.io/azure-disk", "", _azure_kind_check),
    "cinder": _Migration("kubernetes.io/cinder", "topology.cinder.csi.openstack.org/zone", None),
    "portworxVolume": _Migration("kubernetes.io/portworx-volume", "", None),
}
"""The in-tree sources the scheduler treats as migrated, by PV source field."""


def _migrated_on(csi_node: CSINode | None, plugin: str) -> bool:
    if csi_node is None:
        return False
    listed = csi_node.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in listed.split(",")


def _expressions(term: dict[str, Any]) -> list[dict[str, Any]]:
    expressions = term.get("matchExpressions")
    return expressions if isinstance(expressions, list) else []


def _values_of(terms: list[dict[str, Any]], key: str) -> list[str]:
    values: set[str] = set()
    for term in terms:
        for expression in _expressions(term):
            if expression.get("key") == key:
                values.update(expression.get("values") or ())
    return sorted(values)


def _uses_key(terms: list[dict[str, Any]], key: str) -> bool:
    return any(expression.get("key") == key for term in terms for expression in _expressions(term))


def _rename_key(terms: list[dict[str, Any]], old: str, new: str) -> None:
    for term in terms:
        for expression in _expressions(term):
            if expression.get("key") == old:
                expression["key"] = new


def _zone_labels(terms: list[dict[str, Any]], labels: Mapping[str, str]) -> tuple[str, str]:
    if _uses_key(terms, GA_ZONE_LABEL):
        return GA_ZONE_LABEL, GA_REGION_LABEL
    if _uses_key(terms, BETA_ZONE_LABEL):
        return BETA_ZONE_LABEL, BETA_REGION_LABEL
    if GA_ZONE_LABEL in labels:
        return GA_ZONE_LABEL, GA_REGION_LABEL
    if BETA_ZONE_LABEL in labels:
        return BETA_ZONE_LABEL, BETA_REGION_LABEL
    return GA_ZONE_LABEL, GA_REGION_LABEL


def _translated_affinity(volume: PersistentVolume, topology_key: str) -> NodeSelector | None:
    spec = volume.raw.get("spec")
    affinity = spec.get("nodeAffinity") if isinstance(spec, Mapping) else None
    required_raw = affinity.get("required") if isinstance(affinity, Mapping) else None
    required: dict[str, Any] | None = (
        copy.deepcopy(dict(required_raw)) if isinstance(required_raw, Mapping) else None
    )
    terms: list[dict[str, Any]] = list(required.get("nodeSelectorTerms") or []) if required else []
    zone_label, region_label = _zone_labels(terms, volume.labels)
    if _values_of(terms, zone_label):
        _rename_key(terms, zone_label, topology_key)
    elif zone_label in volume.labels:
        zones = sorted(
            {
                zone.strip()
                for zone in volume.labels[zone_label].split(MULTI_ZONE_SEPARATOR)
                if zone.strip()
            }
        )
        if zones:
            if not terms:
                terms = [{}]
            for term in terms:
                term["matchExpressions"] = [
                    *_expressions(term),
                    {"key": topology_key, "operator": "In", "values": zones},
                ]
    if region_label == BETA_REGION_LABEL and _values_of(terms, BETA_REGION_LABEL):
        _rename_key(terms, BETA_REGION_LABEL, GA_REGION_LABEL)
    if not terms:
        return None
    return NodeSelector.parse({"nodeSelectorTerms": terms}, "spec.nodeAffinity.required")


def node_affinity_on(volume: PersistentVolume, csi_node: CSINode | None) -> NodeSelector | None:
    """The volume's required node affinity as checked on the node whose CSINode is given.

    Raises VolumeBindingError (``could not translate pv: ...``) for a volume the translation
    library refuses.
    """
    source = volume.in_tree_source
    migration = _MIGRATIONS.get(source[0]) if source is not None else None
    if source is None or migration is None or not _migrated_on(csi_node, migration.plugin):
        return volume.node_affinity
    if migration.check is not None:
        try:
            migration.check(source[1], volume.labels)
        except VolumeBindingError as error:
            raise VolumeBindingError(f"could not translate pv: {error.message}") from error
    if not migration.topology_key:
        return volume.node_affinity
    return _translated_affinity(volume, migration.topology_key)
