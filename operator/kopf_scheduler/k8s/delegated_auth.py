"""Who may read ``/metrics``: the API server decides, as for kube-scheduler's secure port.

kube-scheduler delegates both questions to the API server. A bearer token is checked with a
``TokenReview`` (``authentication.k8s.io/v1``); a request without one is ``system:anonymous`` in
the group ``system:unauthenticated``. The user is then checked with a ``SubjectAccessReview``
(``authorization.k8s.io/v1``) for the non-resource URL and verb, so access is granted the usual
way, by RBAC (``nonResourceURLs: ["/metrics"]``, ``verbs: ["get"]``). Both answers are cached for
ten seconds, upstream's default for delegated authentication and authorization, so a scraper
costs the API server at most two requests per ten seconds however often it scrapes. A failed
review is not cached, and is not retried either: the scrape fails and the next one asks again.

Tokens are kept only as SHA-256 digests. The scheduler's ServiceAccount needs ``create`` on
``tokenreviews`` and ``subjectaccessreviews`` (the ``system:auth-delegator`` ClusterRole).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.retry import NO_RETRY
from kopf_scheduler.ports import Clock

TOKEN_REVIEWS_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_TTL = 10.0
CACHE_SIZE = 1024

K = TypeVar("K")
V = TypeVar("V")


class _TimedCache(Generic[K, V]):
    """Answers kept ``ttl`` seconds; beyond ``size`` entries the oldest answer goes first."""

    def __init__(self, ttl: float, now: Callable[[], float], size: int = CACHE_SIZE) -> None:
        self._ttl = ttl
        self._now = now
        self._size = size
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def lookup(self, key: K) -> tuple[V] | None:
        """``(value,)`` if an answer for ``key`` is still fresh (the value may be ``None``)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires <= self._now():
            del self._entries[key]
            return None
        return (value,)

    def store(self, key: K, value: V) -> None:
        self._entries.pop(key, None)
        self._entries[key] = (self._now() + self._ttl, value)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


@dataclass(frozen=True)
class UserInfo:
    """The user a request acts as, as a TokenReview reports it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, user: Mapping[str, Any]) -> UserInfo:
        extra = user.get("extra") or {}
        return cls(
            name=str(user.get("username") or ""),
            uid=str(user.get("uid") or ""),
            groups=tuple(str(group) for group in user.get("groups") or ()),
            extra=tuple(
                sorted((str(key), tuple(str(v) for v in values)) for key, values in extra.items())
            ),
        )


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True)
class AccessDecision:
    """A SubjectAccessReview's answer: allowed or not, and the reason the authorizer gave."""

    allowed: bool
    reason: str = ""


class DelegatedAuth:
    """Authenticates bearer tokens and authorizes non-resource requests through ``api``.

    Both methods raise :class:`~kopf_scheduler.ports.ApiError` when the API server could not be
    asked (the caller answers the request with an error then).
    """

    def __init__(self, api: Api, clock: Clock, *, ttl: float = CACHE_TTL) -> None:
        self._api = api
        self._users: _TimedCache[bytes, UserInfo | None] = _TimedCache(ttl, clock.now)
        self._decisions: _TimedCache[tuple[UserInfo, str, str], AccessDecision] = _TimedCache(
            ttl, clock.now
        )

    async def authenticate(self, token: str) -> UserInfo | None:
        """The user ``token`` belongs to, or ``None`` if the API server does not accept it."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self._users.lookup(key)
        if cached is not None:
            return cached[0]
        review = await self._api.request(
            "POST",
            TOKEN_REVIEWS_PATH,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
            retry=NO_RETRY,
        )
        status = review.get("status") or {}
        user = (
            UserInfo.from_review(status.get("user") or {}) if status.get("authenticated") else None
        )
        self._users.store(key, user)
        return user

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AccessDecision:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``."""
        key = (user, verb, path)
        cached = self._decisions.lookup(key)
        if cached is not None:
            return cached[0]
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}
        review = await self._api.request(
            "POST",
            SUBJECT_ACCESS_REVIEWS_PATH,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
            retry=NO_RETRY,
        )
        status = review.get("status") or {}
        decision = AccessDecision(
            allowed=bool(status.get("allowed")) and not status.get("denied"),
            reason=str(status.get("reason") or ""),
        )
        self._decisions.store(key, decision)
        return decision
