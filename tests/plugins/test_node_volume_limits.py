"""NodeVolumeLimits: CSI attach limits from CSINode counts, volumes identified by driver and
handle (bound claims, unbound claims through their class, migrated in-tree PVs and inline
volumes, generic ephemeral volumes), VolumeAttachments, the PreFilter skip and the queueing
hints. The main table restates upstream's csi_test.go cases; rows after it cover rules the Go
table leaves implicit.

The fixture world mirrors upstream's: for every driver of a case, four claims ``<driver>-<i>``
each naming a PV of the same name (a CSI PV whose handle is its name, an AWS EBS PV for the
in-tree plugin, a hostPath PV for the non-migratable one), plus the claims ``unbound`` (class
``csi-sc``, no volume), ``no-class`` and ``missing-pv`` (class ``csi-sc``, naming a PV that does
not exist). ``csi-sc`` provisions with the case's first driver. The node's CSINode, when there
is one, lists every driver of the case (with the case's count or none) and marks the AWS EBS
in-tree plugin as migrated.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.storage_cache import CSI_NODE_KIND
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, HintFn, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from kopf_scheduler.model.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
)
from kopf_scheduler.plugins import node_volume_limits
from kopf_scheduler.plugins.csi_translation import (
    IN_TREE_PLUGINS,
    TranslationError,
    csi_volume_handle,
    is_migration_on,
    plugin_for_source,
)
from kopf_scheduler.plugins.node_volume_limits import REASON_MAX_VOLUME_COUNT, NodeVolumeLimits
from tests.builders import PodBuilder, make_node, make_pod, node_info
from tests.storage_builders import (
    make_attachment,
    make_claim,
    make_class,
    make_csi_node,
    make_volume,
)

NODE = "node-for-limits"
CLASS = "csi-sc"
PREFIX = "prefix"
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
IN_TREE_EBS = "kubernetes.io/aws-ebs"
IN_TREE_PORTWORX = "kubernetes.io/portworx-volume"
PORTWORX = "pxd.portworx.com"
HOSTPATH = "kubernetes.io/hostpath"

LIMITED = "limited"
"""The CSINode lists the case's drivers with ``allocatable.count`` = the case's limit."""
UNLIMITED = "unlimited"
"""The CSINode lists the case's drivers without a count."""
NO_CSI_NODE = "no-csi-node"

_SHORT_NAMES = {EBS: "ebs", GCE: "gce", IN_TREE_EBS: "intree-ebs", HOSTPATH: "hostpath"}

TOO_MANY = Status(Code.UNSCHEDULABLE, REASON_MAX_VOLUME_COUNT)


def _fixture_name(driver: str, index: int) -> str:
    return f"{_SHORT_NAMES[driver]}-{index}"


def _fixture_volume(driver: str, index: int) -> PersistentVolume:
    name = _fixture_name(driver, index)
    builder = make_volume(name)
    if driver == IN_TREE_EBS:
        builder.source("awsElasticBlockStore", volumeID=name)
    elif driver == HOSTPATH:
        builder.source("hostPath", path="/tmp")
    else:
        builder.csi(driver, name)
    return builder.volume()


def _handle(
    drivers: list[str],
    limit_source: str = LIMITED,
    limit: int = 0,
    attachments_per_driver: int = 0,
    extra_claims: Iterable[PersistentVolumeClaim] = (),
) -> Handle:
    handle = Handle()
    storage = handle.storage
    for driver in drivers:
        for index in range(4):
            name = _fixture_name(driver, index)
            storage.claims.upsert(make_claim(name).volume_name(name).claim())
            storage.volumes.upsert(_fixture_volume(driver, index))
        for index in range(attachments_per_driver):
            name = _fixture_name(driver, index)
            storage.attachments[f"va-{name}"] = make_attachment(f"va-{name}", driver, NODE, name)
    storage.claims.upsert(make_claim("unbound").storage_class(CLASS).claim())
    storage.claims.upsert(make_claim("no-class").claim())
    storage.claims.upsert(
        make_claim("missing-pv").storage_class(CLASS).volume_name("missing-in-action").claim()
    )
    for claim in extra_claims:
        storage.claims.upsert(claim)
    storage.classes[CLASS] = make_class(CLASS).provisioner(drivers[0]).storage_class()
    if limit_source != NO_CSI_NODE:
        counts: dict[str, int | None] = {
            driver: limit if limit_source == LIMITED else None for driver in drivers
        }
        storage.csi_nodes[NODE] = make_csi_node(NODE, counts, migrated=IN_TREE_EBS)
        storage.changed(CSI_NODE_KIND, NODE)
    return handle


def _claims(*names: str) -> PodBuilder:
    builder = make_pod("p")
    for name in names:
        builder.claim(name)
    return builder


def _ebs_inline(volume_id: str) -> PodBuilder:
    return make_pod("inline").volume("ebs", awsElasticBlockStore={"volumeID": volume_id})


def _ephemeral_pod(uid: str, *volumes: str) -> PodBuilder:
    builder = make_pod("abc", "test").uid(uid)
    for volume in volumes:
        builder.ephemeral(volume, storage_class=CLASS)
    return builder


