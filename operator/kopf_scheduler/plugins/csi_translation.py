"""In-tree volumes read as CSI volumes: the translation the scheduler's volume plugins share.

Kubernetes hands the work of most in-tree volume plugins to CSI drivers. A node that has done so
for a plugin lists the plugin in its CSINode's ``storage.alpha.kubernetes.io/migrated-plugins``
annotation. On the nodes each plugin takes as migrated (below: not the same nodes for both), the
scheduler reads the plugin's volumes as Kubernetes' csi-translation library rewrites them for the
driver: NodeVolumeLimits counts them against the driver's attach limit by their CSI volume
handle, VolumeBinding checks a bound PV's node affinity as rewritten. The facts of the library
both plugins read live here, once:

- the seven in-tree plugins the library translates (:data:`IN_TREE_PLUGINS`): the volume source
  field, the plugin's name (also a StorageClass provisioner) and its CSI driver;
- which of them the scheduler honours as migrated: AWS EBS, GCE PD, Azure Disk, Cinder and
  Portworx (its gate is locked on in v1.34). Azure File and vSphere never are;
- on which node. For VolumeBinding (:func:`is_migration_on`): the one whose CSINode lists the
  plugin. The annotation is split on commas and its entries are compared exactly as written,
  spaces included. For NodeVolumeLimits (:func:`is_counted_as_migrated`): any node with a CSINode
  for the four plugins whose migration is GA (AWS EBS, GCE PD, Azure Disk, Cinder), whatever the
  annotation says, and a node whose CSINode lists it for Portworx, as v1.34.10's plugin decides;
- the CSI volume handle of an in-tree source (:func:`csi_volume_handle`): the EBS volume ID (from
  ``vol-...`` or ``aws://<zone>/vol-...``), ``projects/UNSPECIFIED/zones/<zone>/disks/<disk>``
  for a GCE PD (``regions/<region>`` when its zone label lists several zones of one region,
  ``UNSPECIFIED`` without a zone), the Azure disk's URI, the Cinder or Portworx volume ID;
- the node affinity of a translated PV (:func:`migrated_node_affinity`). AWS EBS, GCE PD and
  Cinder move the volume's zone to their driver's topology key; Azure Disk and Portworx PVs keep
  their affinity. The zone key is the GA ``topology.kubernetes.io/zone`` if the affinity uses
  it, else the beta ``failure-domain.beta.kubernetes.io/zone`` if the affinity uses that, else
  whichever of the two the PV's labels carry (GA first), else GA. If the affinity has values for
  that key, the key is renamed to the driver's in every term; otherwise the PV's zone label
  (``__`` separates zones, which are trimmed) becomes ``<driver key> In <zones>`` appended to
  every term (one new term when there are none). With the beta zone key, a beta region key in
  the affinity is renamed to the GA region key;
- the sources the library refuses, with its words (:class:`TranslationError`): an Azure disk
  whose ``kind`` is not ``Managed`` (in any case), an EBS volume ID of the ``aws://`` form that
  Go's URL parser rejects or whose path is not ``vol-...``, and a GCE PD whose zone label lists
  several zones that are not all ``{locale}-{region}-{zone}`` in one region.

The URL checks are those of Go's parser that an ``aws://`` ID can meet: control characters, the
host's characters, port and percent escapes, the user information, and the percent escapes of the
path and the fragment. Brackets in the host are checked only for the closing one and the port
after it: what Go's parser says beyond that differs between Go releases.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from kopf_scheduler.model.node import (
    LEGACY_REGION_LABEL,
    LEGACY_ZONE_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from kopf_scheduler.model.selectors import NodeSelector
from kopf_scheduler.model.storage import MULTI_ZONE_DELIMITER, CSINode, PersistentVolume

_UNSPECIFIED = "UNSPECIFIED"
_GCE_ZONAL_HANDLE = "projects/{project}/zones/{zone}/disks/{disk}"
_GCE_REGIONAL_HANDLE = "projects/{project}/regions/{region}/disks/{disk}"
_AZURE_MANAGED_KIND = "managed"

_AWS_URL_PREFIX = "aws://"
_EBS_VOLUME_ID = re.compile(r"vol-[^/]*")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HOST_PUNCTUATION = frozenset("!$&'()*+,;=:[]<>\"-_.~")
"""ASCII characters besides letters and digits that Go's URL parser accepts in a host."""
_USERINFO_PUNCTUATION = frozenset("-._:~!$&'()*+,;=%@")
_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


class TranslationError(Exception):
    """An in-tree source the translation library refuses; the message is the library's."""


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
    """How a volume's handle is computed; ``None`` for the plugins whose migration the scheduler
    never honours (nothing of theirs is ever translated)."""
    topology_key: str = ""
    """The driver's zone key a translated PV's affinity moves to; ``""``: the affinity is kept."""


# Go's URL parser, as far as an ``aws://`` volume ID meets it ---------------------------------


