"""DefaultBinder: bind the pod by creating a Binding through the API (the handle's binder port)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod

NAME = "DefaultBinder"


class DefaultBinder:
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle) -> None:
        self._handle = handle

    async def bind(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        binder = self._handle.binder
        if binder is None:
            return api.Status(api.Code.ERROR, "no binder is configured", plugin=NAME)
        try:
            await binder.bind(pod, node_name)
        except api.ApiError as error:
            return api.Status.from_error(error, NAME)
        return api.SUCCESS


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> DefaultBinder:
    api.reject_unknown(api.ensure_mapping(args), set())
    return DefaultBinder(handle)