def _ephemeral_claim(name: str, owner_uid: str | None) -> PersistentVolumeClaim:
    builder = make_claim(name, "test").storage_class(CLASS)
    if owner_uid is not None:
        builder.owned_by("Pod", "abc", owner_uid)
    return builder.claim()


def _config_and_secret(builder: PodBuilder) -> PodBuilder:
    return builder.volume("config", configMap={"name": "cm"}).volume(
        "secret", secret={"secretName": "s"}
    )


RUNNING = _claims("ebs-3")
UNBOUND = _claims("unbound")
MISSING_PV = _claims("missing-pv")
NO_CLASS = _claims("no-class")
GCE_TWO = _claims("gce-1", "gce-2")
IN_TREE_ONE = _claims("intree-ebs-0")
IN_TREE_TWO = _claims("intree-ebs-1", "intree-ebs-2")
EBS_ONE = _claims("ebs-0")
EBS_TWO = _claims("ebs-1", "ebs-2")
HOSTPATH_ONE = _claims("hostpath-0")
EBS_INLINE = _ebs_inline("aws-inline1")
EBS_INLINE_SAME_HANDLE_AS_EBS_1 = _ebs_inline("ebs-1")
EPHEMERAL = _ephemeral_pod("12345", "xyz")
EPHEMERAL_CLAIM = _ephemeral_claim("abc-xyz", "12345")
FOREIGN_EPHEMERAL_CLAIM = _ephemeral_claim("abc-xyz", None)
EPHEMERAL_TWO = _ephemeral_pod("12345II", "x", "y")
EPHEMERAL_TWO_CLAIMS = (_ephemeral_claim("abc-x", "12345II"), _ephemeral_claim("abc-y", "12345II"))
MISSING_EPHEMERAL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',
)
"""The informer's lister names the resource in the singular (upstream's fake lister, used by
its table, says ``persistentvolumeclaims``)."""


def _run(
    handle: Handle, new_pod: PodBuilder, existing: Iterable[PodBuilder]
) -> tuple[Status, Status | None]:
    """PreFilter, then Filter unless PreFilter skipped; returns both statuses."""
    plugin = NodeVolumeLimits(handle, PREFIX)
    pod = new_pod.pod()
    state = CycleState()
    result, pre_filter = plugin.pre_filter(state, pod, [])
    assert result is None
    if pre_filter.is_skip():
        return pre_filter, None
    return pre_filter, plugin.filter(state, pod, node_info(make_node(NODE), *existing))


