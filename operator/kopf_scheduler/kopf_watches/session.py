"""kopf's HTTP session: a reply cut off mid-body is retried like a connection that failed.

kopf retries a request whose connection failed before the reply's headers arrived (for ever, with
the operator's :class:`~kopf_scheduler.service.startup.EndlessBackoffs`), but reads the body after
that retry loop has returned. A reply cut off mid-body, as happens when the API server stops or
restarts while answering or a load balancer drops the connection, then raises aiohttp's
``ClientPayloadError`` (a ``TransferEncodingError`` or ``ContentLengthError`` underneath) out of
the request. kopf's watches expect it and reconnect, but its resource discovery, which it runs
once as the operator starts and on which every watch waits, does not: the error ended the whole
process, with a traceback, when the API server went away right after the caches synced.

The session given to kopf therefore reads every reply but a watch's whole before handing it on,
inside the request, and turns a body that ends early into ``ServerDisconnectedError``, which kopf
retries like any connection that the server closed. A watch's body is a stream that kopf reads
event by event and resumes itself, so it is left as it is.
"""

from __future__ import annotations

import aiohttp
import kopf
from aiohttp.http_exceptions import HttpProcessingError

WATCH_VALUES = frozenset({"true", "1"})


async def read_whole_replies(
    request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
) -> aiohttp.ClientResponse:
    """An aiohttp client middleware: the reply of ``request`` with its body read, unless a watch.

    A body cut off before its end raises :class:`aiohttp.ServerDisconnectedError` naming the
    cut, so that the caller's retry of dropped connections covers it.
    """
    response = await handler(request)
    if request.url.query.get("watch") in WATCH_VALUES:
        return response
    try:
        await response.read()
    except (aiohttp.ClientPayloadError, HttpProcessingError) as error:
        response.close()
        raise aiohttp.ServerDisconnectedError(f"the reply was cut off mid-body: {error}") from error
    return response


def session_for(info: kopf.ConnectionInfo) -> kopf.AiohttpSession:
    """kopf's credentials for ``info``: the session kopf would open itself (TLS, authorization
    header, proxy), with :func:`read_whole_replies` on every request."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ssl=info.as_ssl_context()),
        headers=info.as_http_headers(),
        proxy=info.proxy_url,
        trust_env=info.trust_env,
        middlewares=(read_whole_replies,),
    )
    return kopf.AiohttpSession(
        server=info.server,
        default_namespace=info.default_namespace,
        priority=info.priority,
        expiration=info.expiration,
        aiohttp_session=session,
    )
