"""The fast path decides like the per-node path when the cluster has storage and pods have
volumes; it serves the pods the four volume plugins skip and steps aside for the others.

The property builds random clusters as ``test_fast_path`` does (allocatable amounts, zones,
taints, cordons, existing pods) and adds storage: StorageClasses that bind at once, wait for the
first consumer with static PVs only, or provision through the EBS CSI driver or the in-tree EBS
plugin (with CSIStorageCapacity objects in some zones); PVs bound to claims (CSI, in-tree EBS
with bare, URL-form and malformed IDs, Cinder, GCE PD, local PVs pinned to a node), labelled with
one or several zones and with zone or hostname node affinity, some ReadWriteOncePod; free static
PVs; CSINodes with attach limits and migrated-plugins annotations (one written with a space);
VolumeAttachments; running pods that hold claims and inline disks. The pending pods are
``test_fast_path``'s random pods, about half of them given volumes: bound, delay-binding,
provisioned, immediate-unbound, missing and ReadWriteOncePod claims, generic ephemeral volumes
(whose claim exists, is someone else's, or is missing), inline EBS, Cinder and iSCSI disks, and
volumes no plugin checks (emptyDir, configMap). Each pod is scheduled with the fast path and
without it over the same cache and storage, and every attempt must agree on the chosen node, the
evaluated and feasible nodes, every node's status and reasons, the scores, the FitError and the
preemption dry runs. An attempt whose PreFilter left VolumeRestrictions, VolumeZone, NodePorts
or DynamicResources unskipped must not be served by the fast path; one where all of them and the
two volume plugins with a batch form (VolumeBinding, NodeVolumeLimits) skipped must be, unless
the attempt failed with an error or its node set was narrowed; the batch forms serve the pods
they model and decline the others. Placements are assumed, so later pods see the claims and
disks of earlier ones.

The unit tests below pin both sides down: pods with volumes no plugin checks are served; a pod
only VolumeBinding (all claims bound) or NodeVolumeLimits (CSI volumes) checks is served, with the
rejections the per-node path gives, also after the storage objects changed and for in-tree volumes
some nodes read as migrated to CSI; and for each of the
other volume plugins, and for what the batch forms do not model, a pod rejected on some node is
left to the per-node path.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.storage_cache import CSI_NODE_KIND, VOLUME_ATTACHMENT_KIND, StorageCache
from kopf_scheduler.config.types import PluginRef, PluginSet, Profile
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import VolumeAttachment
from kopf_scheduler.plugins import (
    dynamic_resources,
    node_ports,
    node_volume_limits,
    volume_restrictions,
    volume_zone,
)
from kopf_scheduler.plugins import volume_binding as volume_binding_plugin
from kopf_scheduler.plugins.node_affinity import node_names_from_required
from kopf_scheduler.scheduler.algorithm import Algorithm
from kopf_scheduler.scheduler.fast_path.victim_search import VictimSearch
from tests.builders import PodBuilder, make_node, make_pod
from tests.plugins.volume_binding_support import StorageObject, add
from tests.scheduler.test_fast_path import (
    PROFILES,
    SCHEDULER,
    ZONES,
    Setup,
    World,
    attempt,
    build,
    compare_dry_runs,
    existing_raw,
    node_raw,
    pending_raw,
)
from tests.storage_builders import (
    make_attachment,
    make_capacity,
    make_claim,
    make_class,
    make_csi_driver,
    make_csi_node,
    make_volume,
)

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
EBS = "ebs.csi.aws.com"
CINDER = "cinder.csi.openstack.org"

WAIT = "wait"
"""Waits for the first consumer; static PVs only."""
IMMEDIATE = "immediate"
PROVISIONED = "provisioned"
"""Waits for the first consumer; provisioned by the EBS CSI driver."""
IN_TREE_PROVISIONED = "in-tree-provisioned"
"""Waits for the first consumer; provisioned by the in-tree EBS plugin."""

MIGRATED_PLUGINS = (
    "",
    "kubernetes.io/aws-ebs",
    "kubernetes.io/cinder,kubernetes.io/aws-ebs",
    "kubernetes.io/cinder, kubernetes.io/aws-ebs",
    "kubernetes.io/gce-pd,kubernetes.io/aws-ebs,kubernetes.io/cinder",
)
VOLUME_PLUGINS = frozenset(
    {
        volume_restrictions.NAME,
        node_volume_limits.NAME,
        volume_binding_plugin.NAME,
        volume_zone.NAME,
    }
)
BATCH_VOLUME_PLUGINS = frozenset({node_volume_limits.NAME, volume_binding_plugin.NAME})
"""The volume plugins with a batch form: the fast path may serve pods they check."""
SKIPPED_ONLY = (VOLUME_PLUGINS - BATCH_VOLUME_PLUGINS) | {node_ports.NAME, dynamic_resources.NAME}
"""The Filter plugins the fast path may stand in for only when their PreFilter skipped them."""

# ---------------------------------------------------------------------------------------------
# Random storage and volume pods.


@dataclass
class Storage:
    objects: list[StorageObject] = field(default_factory=list)
    attachments: list[VolumeAttachment] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    """Names of the claims pods may use (in namespace ``default``)."""

    def cache(self) -> StorageCache:
        storage = add(StorageCache(), *self.objects)
        for attachment in self.attachments:
            storage.attachments[attachment.name] = attachment
        return storage


@dataclass
class VolumeWorld:
    world: World
    storage: Storage


@st.composite
def bound_volume(draw: st.DrawFn, index: int, names: list[str], storage: Storage) -> None:
    """A claim ``bound<index>`` bound to the PV ``pv<index>`` of a random kind."""
    claim_name = f"bound{index}"
    volume = make_volume(f"pv{index}").storage_class(WAIT)
    kind = draw(st.sampled_from(["csi", "csi", "ebs", "cinder", "gce", "local"]))
    if kind == "csi":
        volume.csi(EBS, f"handle{index}")
        if draw(st.booleans()):
            node = draw(st.sampled_from(names))
            storage.attachments.append(make_attachment(f"va{index}", EBS, node, f"pv{index}"))
    elif kind == "ebs":
        volume_id = draw(st.sampled_from([f"vol-{index}", f"aws://a/vol-{index}", "aws://a/disk"]))
        volume.source("awsElasticBlockStore", volumeID=volume_id)
    elif kind == "cinder":
        volume.source("cinder", volumeID=f"cinder-{index}")
    elif kind == "gce":
        volume.source("gcePersistentDisk", pdName=f"disk-{index}")
    else:
        volume.on_node(draw(st.sampled_from(names)))
    zones = draw(st.sampled_from([None, None, "a", "b", "a__b"]))
    if zones is not None:
        volume.label(draw(st.sampled_from([ZONE, ZONE, BETA_ZONE])), zones)
    if kind != "local" and draw(st.integers(0, 3)) == 0:
        volume.node_affinity(ZONE, *draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2)))
    claim = make_claim(claim_name).storage_class(WAIT).bound_to(f"pv{index}")
    if draw(st.integers(0, 3)) == 0:
        claim.access_modes("ReadWriteOncePod")
        volume.access_modes("ReadWriteOncePod")
    volume.claimed_by("default", claim_name, f"pvc-uid-default-{claim_name}").phase("Bound")
    storage.objects += [claim, volume]
    storage.claims.append(claim_name)


@st.composite
def storage(draw: st.DrawFn, names: list[str]) -> Storage:
    provisioned = make_class(PROVISIONED).wait_for_first_consumer().provisioner(EBS)
    if draw(st.booleans()):
        allowed = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))
        provisioned.allowed_topology(ZONE, *allowed)
    result = Storage(
        [
            make_class(WAIT).wait_for_first_consumer(),
            make_class(IMMEDIATE),
            provisioned,
            make_class(IN_TREE_PROVISIONED)
            .wait_for_first_consumer()
            .provisioner("kubernetes.io/aws-ebs"),
        ]
    )
    if draw(st.booleans()):
        result.objects.append(make_csi_driver(EBS, storage_capacity=draw(st.booleans())))
        for zone in ZONES:
            if draw(st.booleans()):
                size = draw(st.sampled_from(["0", "3Gi", "100Gi"]))
                result.objects.append(make_capacity(f"cap-{zone}", PROVISIONED, size, {ZONE: zone}))
    limit = st.sampled_from([None, 0, 1, 2, 4])
    for name in names:
        if draw(st.integers(0, 3)):
            limits = {EBS: draw(limit)}
            if draw(st.booleans()):
                limits[CINDER] = draw(limit)
            result.objects.append(
                make_csi_node(
                    name, limits, migrated=draw(st.sampled_from(MIGRATED_PLUGINS)) or None
                )
            )
    for index in range(draw(st.integers(0, 6))):
        draw(bound_volume(index, names, result))
    for index in range(draw(st.integers(0, 4))):
        static = make_volume(f"static{index}").storage_class(WAIT)
        static.size(draw(st.sampled_from(["1Gi", "5Gi", "10Gi"])))
        placement = draw(st.integers(0, 2))
        if placement == 0:
            static.node_affinity(ZONE, draw(st.sampled_from(ZONES)))
        elif placement == 1:
            static.on_node(draw(st.sampled_from(names)))
        result.objects.append(static)
    for index in range(draw(st.integers(0, 3))):
        size = draw(st.sampled_from(["1Gi", "5Gi", "20Gi"]))
        result.objects.append(make_claim(f"wait{index}").storage_class(WAIT).size(size))
        result.claims.append(f"wait{index}")
    for index in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from([PROVISIONED, IN_TREE_PROVISIONED]))
        result.objects.append(make_claim(f"provisioned{index}").storage_class(kind).size("2Gi"))
        result.claims.append(f"provisioned{index}")
    if draw(st.integers(0, 3)) == 0:
        result.objects.append(make_claim("immediate").storage_class(IMMEDIATE))
        result.claims.append("immediate")
    return result


@st.composite
def volume_entry(
    draw: st.DrawFn, name: str, raw: dict[str, Any], storage: Storage, pending: bool
) -> dict[str, Any]:
    """One volume for the pod ``raw``; a pending pod may also get claims that do not exist
    and generic ephemeral volumes."""
    kinds = ["empty", "config", "ebs", "cinder", "iscsi"]
    if storage.claims:
        kinds += ["claim"] * 4
    if pending:
        kinds += ["missing-claim", "ephemeral"]
    kind = draw(st.sampled_from(kinds))
    if kind == "empty":
        return {"name": name, "emptyDir": {}}
    if kind == "config":
        return {"name": name, "configMap": {"name": "settings"}}
    if kind == "ebs":
        volume_id = draw(st.sampled_from(["vol-1", "vol-2", "aws://a/vol-1", "aws://a/disk"]))
        return {"name": name, "awsElasticBlockStore": {"volumeID": volume_id}}
    if kind == "cinder":
        return {"name": name, "cinder": {"volumeID": draw(st.sampled_from(["c-1", "c-2"]))}}
    if kind == "iscsi":
        target = {"targetPortal": "10.0.0.1:3260", "lun": 0, "readOnly": draw(st.booleans())}
        return {"name": name, "iscsi": {**target, "iqn": draw(st.sampled_from(["iqn.1", "iqn.2"]))}}
    if kind == "claim":
        return {
            "name": name,
            "persistentVolumeClaim": {"claimName": draw(st.sampled_from(storage.claims))},
        }
    if kind == "missing-claim":
        return {"name": name, "persistentVolumeClaim": {"claimName": "missing"}}
    metadata = raw["metadata"]
    owner = draw(st.sampled_from(["pod", "pod", "other", "none"]))
    if owner != "none":
        uid = metadata["uid"] if owner == "pod" else "someone-else"
        claim = make_claim(f"{metadata['name']}-{name}").storage_class(PROVISIONED)
        storage.objects.append(claim.owned_by("Pod", metadata["name"], uid))
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": PROVISIONED}}
    return {"name": name, "ephemeral": {"volumeClaimTemplate": template}}


@st.composite
def with_volumes(
    draw: st.DrawFn, raw: dict[str, Any], storage: Storage, pending: bool
) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    raw["spec"]["volumes"] = [
        draw(volume_entry(f"v{index}", raw, storage, pending)) for index in range(count)
    ]
    return raw


@st.composite
def volume_worlds(draw: st.DrawFn) -> VolumeWorld:
    count = draw(st.one_of(st.integers(1, 12), st.integers(100, 110)))
    names = [f"n{i}" for i in range(count)]
    nodes = []
    for name in names:
        raw = draw(node_raw(name))
        if draw(st.integers(0, 4)) == 0:
            raw["metadata"]["labels"][REGION] = draw(st.sampled_from(["r1", "r2"]))
        nodes.append(raw)
    stored = draw(storage(names))
    running = []
    for index in range(draw(st.integers(0, 2 * count))):
        raw = draw(existing_raw(f"run{index}", draw(st.sampled_from(names))))
        if draw(st.integers(0, 2)) == 0:
            raw = draw(with_volumes(raw, stored, pending=False))
        running.append(raw)
    pending = []
    for index in range(draw(st.integers(1, 5))):
        raw = draw(pending_raw(f"p{index}", names))
        if draw(st.booleans()):
            raw = draw(with_volumes(raw, stored, pending=True))
        pending.append(raw)
    world = World(
        nodes,
        running,
        [],
        [],
        pending,
        draw(st.sampled_from([None, None, 1, 40, 100])),
        draw(st.sampled_from(PROFILES)),
    )
    return VolumeWorld(world, stored)


# ---------------------------------------------------------------------------------------------
# Running both paths.


def build_with_storage(world: World, storage: StorageCache) -> Setup:
    setup = build(world)
    setup.framework.handle.storage = storage
    return setup


def _narrowed(pod: Pod) -> bool:
    """Whether NodeAffinity's PreFilter narrows the node set (the fast path is not asked)."""
    required = pod.node_affinity_required
    return required is not None and node_names_from_required(required) is not None