@pytest.mark.parametrize(
    ("new_pod", "existing", "drivers", "limit_source", "limit", "attachments", "extra", "want"),
    [
        pytest.param(
            EBS_ONE, [], [EBS], LIMITED, 2, 2, (), TOO_MANY, id="attachments-count-without-pods"
        ),
        pytest.param(EBS_ONE, [], [EBS], LIMITED, 2, 1, (), SUCCESS, id="attachments-within-limit"),
        pytest.param(
            EBS_ONE, [RUNNING, EBS_TWO], [EBS], LIMITED, 4, 0, (), SUCCESS, id="fits-under-limit"
        ),
        pytest.param(
            EBS_ONE, [RUNNING, EBS_TWO], [EBS], LIMITED, 2, 0, (), TOO_MANY, id="exceeds-limit"
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EBS_TWO],
            [EBS],
            UNLIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="driver-without-count",
        ),
        pytest.param(
            EBS_ONE,
            [UNBOUND, EBS_TWO],
            [EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="unbound-claim-counts-through-class",
        ),
        pytest.param(
            EBS_ONE,
            [UNBOUND, _claims("unbound"), EBS_TWO],
            [EBS],
            LIMITED,
            4,
            0,
            (),
            SUCCESS,
            id="unbound-claim-shared-by-two-pods-counts-once",
        ),
        pytest.param(
            EBS_ONE,
            [MISSING_PV, EBS_TWO],
            [EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="claim-naming-missing-pv-counts-through-class",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, NO_CLASS],
            [EBS],
            LIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="claim-without-class-not-counted",
        ),
        pytest.param(
            EBS_ONE,
            [GCE_TWO, EBS_TWO],
            [EBS, GCE],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="same-driver-counts",
        ),
        pytest.param(
            GCE_TWO,
            [EBS_TWO, RUNNING],
            [EBS, GCE],
            LIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="other-driver-does-not-count",
        ),
        pytest.param(
            IN_TREE_ONE,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="migrated-in-tree-pvs-count",
        ),
        pytest.param(
            EBS_INLINE,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            NO_CSI_NODE,
            0,
            0,
            (),
            SUCCESS,
            id="no-csi-node",
        ),
        pytest.param(
            UNBOUND,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="unbound-claim-of-migrated-in-tree-provisioner-counts",
        ),
        pytest.param(
            IN_TREE_ONE,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            UNLIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="migrated-in-tree-driver-without-count",
        ),
        pytest.param(
            HOSTPATH_ONE,
            [EBS_TWO],
            [HOSTPATH, EBS],
            LIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="non-migratable-in-tree-pv-not-counted",
        ),
        pytest.param(
            EBS_INLINE,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="migrated-inline-volume-counts",
        ),
        pytest.param(
            IN_TREE_ONE,
            [EBS_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="in-tree-pv-against-csi-volumes",
        ),
        pytest.param(
            EBS_INLINE,
            [EBS_TWO, IN_TREE_ONE],
            [IN_TREE_EBS, EBS],
            LIMITED,
            3,
            0,
            (),
            TOO_MANY,
            id="inline-against-in-tree-and-csi-volumes",
        ),
        pytest.param(
            EBS_INLINE_SAME_HANDLE_AS_EBS_1,
            [EBS_TWO, IN_TREE_ONE],
            [IN_TREE_EBS, EBS],
            LIMITED,
            3,
            0,
            (),
            SUCCESS,
            id="inline-volume-already-used-on-node-is-free",
        ),
        pytest.param(
            EBS_ONE,
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="csi-volume-against-in-tree-pvs",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            [EBS],
            UNLIMITED,
            0,
            0,
            (),
            MISSING_EPHEMERAL,
            id="ephemeral-claim-missing",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            [EBS],
            UNLIMITED,
            0,
            0,
            (FOREIGN_EPHEMERAL_CLAIM,),
            Status(
                Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"
            ),
            id="ephemeral-claim-not-owned",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            [EBS],
            UNLIMITED,
            0,
            0,
            (EPHEMERAL_CLAIM,),
            SUCCESS,
            id="ephemeral-claim-unbound",
        ),
        pytest.param(
            EPHEMERAL,
            [RUNNING, EBS_TWO],
            [EBS],
            LIMITED,
            2,
            0,
            (EPHEMERAL_CLAIM,),
            TOO_MANY,
            id="ephemeral-exceeds-limit",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL_TWO],
            [EBS],
            LIMITED,
            2,
            0,
            EPHEMERAL_TWO_CLAIMS,
            TOO_MANY,
            id="existing-ephemeral-volumes-count",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL, EBS_TWO],
            [EBS],
            LIMITED,
            3,
            0,
            (EPHEMERAL_CLAIM,),
            TOO_MANY,
            id="ephemeral-and-persistent-exceed-limit",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL, EBS_TWO],
            [EBS],
            LIMITED,
            5,
            0,
            (EPHEMERAL_CLAIM,),
            SUCCESS,
            id="ephemeral-and-persistent-within-limit",
        ),
        pytest.param(
            _config_and_secret(make_pod("p")).claim("ebs-0"),
            [],
            [EBS],
            LIMITED,
            2,
            0,
            (),
            SUCCESS,
            id="claim-beside-config-and-secret",
        ),
        pytest.param(
            _config_and_secret(make_pod("abc", "test")).ephemeral("xyz", storage_class=CLASS),
            [],
            [EBS],
            UNLIMITED,
            0,
            0,
            (),
            MISSING_EPHEMERAL,
            id="ephemeral-beside-config-and-secret",
        ),
        pytest.param(
            _config_and_secret(make_pod("p")).volume(
                "ebs", awsElasticBlockStore={"volumeID": "aws-inline1"}
            ),
            [IN_TREE_TWO],
            [IN_TREE_EBS, EBS],
            LIMITED,
            2,
            0,
            (),
            TOO_MANY,
            id="inline-migratable-beside-config-and-secret",
        ),
    ],
)
def test_filter(
    new_pod: PodBuilder,
    existing: list[PodBuilder],
    drivers: list[str],
    limit_source: str,
    limit: int,
    attachments: int,
    extra: tuple[PersistentVolumeClaim, ...],
    want: Status,
) -> None:
    handle = _handle(drivers, limit_source, limit, attachments, extra)
    pre_filter, status = _run(handle, new_pod, existing)
    assert pre_filter == SUCCESS
    assert status == want


def test_pre_filter_skips_pod_with_only_config_and_secret() -> None:
    pre_filter, status = _run(_handle([EBS], LIMITED, 2), _config_and_secret(make_pod("p")), [])
    assert pre_filter == SKIP
    assert status is None


@pytest.mark.parametrize(
    ("volume", "want"),
    [
        pytest.param({"persistentVolumeClaim": {"claimName": "c"}}, SUCCESS, id="claim"),
        pytest.param({"ephemeral": {"volumeClaimTemplate": {"spec": {}}}}, SUCCESS, id="ephemeral"),
        *(
            pytest.param({plugin.source: {}}, SUCCESS, id=f"inline-{plugin.source}")
            for plugin in IN_TREE_PLUGINS
        ),
        pytest.param({"rbd": {"image": "i"}}, SKIP, id="inline-rbd-has-no-csi-driver"),
        pytest.param({"csi": {"driver": EBS}}, SKIP, id="inline-csi-ephemeral-volume"),
        pytest.param({"emptyDir": {}}, SKIP, id="empty-dir"),
    ],
)
def test_pre_filter(volume: dict[str, Any], want: Status) -> None:
    plugin = NodeVolumeLimits(Handle(), PREFIX)
    pod = make_pod("p").volume("v", **volume).pod()
    assert plugin.pre_filter(CycleState(), pod, []) == (None, want)


