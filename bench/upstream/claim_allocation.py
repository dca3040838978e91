"""ResourceClaims allocated before any pod asks for them: upstream's ``allocResourceClaims`` op.

scheduler_perf's DRA steady-state workloads (``SteadyStateClusterResourceClaimTemplate``) start
from a cluster whose devices are partly or wholly in use: claims made in a namespace and
allocated outside any scheduler, held by no pod, so that every later pod must find its device
among the rest. Upstream allocates them with its structured allocator library: one claim at a
time, in the order the API server lists them, on the first node of a fresh shuffle where the
claim fits, storing each allocation in the claim's status at once and counting its devices as
in use for the next claim. The runner does the same with kopf-scheduler's restatement of that
allocator (:mod:`kopf_scheduler.dra.allocator`, held to upstream's allocator tests), so a node's
devices are taken in upstream's order and the nodes are drawn at random as upstream draws them.
"""

from __future__ import annotations

import random
from typing import Any

from bench.e2e import (
    DEVICE_CLASSES_PATH,
    RESOURCE_PATH,
    SLICES_PATH,
    namespace_claims_path,
    resource_claims_path,
)
from bench.kube import Client
from kopf_scheduler.dra.allocator import AllocationError, Allocator, DeviceID, allocated_devices
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import Inventory

Raw = dict[str, Any]
ALL_CLAIMS_PATH = f"{RESOURCE_PATH}/resourceclaims"


class ClaimAllocationError(RuntimeError):
    """A claim that no node can serve, or one the allocator refuses."""


def claims_to_allocate_path(namespace: str) -> str:
    """The claims of ``namespace``, or of every namespace when it is empty (as upstream's op)."""
    return namespace_claims_path(namespace) if namespace else ALL_CLAIMS_PATH


async def allocate_claims(client: Client, namespace: str, rng: random.Random) -> dict[str, Any]:
    """Allocate every claim of ``namespace`` that has no allocation yet; how many there were
    and how many nodes the search tried."""
    claims, _ = await client.list_all(claims_to_allocate_path(namespace))
    everywhere, _ = await client.list_all(ALL_CLAIMS_PATH)
    nodes, _ = await client.list_all("/api/v1/nodes")
    slices, _ = await client.list_all(SLICES_PATH)
    classes, _ = await client.list_all(DEVICE_CLASSES_PATH)
    selectors = SelectorCache()
    inventory = Inventory(slices, selectors)
    by_name = {str(c["metadata"]["name"]): c for c in classes}
    in_use: set[DeviceID] = set()
    for claim in everywhere:
        in_use |= allocated_devices(claim)
    allocated = tried = 0
    for index, claim in enumerate(claims):
        if (claim.get("status") or {}).get("allocation"):
            continue
        allocator = Allocator(
            classes=by_name, inventory=inventory, allocated=in_use, selectors=selectors
        )
        rng.shuffle(nodes)
        result = None
        try:
            for node in nodes:
                tried += 1
                result = allocator.allocate(node, [claim])
                if result is not None:
                    break
        except AllocationError as error:
            raise ClaimAllocationError(f"allocate claim {_name(claim)}: {error}") from error
        if result is None:
            raise ClaimAllocationError(
                f"could not allocate claim {index} out of {len(claims)} ({_name(claim)})"
            )
        claim["status"] = {**(claim.get("status") or {}), "allocation": result[0]}
        item = f"{resource_claims_path(claim)}/{claim['metadata']['name']}"
        await client.request("PUT", f"{item}/status", claim)
        in_use |= allocated_devices(claim)
        allocated += 1
    return {
        "namespace": namespace,
        "claims": len(claims),
        "allocated": allocated,
        "nodes_tried": tried,
    }


def _name(claim: Raw) -> str:
    metadata = claim.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
