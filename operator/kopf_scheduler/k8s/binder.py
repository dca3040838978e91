"""Binding pods to nodes with the ``pods/binding`` subresource, as kube-scheduler's DefaultBinder.

The Binding names the pod's UID, so it cannot land on a different pod that took the same name
after the scheduling decision. The API server refuses a second binding with 409 and the message
``pod <name> is already assigned to node "<node>"``; when that node is the one we chose, the pod is
where we want it (typically our own earlier request that succeeded before a retry), so it counts as
done. A 409 naming another node, a UID mismatch, or any other error is raised for the binding
cycle to handle.

Each binding request is timed, from the wait for the client's rate limiter to the last reply, in
``kopf_scheduler_binding_request_duration_seconds``: client-go's request-duration histogram puts
bindings together with every other POST (events among them), so it cannot tell how long a pod
waits for its own binding.
"""

from __future__ import annotations

import re

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import ApiError

_ASSIGNED = re.compile(r'is already assigned to node "(?P<node>[^"]*)"')


def binding_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}/binding"


def binding_body(namespace: str, name: str, uid: str, node_name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def already_bound_to(error: ApiError) -> str | None:
    """The node a 409 says the pod is already assigned to, or ``None`` for any other error."""
    if error.status != 409:
        return None
    match = _ASSIGNED.search(error.message)
    return match.group("node") if match else None


class ApiBinder:
    """:class:`kopf_scheduler.ports.Binder` over the API server."""

    def __init__(self, api: Api) -> None:
        self._api = api

    async def bind(self, pod: Pod, node_name: str) -> None:
        api = self._api
        started = api.clock.now()
        try:
            await api.request(
                "POST",
                binding_path(pod.namespace, pod.name),
                binding_body(pod.namespace, pod.name, pod.uid, node_name),
            )
        except ApiError as error:
            if already_bound_to(error) == node_name:
                return
            raise
        finally:
            api.metrics.observe(m.BINDING_REQUEST_DURATION, api.clock.now() - started)
