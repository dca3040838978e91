"""Deleting preemption victims, guarded by the victim's UID.

The DeleteOptions carry a UID precondition, so if the victim is already gone and a new pod took
its name, that new pod survives: the API server answers 409 instead of deleting it. No grace period
is sent, so the victim's own ``terminationGracePeriodSeconds`` applies, as with kube-scheduler.
Both 404 (already deleted) and 409 (a different pod under that name now) mean the victim is gone,
which is all preemption needs.
"""

from __future__ import annotations

import structlog

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import ConflictError, NotFoundError

logger = structlog.get_logger("kopf_scheduler.k8s.deleter")


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def delete_options(uid: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}


class ApiPodDeleter:
    """:class:`kopf_scheduler.ports.PodDeleter` over the API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def delete_pod(self, pod: Pod) -> None:
        try:
            await self._api.request(
                "DELETE", pod_path(pod.namespace, pod.name), delete_options(pod.uid)
            )
        except NotFoundError:
            logger.debug("victim_already_gone", pod=pod.key)
        except ConflictError as error:
            logger.debug("victim_replaced_by_another_pod", pod=pod.key, reason=error.message)