def _limited_handle(limits: dict[str, int | None], *migrated: str) -> Handle:
    handle = Handle()
    handle.storage.csi_nodes[NODE] = make_csi_node(NODE, limits, migrated=",".join(migrated))
    handle.storage.changed(CSI_NODE_KIND, NODE)
    handle.storage.classes[CLASS] = make_class(CLASS).provisioner(EBS).storage_class()
    return handle


def _add_csi_claim(
    handle: Handle, name: str, driver: str = EBS, namespace: str = "default"
) -> None:
    handle.storage.claims.upsert(make_claim(name, namespace).volume_name(name).claim())
    handle.storage.volumes.upsert(make_volume(name).csi(driver, f"handle-{name}").volume())


def _filter(handle: Handle, pod: PodBuilder, *existing: PodBuilder) -> Status:
    plugin = NodeVolumeLimits(handle, PREFIX)
    return plugin.filter(CycleState(), pod.pod(), node_info(make_node(NODE), *existing))


def test_zero_count_admits_nothing_of_that_driver() -> None:
    handle = _limited_handle({EBS: 0, GCE: 5})
    _add_csi_claim(handle, "ebs")
    _add_csi_claim(handle, "gce", GCE)
    assert _filter(handle, _claims("ebs")) == TOO_MANY
    assert _filter(handle, _claims("gce")) == SUCCESS


def test_limit_applies_per_driver_only_where_published() -> None:
    handle = _limited_handle({EBS: 1, GCE: None})
    for name in ("e1", "e2"):
        _add_csi_claim(handle, name)
    for name in ("g1", "g2", "g3"):
        _add_csi_claim(handle, name, GCE)
    assert _filter(handle, _claims("g3"), _claims("g1", "g2"), _claims("e1")) == SUCCESS
    assert _filter(handle, _claims("e2"), _claims("e1")) == TOO_MANY


def test_attachment_of_volume_used_by_a_pod_on_the_node_counts_once() -> None:
    handle = _limited_handle({EBS: 2})
    for name in ("a", "b"):
        _add_csi_claim(handle, name)
    handle.storage.attachments["va-a"] = make_attachment("va-a", EBS, NODE, "a")
    assert _filter(handle, _claims("b"), _claims("a")) == SUCCESS


def test_two_attachments_of_one_volume_count_once() -> None:
    """Attachments are counted by volume, not by VolumeAttachment object."""
    handle = _limited_handle({EBS: 2})
    for name in ("attached", "new"):
        _add_csi_claim(handle, name)
    for key in ("va-1", "va-2"):
        handle.storage.attachments[key] = make_attachment(key, EBS, NODE, "attached")
    assert _filter(handle, _claims("new")) == SUCCESS


def test_attachments_of_two_volumes_with_one_handle_count_once() -> None:
    handle = _limited_handle({EBS: 2})
    _add_csi_claim(handle, "new")
    for name in ("pv-1", "pv-2"):
        handle.storage.volumes.upsert(make_volume(name).csi(EBS, "shared-handle").volume())
        handle.storage.attachments[name] = make_attachment(name, EBS, NODE, name)
    assert _filter(handle, _claims("new")) == SUCCESS


def test_attached_volume_of_the_incoming_pod_counts_twice_without_a_pod_using_it() -> None:
    """Only volumes of pods on the node are subtracted from the new ones, as upstream does."""
    handle = _limited_handle({EBS: 1})
    _add_csi_claim(handle, "a")
    handle.storage.attachments["va-a"] = make_attachment("va-a", EBS, NODE, "a")
    assert _filter(handle, _claims("a")) == TOO_MANY


@pytest.mark.parametrize(
    "attachment",
    [
        pytest.param(make_attachment("va", EBS, "other-node", "csi-pv"), id="other-node"),
        pytest.param(make_attachment("va", EBS, NODE, "unknown-pv"), id="unknown-pv"),
        pytest.param(make_attachment("va", EBS, NODE, "in-tree-pv"), id="in-tree-pv"),
    ],
)
def test_attachments_not_counted(attachment: Any) -> None:
    handle = _limited_handle({EBS: 1}, IN_TREE_EBS)
    _add_csi_claim(handle, "new")
    handle.storage.volumes.upsert(make_volume("csi-pv").csi(EBS, "h").volume())
    handle.storage.volumes.upsert(
        make_volume("in-tree-pv").source("awsElasticBlockStore", volumeID="vol-1").volume()
    )
    handle.storage.attachments["va"] = attachment
    assert _filter(handle, _claims("new")) == SUCCESS


def test_attachment_counts_under_its_attacher_with_the_pv_handle() -> None:
    """An attachment names its attacher; the PV only gives the handle."""
    handle = _limited_handle({EBS: 1, "other.csi": 5})
    _add_csi_claim(handle, "new")
    handle.storage.volumes.upsert(make_volume("pv").csi("other.csi", "h").volume())
    handle.storage.attachments["va"] = make_attachment("va", EBS, NODE, "pv")
    assert _filter(handle, _claims("new")) == TOO_MANY


