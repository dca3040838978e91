"""DefaultBinder: bind the pod by creating a Binding through the API (the handle's binder port)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugin_api import (
    SUCCESS,
    ApiError,
    Code,
    CycleState,
    Handle,
    Status,
    ensure_mapping,
    reject_unknown,
)

NAME = "DefaultBinder"


class DefaultBinder:
    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        binder = self._handle.binder
        if binder is None:
            return Status(Code.ERROR, "no binder is configured", plugin=NAME)
        try:
            await binder.bind(pod, node_name)
        except ApiError as error:
            return Status.from_error(error, NAME)
        return SUCCESS


def new(args: Mapping[str, Any] | None, handle: Handle) -> DefaultBinder:
    reject_unknown(ensure_mapping(args), set())
    return DefaultBinder(handle)