def run_both_with_volumes(volume_world: VolumeWorld, seed: int) -> None:
    """Schedule every pending pod both ways and check each attempt (see the module docstring)."""
    world = volume_world.world
    setup = build_with_storage(world, volume_world.storage.cache())
    fast = Algorithm(random.Random(seed))
    reference = Algorithm(random.Random(seed), fast_path=False)
    assert fast.fast_path is not None
    setup.framework.dry_run_accelerator = VictimSearch(fast.fast_path)
    fast.next_start_node_index = reference.next_start_node_index = seed % len(world.nodes)
    for number, raw in enumerate(world.pending):
        pod = Pod(raw)
        used = fast.fast_path.used_filter
        outcome, state, fit = attempt(fast, setup, pod)
        expected, _, _ = attempt(reference, setup, pod)
        assert outcome == expected
        assert fast.next_start_node_index == reference.next_start_node_index
        assert fast.rng.getstate() == reference.rng.getstate()
        was_served = fast.fast_path.used_filter - used
        rejected_at_pre_filter = fit is not None and bool(fit.diagnosis.pre_filter_msg)
        present = {plugin.name for plugin in setup.framework.plugins.filter}
        all_skipped = present & SKIPPED_ONLY <= state.skip_filter_plugins
        batch_forms_skipped = present & BATCH_VOLUME_PLUGINS <= state.skip_filter_plugins
        if rejected_at_pre_filter or not all_skipped:
            assert was_served == 0, "the fast path served a pod a volume plugin checks"
        elif outcome[0] != "error" and not _narrowed(pod) and batch_forms_skipped:
            assert was_served == 1, "the fast path did not serve a pod every plugin skipped"
        if fit is not None:
            compare_dry_runs(setup, state, pod, fit, seed + number)
        elif outcome[0] == "scheduled":
            setup.cache.assume_pod(pod.assigned_to(outcome[1]))


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(volume_world=volume_worlds(), seed=st.integers(0, 2**16))
def test_fast_path_decides_like_the_per_node_path_with_volumes(
    volume_world: VolumeWorld, seed: int
) -> None:
    run_both_with_volumes(volume_world, seed)