def test_existing_pod_with_missing_claim_is_not_counted() -> None:
    handle = _limited_handle({EBS: 1})
    _add_csi_claim(handle, "new")
    assert _filter(handle, _claims("new"), _claims("gone")) == SUCCESS


def test_existing_pod_with_foreign_ephemeral_claim_is_an_error() -> None:
    handle = _limited_handle({EBS: 1})
    _add_csi_claim(handle, "new")
    handle.storage.claims.upsert(_ephemeral_claim("abc-xyz", "someone-else"))
    status = _filter(handle, _claims("new"), EPHEMERAL)
    assert status == Status(
        Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"
    )


def test_missing_claim_rejects_even_a_node_without_limits() -> None:
    handle = Handle()
    status = _filter(handle, _claims("absent"))
    assert status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'looking up PVC default/absent: persistentvolumeclaim "absent" not found',
    )


def test_claims_are_read_as_the_api_reported_them() -> None:
    """An assumed claim (volume binding in flight) does not change what is counted."""
    handle = _limited_handle({EBS: 1, "other.csi": 5})
    _add_csi_claim(handle, "a")
    _add_csi_claim(handle, "b")
    handle.storage.volumes.upsert(make_volume("elsewhere").csi("other.csi", "x").volume())
    stored = handle.storage.claims.get("default/a")
    assert stored is not None
    handle.storage.claims.assume(
        make_claim("a").volume_name("elsewhere").version(stored.resource_version).claim()
    )
    assert _filter(handle, _claims("b"), _claims("a")) == TOO_MANY


@pytest.mark.parametrize(
    ("prefix", "want"),
    [
        pytest.param(PREFIX, SUCCESS, id="handle-spelled-out-matches"),
        pytest.param("another", TOO_MANY, id="other-prefix-no-match"),
    ],
)
def test_unbound_claim_handle_is_prefix_namespace_and_name(prefix: str, want: Status) -> None:
    """An unbound claim's handle is ``<prefix>-<namespace>/<name>``; only a real volume whose
    handle spells out the instance's prefix could be mistaken for it."""
    handle = _limited_handle({EBS: 1})
    handle.storage.claims.upsert(make_claim("unbound").storage_class(CLASS).claim())
    handle.storage.claims.upsert(make_claim("real").volume_name("real").claim())
    handle.storage.volumes.upsert(make_volume("real").csi(EBS, "prefix-default/unbound").volume())
    plugin = NodeVolumeLimits(handle, prefix)
    status = plugin.filter(
        CycleState(), _claims("unbound").pod(), node_info(make_node(NODE), _claims("real"))
    )
    assert status == want


@pytest.mark.parametrize(
    ("provisioner", "want"),
    [
        pytest.param(EBS, TOO_MANY, id="csi-provisioner"),
        pytest.param(IN_TREE_EBS, TOO_MANY, id="migrated-in-tree-provisioner"),
        pytest.param("kubernetes.io/gce-pd", TOO_MANY, id="in-tree-provisioner-not-listed"),
        pytest.param(IN_TREE_PORTWORX, SUCCESS, id="portworx-provisioner-not-listed"),
        pytest.param("kubernetes.io/azure-file", SUCCESS, id="never-migrated-provisioner"),
        pytest.param("", SUCCESS, id="no-provisioner"),
    ],
)
def test_unbound_claim_driver_from_class(provisioner: str, want: Status) -> None:
    handle = _limited_handle({EBS: 0, GCE: 0, PORTWORX: 0, "file.csi.azure.com": 0}, IN_TREE_EBS)
    handle.storage.classes["c"] = make_class("c").provisioner(provisioner).storage_class()
    handle.storage.claims.upsert(make_claim("unbound").storage_class("c").claim())
    assert _filter(handle, _claims("unbound")) == want


def test_claim_with_unknown_class_is_not_counted() -> None:
    handle = _limited_handle({EBS: 0})
    handle.storage.claims.upsert(make_claim("unbound").storage_class("nowhere").claim())
    assert _filter(handle, _claims("unbound")) == SUCCESS


def test_ebs_volumes_count_on_a_csi_node_that_does_not_list_the_plugin() -> None:
    """v1.34.10's NodeVolumeLimits reads AWS EBS (as GCE PD, Azure Disk and Cinder) as migrated
    on every node with a CSINode, without reading its annotation."""
    handle = _limited_handle({EBS: 1}, "kubernetes.io/gce-pd")
    handle.storage.claims.upsert(make_claim("old").volume_name("old").claim())
    handle.storage.volumes.upsert(
        make_volume("old").source("awsElasticBlockStore", volumeID="vol-1").volume()
    )
    existing = make_pod("e").volume("ebs", awsElasticBlockStore={"volumeID": "vol-2"})
    assert _filter(handle, _claims("old"), existing) == TOO_MANY


