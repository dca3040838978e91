"""DynamicResources' writes to ResourceClaims: PUTs of the claim and of its status with the
resourceVersion they were based on, a GET after a conflict, and Unreserve's strategic-merge patch
with the claim's UID as precondition."""

from __future__ import annotations

import kmock

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.resource_claims import ApiResourceClaimWriter
from tests.k8s.support import ok

PATH = "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/gpu"
CLAIM = {
    "metadata": {"name": "gpu", "namespace": "team", "uid": "c-1", "resourceVersion": "7"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
}
TYPED = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **CLAIM}


async def test_claim_and_status_updates_are_puts_of_the_typed_object(
    kmock: kmock.RawHandler, api: Api
) -> None:
    kmock[f"put {PATH}"] << ok({**TYPED, "metadata": {**CLAIM["metadata"], "resourceVersion": "8"}})
    kmock[f"put {PATH}/status"] << ok(TYPED)
    writer = ApiResourceClaimWriter(api)

    stored = await writer.update_resource_claim(CLAIM)
    await writer.update_resource_claim_status(CLAIM)

    assert stored["metadata"]["resourceVersion"] == "8"
    (update,) = list(kmock[f"put {PATH}"])
    (status,) = list(kmock[f"put {PATH}/status"])
    assert update.data == TYPED
    assert status.data == TYPED


async def test_a_claim_is_read_again_by_name(kmock: kmock.RawHandler, api: Api) -> None:
    kmock[f"get {PATH}"] << ok(TYPED)
    assert await ApiResourceClaimWriter(api).get_resource_claim("team", "gpu") == TYPED


async def test_unreserve_is_a_strategic_merge_patch_with_the_claim_uid(
    kmock: kmock.RawHandler, api: Api
) -> None:
    kmock[f"patch {PATH}/status"] << ok(TYPED)

    await ApiResourceClaimWriter(api).remove_resource_claim_reservation("team", "gpu", "c-1", "p-9")

    (request,) = list(kmock[f"patch {PATH}/status"])
    assert request.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert request.data == {
        "metadata": {"uid": "c-1"},
        "status": {"reservedFor": [{"$patch": "delete", "uid": "p-9"}]},
    }