def _go_quoted(text: str) -> str:
    """``text`` as Go's ``%q`` writes it; bytes that are not UTF-8 (surrogate-escaped, as
    ``bytes.decode(errors="surrogateescape")`` leaves them) become ``\\xNN``."""
    quoted: list[str] = []
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            quoted.append(_GO_ESCAPES[char])
        elif 0xDC80 <= code <= 0xDCFF:
            quoted.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            quoted.append(char)
        elif code < 0x80:
            quoted.append(f"\\x{code:02x}")
        elif code < 0x10000:
            quoted.append(f"\\u{code:04x}")
        else:
            quoted.append(f"\\U{code:08x}")
    return '"' + "".join(quoted) + '"'


def _unescape_error(text: str, *, host: bool = False) -> str | None:
    """Why Go refuses to unescape ``text`` (``None``: it does not). Go reads bytes, so a bad
    escape is quoted as its first three bytes. A host may escape only non-ASCII bytes (and
    ``%25``), and only some ASCII characters may stand in it unescaped."""
    data = text.encode(errors="surrogatepass")
    index = 0
    while index < len(data):
        byte = data[index]
        if byte == ord("%"):
            escape = data[index : index + 3]
            malformed = len(escape) < 3 or not all(chr(b) in _HEX_DIGITS for b in escape[1:])
            if malformed or (host and chr(escape[1]) in "01234567" and escape != b"%25"):
                return f"invalid URL escape {_go_quoted(escape.decode(errors='surrogateescape'))}"
            index += 3
            continue
        char = chr(byte)
        if host and byte < 0x80 and not (char.isalnum() or char in _HOST_PUNCTUATION):
            return f"invalid character {_go_quoted(char)} in host name"
        index += 1
    return None


def _valid_port(port: str) -> bool:
    """``""`` or ``:`` followed by ASCII digits."""
    return not port or (port[0] == ":" and all("0" <= char <= "9" for char in port[1:]))


def _host_error(host: str) -> str | None:
    if host.startswith("["):
        closing = host.rfind("]")
        if closing < 0:
            return "missing ']' in host"
        port = host[closing + 1 :]
    else:
        colon = host.rfind(":")
        port = host[colon:] if colon >= 0 else ""
    if not _valid_port(port):
        return f"invalid port {_go_quoted(port)} after host"
    return None if host.startswith("[") else _unescape_error(host, host=True)


def _userinfo_error(userinfo: str) -> str | None:
    if not all(
        (char.isascii() and char.isalnum()) or char in _USERINFO_PUNCTUATION for char in userinfo
    ):
        return "net/url: invalid userinfo"
    for part in userinfo.split(":", 1):
        error = _unescape_error(part)
        if error is not None:
            return error
    return None


@dataclass(frozen=True)
class _AwsUrl:
    """An ``aws://`` ID cut where Go's parser cuts it."""

    raw: str
    url: str
    """The ID without its fragment (what Go quotes in most parse errors)."""
    authority: str
    path: str
    """Still escaped, without its leading slash."""
    fragment: str | None

    @classmethod
    def split(cls, kubernetes_id: str) -> _AwsUrl:
        url, has_fragment, fragment = kubernetes_id.partition("#")
        rest = url[len(_AWS_URL_PREFIX) :].partition("?")[0]
        authority, _, path = rest.partition("/")
        return cls(kubernetes_id, url, authority, path, fragment if has_fragment else None)

    def parse_error(self) -> str | None:
        """Go's ``url.Parse`` error for the ID, or ``None`` when it parses."""
        if any(char < " " or char == "\x7f" for char in self.url):
            return self._parse_error(self.url, "net/url: invalid control character in URL")
        userinfo, has_userinfo, host = self.authority.rpartition("@")
        error = (
            _host_error(host)
            or (_userinfo_error(userinfo) if has_userinfo else None)
            or _unescape_error(self.path)
        )
        if error is not None:
            return self._parse_error(self.url, error)
        fragment_error = _unescape_error(self.fragment) if self.fragment is not None else None
        if fragment_error is not None:
            return self._parse_error(self.raw, fragment_error)
        return None

    @staticmethod
    def _parse_error(url: str, error: str) -> str:
        return f"parse {_go_quoted(url)}: {error}"


# Volume handles --------------------------------------------------------------------------------


def _ebs_volume_id(kubernetes_id: str) -> str:
    """The EBS volume ID of a bare ID (taken as it is) or of the ``aws://<zone>/vol-...`` form."""
    if not kubernetes_id.startswith(_AWS_URL_PREFIX):
        return kubernetes_id
    url = _AwsUrl.split(kubernetes_id)
    parse_error = url.parse_error()
    if parse_error is not None:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {parse_error}")
    volume_id = unquote(url.path).strip("/")
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
        listed = " ".join(f"{region}:{{}}" for region in sorted(regions))
        raise TranslationError(f"multiple or no regions gotten from zones, got: map[{listed}]")
    return regions.pop()