@pytest.mark.parametrize(
    ("listed", "want"),
    [
        pytest.param((IN_TREE_PORTWORX,), TOO_MANY, id="listed"),
        pytest.param(("kubernetes.io/gce-pd",), SUCCESS, id="other-plugin-listed"),
    ],
)
def test_portworx_volumes_count_only_where_the_plugin_is_listed(
    listed: tuple[str, ...], want: Status
) -> None:
    handle = _limited_handle({PORTWORX: 1}, *listed)
    existing = make_pod("e").volume("px", portworxVolume={"volumeID": "px-1"})
    pod = make_pod("p").volume("px", portworxVolume={"volumeID": "px-2"})
    assert _filter(handle, pod, existing) == want


def test_inline_volume_is_not_translated_on_a_node_without_a_csi_node() -> None:
    handle = Handle()
    existing = make_pod("e").volume("ebs", awsElasticBlockStore={"volumeID": "vol-1"})
    assert _filter(handle, _ebs_inline("aws://us-east-1a/disk-1"), existing) == SUCCESS


@pytest.mark.parametrize(
    ("existing_id", "new_id", "want"),
    [
        pytest.param("vol-1", "aws://us-east-1a/vol-1", SUCCESS, id="zone-url-form-same-volume"),
        pytest.param("vol-1", "aws:///vol-1", SUCCESS, id="url-form-without-zone"),
        pytest.param("vol-1", "vol-2", TOO_MANY, id="other-volume"),
    ],
)
def test_ebs_volume_ids_in_url_form(existing_id: str, new_id: str, want: Status) -> None:
    handle = _limited_handle({EBS: 1}, IN_TREE_EBS)
    existing = make_pod("e").volume("ebs", awsElasticBlockStore={"volumeID": existing_id})
    assert _filter(handle, _ebs_inline(new_id), existing) == want


def test_inline_volume_the_library_refuses_is_an_error() -> None:
    handle = _limited_handle({EBS: 1}, IN_TREE_EBS)
    status = _filter(handle, _ebs_inline("aws://us-east-1a/disk-1"))
    assert status == Status(
        Code.ERROR,
        "converting volume(ebs) from inline to csi: failed to translate Kubernetes ID to EBS "
        "Volume ID Invalid format for AWS volume (aws://us-east-1a/disk-1)",
    )


def test_in_tree_pv_the_library_refuses_is_not_counted() -> None:
    handle = _limited_handle({"disk.csi.azure.com": 0}, "kubernetes.io/azure-disk")
    for kind, name in (("Shared", "shared"), ("Managed", "managed")):
        handle.storage.claims.upsert(make_claim(name).volume_name(name).claim())
        builder = make_volume(name)
        builder.spec["azureDisk"] = {"diskURI": f"uri-{name}", "kind": kind}
        handle.storage.volumes.upsert(builder.volume())
    assert _filter(handle, _claims("shared")) == SUCCESS
    assert _filter(handle, _claims("managed")) == TOO_MANY


def test_node_without_node_object_is_an_error() -> None:
    plugin = NodeVolumeLimits(_limited_handle({EBS: 1}), PREFIX)
    status = plugin.filter(CycleState(), _claims("a").pod(), NodeInfo(None, ()))
    assert status == Status(Code.ERROR, "node not found")


# --- csi translation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "fields", "labels", "want"),
    [
        pytest.param("awsElasticBlockStore", {"volumeID": "vol-9"}, {}, "vol-9", id="ebs"),
        pytest.param(
            "awsElasticBlockStore",
            {"volumeID": "aws://eu-west-1b/vol-9"},
            {},
            "vol-9",
            id="ebs-url",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "disk"},
            {},
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk",
            id="gce-without-zone",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "disk"},
            {"topology.kubernetes.io/zone": "us-central1-a"},
            "projects/UNSPECIFIED/zones/us-central1-a/disks/disk",
            id="gce-zonal",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "disk"},
            {
                "failure-domain.beta.kubernetes.io/zone": "us-central1-a__us-central1-b",
                "topology.kubernetes.io/zone": "ignored-when-beta-label-set",
            },
            "projects/UNSPECIFIED/regions/us-central1/disks/disk",
            id="gce-regional-from-beta-label",
        ),
        pytest.param("azureDisk", {"diskURI": "/sub/x"}, {}, "/sub/x", id="azure-disk"),
        pytest.param(
            "azureDisk", {"diskURI": "/sub/x", "kind": "managed"}, {}, "/sub/x", id="azure-managed"
        ),
        pytest.param("cinder", {"volumeID": "c-1"}, {}, "c-1", id="cinder"),
        pytest.param("portworxVolume", {"volumeID": "px-1"}, {}, "px-1", id="portworx"),
        pytest.param("azureFile", {"shareName": "s"}, {}, None, id="azure-file-never-counted"),
        pytest.param("vsphereVolume", {"volumePath": "p"}, {}, None, id="vsphere-never-counted"),
    ],
)
def test_csi_volume_handle(
    source: str, fields: dict[str, Any], labels: dict[str, str], want: str | None
) -> None:
    plugin = plugin_for_source(source)
    assert plugin is not None
    assert csi_volume_handle(plugin, fields, labels) == want