# ---------------------------------------------------------------------------------------------
# Which attempts the fast path serves.


def _cluster(
    pending: list[dict[str, Any]],
    running: list[dict[str, Any]] | None = None,
    profile: Profile | None = None,
) -> World:
    """Six nodes in zones a, b, c, a, b, c."""
    return World(
        [make_node(f"n{i}").zone(ZONES[i % 3]).obj() for i in range(6)],
        running or [],
        [],
        [],
        pending,
        None,
        profile or Profile(),
    )


ISCSI_DISK = {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.1", "lun": 0}


def _pod(name: str = "p") -> PodBuilder:
    return make_pod(name).scheduler(SCHEDULER).req(cpu="100m", memory="100Mi")


def _without(*plugins: str) -> Profile:
    disabled = tuple(PluginRef(name) for name in plugins)
    return Profile(plugins={"multiPoint": PluginSet(disabled=disabled)})


def _disabled(profile: Profile) -> set[str]:
    multi_point = profile.plugins.get("multiPoint")
    return {ref.name for ref in multi_point.disabled} if multi_point is not None else set()


def _zoned_claim(volume_setup: str) -> list[StorageObject]:
    """The claim ``data`` bound to the PV ``pv-data``, confined to zone a by its zone label
    (``label``) or by its node affinity (``affinity``)."""
    volume = make_volume("pv-data").storage_class(WAIT).csi(EBS)
    if volume_setup == "label":
        volume.zone("a")
    else:
        volume.node_affinity(ZONE, "a")
    volume.claimed_by("default", "data", "pvc-uid-default-data").phase("Bound")
    return [
        make_class(WAIT).wait_for_first_consumer(),
        volume,
        make_claim("data").bound_to("pv-data"),
    ]


def _served(world: World, objects: list[StorageObject]) -> tuple[int, tuple[Any, ...], set[str]]:
    """(attempts the fast path served, the last outcome, the plugins the last attempt skipped);
    every outcome must equal the per-node path's."""
    return _served_with(world, add(StorageCache(), *objects))


def _served_with(world: World, storage: StorageCache) -> tuple[int, tuple[Any, ...], set[str]]:
    """:func:`_served` over a storage cache made by the caller."""
    setup = build_with_storage(world, storage)
    fast = Algorithm(random.Random(1))
    reference = Algorithm(random.Random(1), fast_path=False)
    assert fast.fast_path is not None
    outcome: tuple[Any, ...] = ()
    skipped: set[str] = set()
    for raw in world.pending:
        pod = Pod(raw)
        outcome, state, _ = attempt(fast, setup, pod)
        assert outcome == attempt(reference, setup, pod)[0]
        skipped = state.skip_filter_plugins
    return fast.fast_path.used_filter, outcome, skipped


@pytest.mark.parametrize(
    "volume",
    [
        pytest.param(None, id="no-volumes"),
        pytest.param({"emptyDir": {}}, id="empty-dir"),
        pytest.param({"configMap": {"name": "settings"}}, id="config-map"),
        pytest.param({"secret": {"secretName": "token"}}, id="secret"),
        pytest.param({"csi": {"driver": EBS}}, id="inline-csi-ephemeral"),
    ],
)
def test_pods_with_volumes_no_plugin_checks_are_served(volume: dict[str, Any] | None) -> None:
    pod = _pod()
    if volume is not None:
        pod.volume("v", **volume)
    served, outcome, skipped = _served(_cluster([pod.obj()]), _zoned_claim("label"))
    assert outcome[0] == "scheduled"
    assert skipped >= VOLUME_PLUGINS
    assert served == 1


def _rejections(outcome: tuple[Any, ...]) -> dict[str, tuple[str, ...]]:
    """Node -> reasons of the nodes a scheduled or failed attempt rejected."""
    diagnosis = outcome[5] if outcome[0] == "scheduled" else outcome[2]
    return {name: tuple(reasons) for name, _, reasons, _ in diagnosis[0]}


@pytest.mark.parametrize(
    ("world", "objects", "plugin", "reason", "rejected", "served"),
    [
        pytest.param(
            _cluster(
                [_pod().volume("disk", iscsi=ISCSI_DISK).obj()],
                running=[make_pod("holder").node("n0").volume("disk", iscsi=ISCSI_DISK).obj()],
            ),
            [],
            volume_restrictions.NAME,
            volume_restrictions.REASON_DISK_CONFLICT,
            {"n0"},
            0,
            id="volume-restrictions-inline-disk",
        ),
        pytest.param(
            _cluster(
                [_pod().claim("data").obj()],
                profile=_without(volume_binding_plugin.NAME, node_volume_limits.NAME),
            ),
            _zoned_claim("label"),
            volume_zone.NAME,
            volume_zone.REASON_CONFLICT,
            {"n1", "n2", "n4", "n5"},
            0,
            id="volume-zone-bound-claim",
        ),
        pytest.param(
            _cluster(
                [_pod().claim("data").obj()],
                profile=_without(volume_zone.NAME, node_volume_limits.NAME),
            ),
            [
                make_class(WAIT).wait_for_first_consumer(),
                make_volume("pv-free").storage_class(WAIT).csi(EBS).node_affinity(ZONE, "a"),
                make_claim("data").storage_class(WAIT),
            ],
            volume_binding_plugin.NAME,
            volume_binding_plugin.REASON_BIND_CONFLICT,
            {"n1", "n2", "n4", "n5"},
            0,
            id="volume-binding-delay-binding-claim",
        ),
        pytest.param(
            _cluster([_pod().volume("disk", cinder={"volumeID": "c-1"}).obj()]),
            [make_csi_node("n0", {CINDER: 0}, migrated="kubernetes.io/cinder")],
            node_volume_limits.NAME,
            node_volume_limits.REASON_MAX_VOLUME_COUNT,
            {"n0"},
            1,
            id="node-volume-limits-inline-migrated-disk",
        ),
        pytest.param(
            _cluster(
                [_pod().claim("data").obj()],
                profile=_without(volume_zone.NAME, node_volume_limits.NAME),
            ),
            [
                make_class(WAIT).wait_for_first_consumer(),
                make_volume("pv-data")
                .storage_class(WAIT)
                .source("awsElasticBlockStore", volumeID="vol-data")
                .node_affinity(ZONE, "a")
                .claimed_by("default", "data", "pvc-uid-default-data")
                .phase("Bound"),
                make_claim("data").bound_to("pv-data"),
                make_csi_node("n1", {}, migrated="kubernetes.io/aws-ebs"),
            ],
            volume_binding_plugin.NAME,
            volume_binding_plugin.REASON_NODE_CONFLICT,
            {"n1", "n2", "n4", "n5"},
            1,
            id="volume-binding-in-tree-volume-while-a-node-migrates-it",
        ),
    ],
)
def test_a_volume_plugin_that_did_not_skip_is_served_only_where_its_batch_form_models_the_pod(
    world: World,
    objects: list[StorageObject],
    plugin: str,
    reason: str,
    rejected: set[str],
    served: int,
) -> None:
    """The per-node path decides (``served`` 0) for the plugins without a batch form and for
    what the batch forms leave to it; an in-tree volume is served (``served`` 1) as each node
    reads it: n0 (NodeVolumeLimits' case) and n1 (VolumeBinding's) have migrated the volume's
    plugin and read it as their CSI driver's, a slot over the limit and an affinity on the
    driver's topology key that n1 lacks; the other nodes read it as it is."""
    attempts_served, outcome, skipped = _served(world, objects)
    assert plugin not in skipped
    assert VOLUME_PLUGINS - {plugin} - _disabled(world.profile) <= skipped
    assert {name for name, reasons in _rejections(outcome).items() if reason in reasons} == rejected
    assert attempts_served == served


# ---------------------------------------------------------------------------------------------
# The two volume plugins with a batch form.


def _csi_claim(name: str) -> list[StorageObject]:
    """The claim ``name`` bound to a CSI PV ``pv-<name>`` of its own (the handle is its name)."""
    return [
        make_volume(f"pv-{name}")
        .storage_class(WAIT)
        .csi(EBS, name)
        .claimed_by("default", name, f"pvc-uid-default-{name}")
        .phase("Bound"),
        make_claim(name).bound_to(f"pv-{name}"),
    ]


def _limited(limit: int) -> list[StorageObject]:
    """Every node of :func:`_cluster` attaches at most ``limit`` EBS volumes."""
    return [make_csi_node(f"n{i}", {EBS: limit}) for i in range(6)]


def test_a_pod_whose_claims_are_bound_is_served_with_the_node_affinity_rejections() -> None:
    world = _cluster(
        [_pod().claim("data").obj()], profile=_without(volume_zone.NAME, node_volume_limits.NAME)
    )
    served, outcome, skipped = _served(world, _zoned_claim("affinity"))
    assert volume_binding_plugin.NAME not in skipped
    reason = volume_binding_plugin.REASON_NODE_CONFLICT
    assert {name for name, reasons in _rejections(outcome).items() if reason in reasons} == {
        "n1",
        "n2",
        "n4",
        "n5",
    }
    assert served == 1


def test_a_pod_with_csi_volumes_is_served_with_the_attach_limit_rejections() -> None:
    """n0 holds a pod with another EBS volume, n1 an attachment of one: at a limit of one
    volume, both are full; the others are not."""
    world = _cluster(
        [_pod().claim("data").obj()],
        running=[make_pod("holder").node("n0").claim("held").obj()],
    )
    objects = [
        make_class(WAIT).wait_for_first_consumer(),
        *_csi_claim("data"),
        *_csi_claim("held"),
        *_csi_claim("attached"),
        *_limited(1),
    ]
    storage = add(StorageCache(), *objects)
    storage.attachments["va"] = make_attachment("va", EBS, "n1", "pv-attached")
    served, outcome, skipped = _served_with(world, storage)
    assert {volume_binding_plugin.NAME, node_volume_limits.NAME}.isdisjoint(skipped)
    reason = node_volume_limits.REASON_MAX_VOLUME_COUNT
    assert {name for name, reasons in _rejections(outcome).items() if reason in reasons} == {
        "n0",
        "n1",
    }
    assert served == 1


def test_a_volume_already_used_on_a_node_takes_no_slot_there() -> None:
    world = _cluster(
        [_pod().claim("data").obj()],
        running=[make_pod("sharer").node("n0").claim("data").obj()],
    )
    objects = [make_class(WAIT).wait_for_first_consumer(), *_csi_claim("data"), *_limited(1)]
    served, outcome, _ = _served(world, objects)
    assert outcome[0] == "scheduled"
    assert _rejections(outcome) == {}
    assert served == 1


def test_the_attach_counts_follow_the_storage_objects_after_the_first_attempt() -> None:
    """The counts are kept between attempts: an attachment, a claim bound anew and a lowered
    limit, each told by the storage cache, change the next attempt's rejections."""
    world = _cluster(
        [_pod("first").claim("data").obj(), _pod("second").claim("data").obj()],
        running=[
            make_pod("holder").node("n2").claim("held").obj(),
            make_pod("waiter").node("n3").claim("later").obj(),
        ],
    )
    objects = [
        make_class(WAIT).wait_for_first_consumer(),
        *_csi_claim("data"),
        *_csi_claim("held"),
        *_csi_claim("attached"),
        make_claim("later").storage_class(WAIT),
        *_limited(2),
    ]
    setup = build_with_storage(world, add(StorageCache(), *objects))
    storage = setup.framework.handle.storage
    fast = Algorithm(random.Random(1))
    reference = Algorithm(random.Random(1), fast_path=False)
    assert fast.fast_path is not None
    first = Pod(world.pending[0])
    outcome, _, _ = attempt(fast, setup, first)
    assert outcome == attempt(reference, setup, first)[0]
    assert _rejections(outcome) == {}

    storage.attachments["va"] = make_attachment("va", EBS, "n2", "pv-attached")
    storage.changed(VOLUME_ATTACHMENT_KIND, "va")
    storage.claims.upsert(make_claim("later").bound_to("pv-later").claim())
    storage.volumes.upsert(
        make_volume("pv-later").csi(EBS, "later").claimed_by("default", "later").volume()
    )
    storage.csi_nodes["n3"] = make_csi_node("n3", {EBS: 1})
    storage.changed(CSI_NODE_KIND, "n3")
    storage.csi_nodes["n4"] = make_csi_node("n4", {EBS: 0})
    storage.changed(CSI_NODE_KIND, "n4")

    second = Pod(world.pending[1])
    outcome, _, _ = attempt(fast, setup, second)
    assert outcome == attempt(reference, setup, second)[0]
    reason = node_volume_limits.REASON_MAX_VOLUME_COUNT
    assert {name for name, reasons in _rejections(outcome).items() if reason in reasons} == {
        "n2",
        "n3",
        "n4",
    }
    assert fast.fast_path.used_filter == 2


def test_preemption_dry_runs_count_the_volumes_of_the_pods_they_take_off() -> None:
    """n0 attaches one EBS volume, ``data``, which its low-priority pod uses; the preemptor
    uses it too, so it is free there while that pod stays. Taking the pod off leaves the
    attachment alone, and the preemptor's volume then counts on top of it: n0 fits only with
    the pod the preemptor would need gone (for cpu), so it has no victims to offer."""
    world = World(
        [make_node("n0").capacity(cpu="1", memory="1Gi", pods=10).obj()],
        [make_pod("low").node("n0").req(cpu="800m").claim("data").obj()],
        [],
        [],
        [_pod("high").req(cpu="500m").priority(100).claim("data").obj()],
        None,
        Profile(),
    )
    storage = add(
        StorageCache(),
        make_class(WAIT).wait_for_first_consumer(),
        *_csi_claim("data"),
        make_csi_node("n0", {EBS: 1}),
    )
    storage.attachments["va"] = make_attachment("va", EBS, "n0", "pv-data")
    setup = build_with_storage(world, storage)
    fast = Algorithm(random.Random(1))
    assert fast.fast_path is not None
    setup.framework.dry_run_accelerator = VictimSearch(fast.fast_path)
    pod = Pod(world.pending[0])
    outcome, state, fit = attempt(fast, setup, pod)
    assert outcome[0] == "fit"
    assert fit is not None
    assert node_volume_limits.NAME not in state.skip_filter_plugins
    compare_dry_runs(setup, state, pod, fit, 0)