def _gce_pd_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """A PV's handle names its zone (or its region when labelled with several zones); an
    inline volume has no labels, so its zone is left unspecified."""
    disk = str(source.get("pdName") or "")
    zones = (labels.get(LEGACY_ZONE_LABEL) or labels.get(ZONE_LABEL) or "").split(
        MULTI_ZONE_DELIMITER
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
    if kind is not None and str(kind).lower() != _AZURE_MANAGED_KIND:
        raise TranslationError(f"kind({kind}) is not supported in csi migration")
    return str(source.get("diskURI") or "")


def _volume_id_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    return str(source.get("volumeID") or "")


IN_TREE_PLUGINS: tuple[InTreePlugin, ...] = (
    InTreePlugin(
        "awsElasticBlockStore",
        "kubernetes.io/aws-ebs",
        "ebs.csi.aws.com",
        _aws_ebs_handle,
        "topology.ebs.csi.aws.com/zone",
    ),
    InTreePlugin(
        "gcePersistentDisk",
        "kubernetes.io/gce-pd",
        "pd.csi.storage.gke.io",
        _gce_pd_handle,
        "topology.gke.io/zone",
    ),
    InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", _azure_disk_handle),
    InTreePlugin(
        "cinder",
        "kubernetes.io/cinder",
        "cinder.csi.openstack.org",
        _volume_id_handle,
        "topology.cinder.csi.openstack.org/zone",
    ),
    InTreePlugin(
        "portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com", _volume_id_handle
    ),
    InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com", None),
    InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", None),
)

_BY_SOURCE = {plugin.source: plugin for plugin in IN_TREE_PLUGINS}
_BY_NAME = {plugin.name: plugin for plugin in IN_TREE_PLUGINS}


def plugin_for_source(source: str) -> InTreePlugin | None:
    """The translatable in-tree plugin serving a volume source field, if any."""
    return _BY_SOURCE.get(source)


def plugin_named(name: str) -> InTreePlugin | None:
    """The translatable in-tree plugin called ``name`` (a StorageClass provisioner), if any."""
    return _BY_NAME.get(name)


def is_migration_on(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """Whether the node's CSINode says ``plugin``'s volumes are served by its CSI driver.

    Only plugins the scheduler honours qualify (Azure File and vSphere never do); without a
    CSINode nothing is migrated.
    """
    if csi_node is None or plugin.volume_handle is None:
        return False
    return plugin.name in csi_node.migrated_plugins


_MIGRATED_WHEREVER_CSI_NODE = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
    }
)
"""The plugins NodeVolumeLimits reads as migrated on every node that has a CSINode."""


def is_counted_as_migrated(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """Whether NodeVolumeLimits counts ``plugin``'s volumes under its CSI driver on the node whose
    CSINode is given: without a CSINode never; AWS EBS, GCE PD, Azure Disk and Cinder on any
    CSINode, listed or not; Portworx where listed; Azure File and vSphere never."""
    if csi_node is None:
        return False
    if plugin.name in _MIGRATED_WHEREVER_CSI_NODE:
        return True
    return is_migration_on(csi_node, plugin)


def csi_volume_handle(
    plugin: InTreePlugin, source: Mapping[str, Any], labels: Mapping[str, str]
) -> str | None:
    """The CSI volume handle of ``plugin``'s in-tree ``source`` (``labels``: the PV's, empty for
    an inline volume); TranslationError when the library refuses the source. ``None`` for the
    plugins the scheduler never honours: their translation cannot fail and nothing reads it."""
    if plugin.volume_handle is None:
        return None
    return plugin.volume_handle(source, labels)


# Node affinity ---------------------------------------------------------------------------------


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
    if _uses_key(terms, ZONE_LABEL):
        return ZONE_LABEL, REGION_LABEL
    if _uses_key(terms, LEGACY_ZONE_LABEL):
        return LEGACY_ZONE_LABEL, LEGACY_REGION_LABEL
    if ZONE_LABEL in labels:
        return ZONE_LABEL, REGION_LABEL
    if LEGACY_ZONE_LABEL in labels:
        return LEGACY_ZONE_LABEL, LEGACY_REGION_LABEL
    return ZONE_LABEL, REGION_LABEL


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
                for zone in volume.labels[zone_label].split(MULTI_ZONE_DELIMITER)
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
    if region_label == LEGACY_REGION_LABEL and _values_of(terms, LEGACY_REGION_LABEL):
        _rename_key(terms, LEGACY_REGION_LABEL, REGION_LABEL)
    if not terms:
        return None
    return NodeSelector.parse({"nodeSelectorTerms": terms}, "spec.nodeAffinity.required")


def migrated_node_affinity(
    volume: PersistentVolume, csi_node: CSINode | None
) -> NodeSelector | None:
    """The PV's required node affinity as checked on the node whose CSINode is given.

    An in-tree PV of a plugin the node has migrated is translated (TranslationError when the
    library refuses it) and its affinity rewritten for the driver; any other PV keeps its own.
    """
    in_tree = volume.in_tree_source
    plugin = plugin_for_source(in_tree[0]) if in_tree is not None else None
    if in_tree is None or plugin is None or not is_migration_on(csi_node, plugin):
        return volume.node_affinity
    csi_volume_handle(plugin, in_tree[1], volume.labels)  # where the library refuses a volume
    if not plugin.topology_key:
        return volume.node_affinity
    return _translated_affinity(volume, plugin.topology_key)
