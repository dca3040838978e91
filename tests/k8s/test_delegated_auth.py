"""Delegated authentication and authorization: the reviews sent, what they mean, and the cache."""

from __future__ import annotations

from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.delegated_auth import (
    ANONYMOUS,
    SUBJECT_ACCESS_REVIEWS_PATH,
    TOKEN_REVIEWS_PATH,
    AccessDecision,
    DelegatedAuth,
    UserInfo,
)
from kopf_scheduler.ports import ApiError
from tests.clock import FakeClock
from tests.k8s.support import reply

PROMETHEUS = UserInfo(
    "system:serviceaccount:monitoring:prometheus",
    uid="1234",
    groups=("system:serviceaccounts", "system:authenticated"),
    extra=(("authentication.kubernetes.io/pod-name", ("prometheus-0",)),),
)


def token_review(authenticated: bool) -> dict[str, Any]:
    status: dict[str, Any] = {"authenticated": authenticated}
    if authenticated:
        status["user"] = {
            "username": PROMETHEUS.name,
            "uid": PROMETHEUS.uid,
            "groups": list(PROMETHEUS.groups),
            "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
        }
    else:
        status["error"] = "invalid bearer token"
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}


def access_review(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "status": status,
    }


@pytest.fixture
def auth(api: Api, clock: FakeClock) -> DelegatedAuth:
    return DelegatedAuth(api, clock)


async def test_a_token_is_reviewed_and_its_user_returned(
    kmock: kmock.RawHandler, auth: DelegatedAuth
) -> None:
    kmock[f"post {TOKEN_REVIEWS_PATH}"] << token_review(True)

    user = await auth.authenticate("secret-token")

    assert user == PROMETHEUS
    [request] = kmock[f"post {TOKEN_REVIEWS_PATH}"]
    assert request.data == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "secret-token"},
    }


async def test_a_rejected_token_has_no_user(kmock: kmock.RawHandler, auth: DelegatedAuth) -> None:
    kmock[f"post {TOKEN_REVIEWS_PATH}"] << token_review(False)

    assert await auth.authenticate("forged") is None


async def test_the_user_is_checked_for_the_non_resource_url(
    kmock: kmock.RawHandler, auth: DelegatedAuth
) -> None:
    kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"] << access_review({"allowed": True})

    decision = await auth.authorize(PROMETHEUS, "get", "/metrics")

    assert decision == AccessDecision(allowed=True)
    [request] = kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"]
    assert request.data == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": PROMETHEUS.name,
            "uid": "1234",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param({"allowed": True}, AccessDecision(True), id="allowed"),
        pytest.param({"allowed": False}, AccessDecision(False), id="no-opinion"),
        pytest.param(
            {"allowed": False, "denied": True, "reason": "blocked by webhook"},
            AccessDecision(False, "blocked by webhook"),
            id="denied-with-reason",
        ),
    ],
)
async def test_the_review_status_decides(
    kmock: kmock.RawHandler,
    auth: DelegatedAuth,
    status: dict[str, Any],
    expected: AccessDecision,
) -> None:
    kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"] << access_review(status)

    assert await auth.authorize(ANONYMOUS, "get", "/metrics") == expected
    [request] = kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"]
    assert request.data["spec"]["user"] == "system:anonymous"
    assert request.data["spec"]["groups"] == ["system:unauthenticated"]


async def test_answers_are_cached_for_ten_seconds(
    kmock: kmock.RawHandler, auth: DelegatedAuth, clock: FakeClock
) -> None:
    kmock[f"post {TOKEN_REVIEWS_PATH}"] << (lambda: token_review(True))
    kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"] << (lambda: access_review({"allowed": True}))

    for _ in range(3):
        user = await auth.authenticate("secret-token")
        assert user is not None
        await auth.authorize(user, "get", "/metrics")
        clock.advance(4.0)  # 0, 4, 8 s: all within the first answer's ten seconds

    assert len(kmock[f"post {TOKEN_REVIEWS_PATH}"]) == 1
    assert len(kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"]) == 1

    clock.advance(4.0)  # 16 s after the first answer
    user = await auth.authenticate("secret-token")
    assert user is not None
    await auth.authorize(user, "get", "/metrics")

    assert len(kmock[f"post {TOKEN_REVIEWS_PATH}"]) == 2
    assert len(kmock[f"post {SUBJECT_ACCESS_REVIEWS_PATH}"]) == 2


async def test_a_rejected_token_is_remembered_too(
    kmock: kmock.RawHandler, auth: DelegatedAuth
) -> None:
    kmock[f"post {TOKEN_REVIEWS_PATH}"] << (lambda: token_review(False))

    assert await auth.authenticate("forged") is None
    assert await auth.authenticate("forged") is None

    assert len(kmock[f"post {TOKEN_REVIEWS_PATH}"]) == 1


async def test_a_failed_review_raises_and_is_asked_again(
    kmock: kmock.RawHandler, auth: DelegatedAuth
) -> None:
    kmock[f"post {TOKEN_REVIEWS_PATH}"][:1] << (
        lambda: reply(403, "Forbidden", "cannot create tokenreviews")
    )
    kmock[f"post {TOKEN_REVIEWS_PATH}"] << (lambda: token_review(True))

    with pytest.raises(ApiError) as info:
        await auth.authenticate("secret-token")
    assert info.value.status == 403  # not retried, not cached

    assert await auth.authenticate("secret-token") == PROMETHEUS
