"""Turning HTTP failures and client-library exceptions into the errors of ``ports``.

The scheduling core catches :class:`~kopf_scheduler.ports.ApiError` (and its ``NotFoundError`` and
``ConflictError`` subclasses) and nothing else, so every failure that leaves this package goes
through here: an API server reply with a ``Status`` body, a kubernetes-asyncio ``ApiException``,
or a transport failure that produced no usable reply: a refused or reset connection, a timeout, or
a reply cut off mid-body (the server stopped, or the connection dropped, while it answered).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError
from kubernetes_asyncio.client.exceptions import ApiException

from kopf_scheduler.ports import ApiError, ConflictError, NotFoundError

NO_RESPONSE = 0
"""The status of a request that never got an HTTP reply."""


class TransportError(ApiError):
    """The request got no usable HTTP reply: connection refused or reset, DNS failure, timeout,
    or a reply cut off before its body ended."""

    def __init__(self, message: str) -> None:
        super().__init__(NO_RESPONSE, "TransportError", message)


class ClientConfigError(Exception):
    """The kubeconfig or in-cluster configuration could not be loaded."""


def status_details(body: bytes | str | None) -> tuple[str, str]:
    """The ``reason`` and ``message`` of a ``Status`` body, or empty strings when there is none.

    A body that is not a JSON ``Status`` (a proxy's HTML page, plain text) becomes the message, cut
    to a readable length, so the log still says what the server answered.
    """
    if not body:
        return "", ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        parsed = json.loads(text)
    except ValueError:
        return "", text.strip()[:512]
    if not isinstance(parsed, Mapping):
        return "", text.strip()[:512]
    reason = parsed.get("reason")
    message = parsed.get("message")
    return (
        reason if isinstance(reason, str) else "",
        message if isinstance(message, str) else "",
    )


def from_response(status: int, body: bytes | str | None, http_reason: str = "") -> ApiError:
    """The ports error for a non-2xx reply; 404 and 409 get their dedicated subclasses.

    The Kubernetes reason (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Expired`` ...) is kept
    on ``reason`` so callers can tell an ``AlreadyExists`` from an optimistic-concurrency
    ``Conflict``, both of which are HTTP 409.
    """
    reason, message = status_details(body)
    error: ApiError
    if status == 404:
        error = NotFoundError(message)
        error.reason = reason or error.reason
    elif status == 409:
        error = ConflictError(message)
        error.reason = reason or error.reason
    else:
        error = ApiError(status, reason or http_reason, message)
    return error


TRANSPORT_EXCEPTIONS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    HttpProcessingError,
    OSError,
    asyncio.TimeoutError,
)
"""What a request can raise when no usable reply arrived; ``OSError`` covers refused connections.

A body cut off mid-way usually surfaces as ``ClientPayloadError`` (a ``ClientError``), but
aiohttp's pure-Python parser (the one it falls back to without its C extension) hands a broken
chunk of a chunked body to the reader as the parser's own ``TransferEncodingError``, which is no
``ClientError``: an ``HttpProcessingError``.
"""

LIBRARY_EXCEPTIONS: tuple[type[BaseException], ...] = (ApiException, *TRANSPORT_EXCEPTIONS)
"""Everything :func:`from_exception` translates; anything else is a bug and propagates as is."""


CERTIFICATE_NOT_VERIFIED = (
    "the API server's certificate failed verification ({detail}); check the CA the client "
    "trusts: the kubeconfig's certificate-authority, or the ServiceAccount's ca.crt in a pod"
)


def certificate_failure(exc: aiohttp.ClientConnectorCertificateError) -> str:
    """What a failed TLS verification means for an admin, with OpenSSL's reason kept."""
    error = exc.certificate_error
    reason = error.verify_message if isinstance(error, ssl.SSLCertVerificationError) else ""
    detail = f"certificate verify failed: {reason}" if reason else str(error)
    return CERTIFICATE_NOT_VERIFIED.format(detail=detail)


def from_exception(exc: BaseException) -> ApiError:
    """The ports error for an exception raised by aiohttp, asyncio or kubernetes-asyncio."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return TransportError(certificate_failure(exc))
    if isinstance(exc, ApiException):
        status = exc.status if isinstance(exc.status, int) else NO_RESPONSE
        body: Any = exc.body
        reason: Any = exc.reason
        if status <= 0:
            return TransportError(str(reason or "request could not be sent"))
        return from_response(
            status,
            body if isinstance(body, bytes | str) else None,
            reason if isinstance(reason, str) else "",
        )
    if isinstance(exc, asyncio.TimeoutError):
        return TransportError("request timed out")
    if isinstance(exc, HttpProcessingError):
        # Its str() spreads the code and the parser's message over two lines.
        return TransportError(f"{type(exc).__name__}: the reply broke off: {exc.message}")
    return TransportError(f"{type(exc).__name__}: {exc}")
