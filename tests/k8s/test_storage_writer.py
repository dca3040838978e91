"""Volume binding's writes: a PUT of the whole PV or claim, and how refusals come back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.storage_writer import ApiStorageWriter
from kopf_scheduler.ports import ApiError, ConflictError, NotFoundError
from tests.k8s.support import ok, reply

VOLUME_PATH = "/api/v1/persistentvolumes/pv-1"
CLAIM_PATH = "/api/v1/namespaces/team/persistentvolumeclaims/data"

VOLUME = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "resourceVersion": "41"},
    "spec": {
        "capacity": {"storage": "1Gi"},
        "claimRef": {"namespace": "team", "name": "data", "uid": "c-1"},
        "storageClassName": "local",
    },
    "status": {"phase": "Available"},
}
CLAIM = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {
        "name": "data",
        "namespace": "team",
        "resourceVersion": "17",
        "annotations": {"volume.kubernetes.io/selected-node": "node-a"},
    },
    "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
    "status": {"phase": "Pending"},
}

Write = Callable[[ApiStorageWriter, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]


async def put_volume(writer: ApiStorageWriter, raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return await writer.update_volume(raw)


async def put_claim(writer: ApiStorageWriter, raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return await writer.update_claim(raw)


WRITES = [
    pytest.param(put_volume, VOLUME, VOLUME_PATH, id="volume"),
    pytest.param(put_claim, CLAIM, CLAIM_PATH, id="claim"),
]


def stored(raw: Mapping[str, Any], version: str) -> dict[str, Any]:
    return {**raw, "metadata": {**raw["metadata"], "resourceVersion": version}}


@pytest.mark.parametrize(("write", "raw", "path"), WRITES)
async def test_puts_the_whole_object_and_returns_it_as_stored(
    kmock: kmock.RawHandler, api: Api, write: Write, raw: Mapping[str, Any], path: str
) -> None:
    kmock[f"put {path}"] << ok(stored(raw, "99"))

    result = await write(ApiStorageWriter(api), raw)

    requests = list(kmock[f"put {path}"])
    assert len(requests) == 1
    assert requests[0].data == raw
    assert requests[0].headers["Content-Type"] == "application/json"
    assert result == stored(raw, "99")


@pytest.mark.parametrize(
    ("write", "raw", "path", "kind"),
    [
        pytest.param(put_volume, VOLUME, VOLUME_PATH, "PersistentVolume", id="volume"),
        pytest.param(put_claim, CLAIM, CLAIM_PATH, "PersistentVolumeClaim", id="claim"),
    ],
)
async def test_an_object_without_type_fields_is_sent_as_core_v1(
    kmock: kmock.RawHandler,
    api: Api,
    write: Write,
    raw: Mapping[str, Any],
    path: str,
    kind: str,
) -> None:
    kmock[f"put {path}"] << ok(dict(raw))
    untyped = {key: value for key, value in raw.items() if key not in ("apiVersion", "kind")}

    await write(ApiStorageWriter(api), untyped)

    (request,) = list(kmock[f"put {path}"])
    assert request.data == {**untyped, "apiVersion": "v1", "kind": kind}


async def test_a_claim_without_namespace_is_written_in_default(
    kmock: kmock.RawHandler, api: Api
) -> None:
    path = "/api/v1/namespaces/default/persistentvolumeclaims/data"
    kmock[f"put {path}"] << ok(dict(CLAIM))
    raw = {**CLAIM, "metadata": {"name": "data", "resourceVersion": "17"}}

    await ApiStorageWriter(api).update_claim(raw)

    assert len(kmock[f"put {path}"]) == 1


@pytest.mark.parametrize(
    ("code", "reason", "message", "raised"),
    [
        pytest.param(
            409,
            "Conflict",
            'Operation cannot be fulfilled on persistentvolumes "pv-1": the object has been '
            "modified; please apply your changes to the latest version and try again",
            ConflictError,
            id="409-stale-version",
        ),
        pytest.param(
            404, "NotFound", 'persistentvolumes "pv-1" not found', NotFoundError, id="404"
        ),
        pytest.param(
            422, "Invalid", 'PersistentVolume "pv-1" is invalid', ApiError, id="422-invalid"
        ),
    ],
)
@pytest.mark.parametrize(("write", "raw", "path"), WRITES)
async def test_refusals_are_raised_as_ports_errors_without_retrying(
    kmock: kmock.RawHandler,
    api: Api,
    write: Write,
    raw: Mapping[str, Any],
    path: str,
    code: int,
    reason: str,
    message: str,
    raised: type[ApiError],
) -> None:
    kmock[f"put {path}"] << (lambda: reply(code, reason, message))

    with pytest.raises(raised) as info:
        await write(ApiStorageWriter(api), raw)

    assert info.value.status == code
    assert info.value.reason == reason
    assert info.value.message == message
    assert len(kmock[f"put {path}"]) == 1


@pytest.mark.parametrize(
    "metadata",
    [pytest.param(None, id="no-metadata"), pytest.param({"namespace": "team"}, id="no-name")],
)
async def test_an_object_without_a_name_is_refused_before_any_request(
    api: Api, metadata: dict[str, Any] | None
) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await ApiStorageWriter(api).update_claim({"metadata": metadata})