@pytest.mark.parametrize(
    ("source", "fields", "labels", "message"),
    [
        pytest.param(
            "awsElasticBlockStore",
            {"volumeID": "aws://zone/vol-1/extra"},
            {},
            "failed to translate Kubernetes ID to EBS Volume ID "
            "Invalid format for AWS volume (aws://zone/vol-1/extra)",
            id="ebs-bad-url",
        ),
        pytest.param(
            "azureDisk",
            {"diskURI": "x", "kind": "Dedicated"},
            {},
            "kind(Dedicated) is not supported in csi migration",
            id="azure-unmanaged",
        ),
        pytest.param(
            "gcePersistentDisk",
            {"pdName": "disk"},
            {"topology.kubernetes.io/zone": "us-central1-a__europe-west1-b"},
            "failed to get region from zones: multiple or no regions gotten from zones, "
            "got: map[europe-west1:{} us-central1:{}]",
            id="gce-zones-in-two-regions",
        ),
    ],
)
def test_csi_volume_handle_refused(
    source: str, fields: dict[str, Any], labels: dict[str, str], message: str
) -> None:
    plugin = plugin_for_source(source)
    assert plugin is not None
    with pytest.raises(TranslationError) as raised:
        csi_volume_handle(plugin, fields, labels)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("annotation", "source", "want"),
    [
        pytest.param("kubernetes.io/aws-ebs", "awsElasticBlockStore", True, id="listed"),
        pytest.param(
            "kubernetes.io/gce-pd,kubernetes.io/aws-ebs", "awsElasticBlockStore", True, id="among"
        ),
        pytest.param(
            "kubernetes.io/gce-pd, kubernetes.io/aws-ebs",
            "awsElasticBlockStore",
            False,
            id="entries-not-trimmed",
        ),
        pytest.param("kubernetes.io/gce-pd", "awsElasticBlockStore", False, id="not-listed"),
        pytest.param("kubernetes.io/azure-file", "azureFile", False, id="azure-file-never"),
        pytest.param("kubernetes.io/vsphere-volume", "vsphereVolume", False, id="vsphere-never"),
        pytest.param("kubernetes.io/portworx-volume", "portworxVolume", True, id="portworx"),
    ],
)
def test_is_migration_on(annotation: str, source: str, want: bool) -> None:
    plugin = plugin_for_source(source)
    assert plugin is not None
    csi_node = make_csi_node(NODE, migrated=annotation)
    assert is_migration_on(csi_node, plugin) is want


def test_no_migration_without_csi_node() -> None:
    plugin = plugin_for_source("awsElasticBlockStore")
    assert plugin is not None
    assert is_migration_on(None, plugin) is False


# --- factory ---------------------------------------------------------------------------------


def test_new_rejects_arguments() -> None:
    with pytest.raises(InvalidArgsError):
        node_volume_limits.new({"unexpected": 1}, Handle())


def test_random_volume_id_prefix() -> None:
    prefix = node_volume_limits.plugin.random_volume_id_prefix(random.Random(7))
    assert len(prefix) == 32
    assert set(prefix) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert isinstance(node_volume_limits.new(None, Handle()), NodeVolumeLimits)


# --- queueing hints --------------------------------------------------------------------------


def _hint(resource: EventResource, action: ActionType) -> HintFn | None:
    plugin = NodeVolumeLimits(Handle(), PREFIX)
    hints = [
        registration.hint
        for registration in plugin.events_to_register()
        if registration.event.resource is resource and registration.event.action == action
    ]
    assert len(hints) == 1, f"{resource} {action} registered {len(hints)} times"
    return hints[0]


def _required_hint(resource: EventResource, action: ActionType) -> HintFn:
    hint = _hint(resource, action)
    assert hint is not None
    return hint


