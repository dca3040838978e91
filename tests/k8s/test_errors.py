"""Library failures become ports errors: status, reason and message from the Status body."""

from __future__ import annotations

import json

import aiohttp
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from kopf_scheduler.k8s.errors import (
    NO_RESPONSE,
    TransportError,
    from_exception,
    from_response,
    status_details,
)
from kopf_scheduler.ports import ApiError, ConflictError, NotFoundError
from tests.k8s.support import status


def body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(status(code, reason, message)).encode()


@pytest.mark.parametrize(
    ("code", "raw", "kind", "reason", "message"),
    [
        pytest.param(
            404,
            body(404, "NotFound", 'pods "p" not found'),
            NotFoundError,
            "NotFound",
            'pods "p" not found',
            id="404",
        ),
        pytest.param(
            409,
            body(409, "AlreadyExists", 'events "e" already exists'),
            ConflictError,
            "AlreadyExists",
            'events "e" already exists',
            id="409-already-exists-keeps-reason",
        ),
        pytest.param(
            409,
            body(409, "Conflict", "the object has been modified"),
            ConflictError,
            "Conflict",
            "the object has been modified",
            id="409-conflict",
        ),
        pytest.param(409, b"", ConflictError, "Conflict", "", id="409-no-body"),
        pytest.param(
            422,
            body(422, "Invalid", "Event.events.k8s.io is invalid"),
            ApiError,
            "Invalid",
            "Event.events.k8s.io is invalid",
            id="422",
        ),
        pytest.param(
            502,
            b"<html>Bad Gateway</html>",
            ApiError,
            "Bad Gateway",
            "<html>Bad Gateway</html>",
            id="non-json-body-becomes-message",
        ),
        pytest.param(500, b"[1, 2]", ApiError, "Bad Gateway", "[1, 2]", id="non-object-json"),
    ],
)
def test_from_response(
    code: int, raw: bytes, kind: type[ApiError], reason: str, message: str
) -> None:
    error = from_response(code, raw, "Bad Gateway")
    assert type(error) is kind
    assert (error.status, error.reason, error.message) == (code, reason, message)


def test_status_details_of_an_empty_body() -> None:
    assert status_details(None) == ("", "")


@pytest.mark.parametrize(
    ("exc", "status", "kind"),
    [
        pytest.param(
            aiohttp.ServerDisconnectedError(), NO_RESPONSE, TransportError, id="disconnected"
        ),
        pytest.param(ConnectionRefusedError(111, "refused"), NO_RESPONSE, TransportError, id="os"),
        pytest.param(TimeoutError(), NO_RESPONSE, TransportError, id="timeout"),
        pytest.param(
            ApiException(status=0, reason="bad args"), NO_RESPONSE, TransportError, id="0"
        ),
    ],
)
def test_from_exception_without_a_reply(exc: BaseException, status: int, kind: type) -> None:
    error = from_exception(exc)
    assert type(error) is kind
    assert error.status == status


def test_from_api_exception_reads_the_status_body() -> None:
    exc = ApiException(status=404, reason="Not Found")
    exc.body = body(404, "NotFound", 'pods "p" not found')

    error = from_exception(exc)

    assert isinstance(error, NotFoundError)
    assert error.message == 'pods "p" not found'


def test_ports_errors_pass_through() -> None:
    error = ConflictError("x")
    assert from_exception(error) is error
