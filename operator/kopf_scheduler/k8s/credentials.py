"""Credentials that change while the scheduler runs: a bearer token file and the CA file.

A pod's projected ServiceAccount token lives about an hour (ten minutes at the least) and the
kubelet writes a fresh one into the same file well before the old one expires; a kubeconfig's
``tokenFile`` is meant the same way. client-go keeps the token it read for a minute less a
10-second leeway and then reads the file again, so a rotated token is in use within 50 seconds;
a request answered 401 throws the kept token away (unless it was read after that request was
sent) so the next request reads the file. :class:`FileToken` does the same with an injected
clock, and the client goes one step further: a 401 whose token has since changed on disk is sent
again once with the new token, so a rotation that beat the re-read period costs no failed call.
When the file cannot be read (the kubelet replaces it with a rename, so this is rare and short),
the token already held is kept and one warning is logged until a read succeeds again.

The CA bundle is read by the connection pool when it is made, and client-go never reads it again.
Here a failed TLS verification reads the CA file once more: if its content changed, the pool is
made anew, so the next connection trusts the new CA. The old pool is closed with the client.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable
from typing import Any

import structlog
from kubernetes_asyncio.client.rest import RESTClientObject

from kopf_scheduler.k8s.real_clocks import MonotonicClock
from kopf_scheduler.ports import Clock

logger = structlog.get_logger("kopf_scheduler.k8s.credentials")

TOKEN_PERIOD = 60.0
"""Seconds a token read from its file is kept, as client-go's cached file token source does."""
TOKEN_LEEWAY = 10.0
"""Seconds before the end of that period at which the file is read again."""


class TokenFileError(Exception):
    """The token file cannot be read or holds no token."""


def read_token(path: str) -> str:
    """The token in ``path``, without surrounding whitespace."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise TokenFileError(f"cannot read the token file {path}: {error}") from None
    if not token:
        raise TokenFileError(f"the token file {path} is empty")
    return token


class FileToken:
    """A bearer token read from ``path``, read again every ``period - leeway`` seconds."""

    def __init__(
        self,
        path: str,
        *,
        clock: Clock | None = None,
        period: float = TOKEN_PERIOD,
        leeway: float = TOKEN_LEEWAY,
    ) -> None:
        self.path = path
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self._keep = max(0.0, period - leeway)
        self.value = read_token(path)
        self._read_at = self._clock.now()
        self._failing = False

    def current(self) -> str:
        """The token to send now, read from the file again when the kept one is due."""
        if self._clock.now() - self._read_at >= self._keep:
            self._reload()
        return self.value

    def rejected(self, sent: str) -> bool:
        """The server answered 401 to ``sent``; whether the file now holds another token.

        A token other than the one kept was already replaced, so only the kept one is dropped.
        """
        if sent == self.value:
            self._read_at = -math.inf
            self._reload()
        return self.value != sent

    def _reload(self) -> None:
        try:
            token = read_token(self.path)
        except TokenFileError as error:
            if not self._failing:
                logger.warning(
                    "token_file_unreadable",
                    reason=str(error),
                    detail="keeping the token read before; trying again on the next request",
                )
            self._failing = True
            return
        if self._failing:
            logger.info("token_file_readable", path=self.path)
        self._failing = False
        self.value = token
        self._read_at = self._clock.now()


def _fingerprint(path: str | None) -> str | None:
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return None


class Credentials:
    """The token and CA files behind one ``ApiClient``; shared by every :class:`Api` on it.

    ``token`` is installed as the configuration's key hook, so kubernetes-asyncio asks it for the
    token before every request (kopf's logins read the configuration too, through the same hook).
    """

    def __init__(
        self,
        client: Any,
        token: FileToken | None = None,
        *,
        prepare: Callable[[Any], None] | None = None,
    ) -> None:
        self.client = client
        self.token = token
        self._prepare = prepare
        """Applied to the client after its pool is made anew."""
        configuration = client.configuration
        self.ca_path: str | None = configuration.ssl_ca_cert or None
        self._ca = _fingerprint(self.ca_path)
        self._retired: list[Any] = []
        if token is not None:
            configuration.refresh_api_key_hook = self._hook(token)

    @staticmethod
    def _hook(token: FileToken) -> Callable[[Any], None]:
        def set_token(configuration: Any) -> None:
            configuration.api_key["BearerToken"] = f"Bearer {token.current()}"
            configuration.api_key_prefix.pop("BearerToken", None)

        return set_token

    def sent_token(self) -> str | None:
        """The token the next request will carry (``None`` when no token file is used).

        Read through :meth:`FileToken.current`, as the request's key hook reads it, so that a
        token due for a re-read is re-read here and the request carries what this returns.
        """
        return self.token.current() if self.token is not None else None

    def unauthorized(self, sent: str | None) -> bool:
        """A 401 to a request that carried ``sent``; whether sending it again may help."""
        if self.token is None or sent is None:
            return False
        return self.token.rejected(sent)

    def tls_failed(self) -> bool:
        """The server's certificate failed verification; renew the pool if the CA file changed."""
        current = _fingerprint(self.ca_path)
        if current is None or current == self._ca:
            return False
        self._ca = current
        self._retired.append(self.client.rest_client)
        self.client.rest_client = RESTClientObject(self.client.configuration)
        if self._prepare is not None:
            self._prepare(self.client)
        logger.info("ca_file_reloaded", path=self.ca_path)
        return True

    async def close(self) -> None:
        """Close the pools replaced after CA changes (the live one closes with the client)."""
        retired, self._retired = self._retired, []
        for rest_client in retired:
            await rest_client.close()


def token_file_of(loader: Any) -> str | None:
    """The ``tokenFile`` of the kubeconfig user ``loader`` chose, as an absolute path."""
    user = getattr(loader, "_user", None)
    if user is None:
        return None
    safe_get = getattr(user, "safe_get", None)
    value = safe_get("tokenFile") if callable(safe_get) else None
    if not isinstance(value, str) or not value:
        return None
    base = os.path.dirname(os.path.abspath(str(getattr(user, "path", "") or "")))
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))