def test_events_to_register() -> None:
    plugin = NodeVolumeLimits(Handle(), PREFIX)
    registered = {(r.event.resource, r.event.action) for r in plugin.events_to_register()}
    assert registered == {
        (EventResource.CSI_NODE, ActionType.ADD),
        (EventResource.CSI_NODE, ActionType.UPDATE_GENERIC),
        (EventResource.POD, ActionType.DELETE),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
        (EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
    }
    assert _hint(EventResource.CSI_NODE, ActionType.ADD) is None


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        pytest.param(_claims("placeholder").node(NODE), QueueingHint.QUEUE, id="claim"),
        pytest.param(
            make_pod("d").volume("ebs", awsElasticBlockStore={}).node(NODE),
            QueueingHint.QUEUE,
            id="inline-migratable",
        ),
        pytest.param(
            make_pod("d").ephemeral("v").nominated(NODE), QueueingHint.QUEUE, id="nominated"
        ),
        pytest.param(make_pod("d").node(NODE), QueueingHint.QUEUE_SKIP, id="no-volumes"),
        pytest.param(
            make_pod("d").volume("cm", configMap={"name": "c"}).node(NODE),
            QueueingHint.QUEUE_SKIP,
            id="only-config-map",
        ),
        pytest.param(_claims("ebs-0"), QueueingHint.QUEUE_SKIP, id="not-scheduled"),
    ],
)
def test_hint_pod_deleted(deleted: PodBuilder, want: QueueingHint) -> None:
    hint = _required_hint(EventResource.POD, ActionType.DELETE)
    assert hint(_claims("ebs-2").pod(), deleted.pod(), None) == want


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        pytest.param(
            make_pod("p", "ns1"), make_claim("pvc", "ns2"), QueueingHint.QUEUE_SKIP, id="other-ns"
        ),
        pytest.param(
            make_pod("p", "ns1").claim("pvc1"),
            make_claim("pvc1", "ns1"),
            QueueingHint.QUEUE,
            id="claim-of-pod",
        ),
        pytest.param(
            make_pod("pod1", "ns1").ephemeral("ephemeral"),
            make_claim("pod1-ephemeral", "ns1"),
            QueueingHint.QUEUE,
            id="ephemeral-claim-of-pod",
        ),
        pytest.param(
            make_pod("p", "ns1").claim("pvc1"),
            make_claim("pvc2", "ns1"),
            QueueingHint.QUEUE_SKIP,
            id="other-claim",
        ),
        pytest.param(
            make_pod("p", "ns1"), make_claim("pvc2", "ns1"), QueueingHint.QUEUE_SKIP, id="no-claims"
        ),
    ],
)
def test_hint_claim_added(pod: PodBuilder, added: Any, want: QueueingHint) -> None:
    hint = _required_hint(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
    assert hint(pod.pod(), None, added.claim()) == want


@pytest.mark.parametrize(
    ("pod", "attacher", "want"),
    [
        pytest.param(
            make_pod("p", "ns1").claim("pvc1"), "test.storage.gke.io", QueueingHint.QUEUE, id="pvc"
        ),
        pytest.param(
            make_pod("p", "ns1").volume("v", awsElasticBlockStore={"volumeID": "test"}),
            EBS,
            QueueingHint.QUEUE,
            id="inline-matching-attacher",
        ),
        pytest.param(
            make_pod("p", "ns1").volume("v", gcePersistentDisk={"pdName": "test"}),
            EBS,
            QueueingHint.QUEUE_SKIP,
            id="inline-other-attacher",
        ),
        pytest.param(
            make_pod("p", "ns1")
            .volume("v", awsElasticBlockStore={"volumeID": "test"})
            .claim("pvc1"),
            EBS,
            QueueingHint.QUEUE,
            id="inline-and-pvc-matching",
        ),
        pytest.param(
            make_pod("p", "ns1")
            .volume("v", awsElasticBlockStore={"volumeID": "test"})
            .claim("pvc1"),
            "test.storage.gke.io",
            QueueingHint.QUEUE,
            id="inline-and-pvc-other-attacher",
        ),
        pytest.param(
            make_pod("p", "ns1"), "test.storage.gke.io", QueueingHint.QUEUE_SKIP, id="none"
        ),
        pytest.param(
            make_pod("p", "ns1").volume("v", vsphereVolume={"volumePath": "p"}),
            "csi.vsphere.vmware.com",
            QueueingHint.QUEUE,
            id="inline-never-counted-still-matches",
        ),
        pytest.param(
            make_pod("p", "ns1").volume("v", awsElasticBlockStore={"volumeID": "aws://z/bad"}),
            "test.storage.gke.io",
            QueueingHint.QUEUE,
            id="inline-translation-refused",
        ),
        pytest.param(
            make_pod("p", "ns1").ephemeral("e"),
            "test.storage.gke.io",
            QueueingHint.QUEUE_SKIP,
            id="ephemeral-only",
        ),
    ],
)
def test_hint_attachment_deleted(pod: PodBuilder, attacher: str, want: QueueingHint) -> None:
    hint = _required_hint(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE)
    deleted = make_attachment("volumeattachment1", attacher, "fake-node", "pv1")
    assert hint(pod.pod(), deleted, None) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param({EBS: 1}, {EBS: 2}, QueueingHint.QUEUE, id="raised"),
        pytest.param({EBS: 2}, {EBS: 1}, QueueingHint.QUEUE_SKIP, id="lowered"),
        pytest.param({EBS: 1}, {EBS: 1}, QueueingHint.QUEUE_SKIP, id="unchanged"),
        pytest.param({EBS: None}, {EBS: 1}, QueueingHint.QUEUE, id="count-published"),
        pytest.param({EBS: 1}, {EBS: None}, QueueingHint.QUEUE_SKIP, id="count-withdrawn"),
        pytest.param({}, {EBS: 1}, QueueingHint.QUEUE, id="driver-registered"),
        pytest.param({}, {EBS: 0}, QueueingHint.QUEUE_SKIP, id="driver-registered-with-zero"),
        pytest.param({EBS: 1}, {}, QueueingHint.QUEUE_SKIP, id="driver-gone"),
    ],
)
def test_hint_csi_node_updated(
    old: dict[str, int | None], new: dict[str, int | None], want: QueueingHint
) -> None:
    hint = _required_hint(EventResource.CSI_NODE, ActionType.UPDATE_GENERIC)
    pod = make_pod("test-pod", "ns1").claim("ebs-0").pod()
    assert hint(pod, make_csi_node(NODE, old), make_csi_node(NODE, new)) == want
