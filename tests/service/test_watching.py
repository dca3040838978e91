"""The kopf side of the operator: which handlers are registered and how kopf is configured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf
import pytest

from kopf_scheduler.informer.watched_kinds import Watcher, watched_by
from kopf_scheduler.kopf_watches.watching import NoDiffBase, apply_settings, register


class Recorder:
    """Stands in for the scheduler's event handlers: records what each kind's route received."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def route(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        return lambda event_type, raw: self.calls.append(
            (kind, event_type, raw["metadata"]["name"])
        )


def test_settings_keep_no_diff_base_and_post_nothing() -> None:
    settings = kopf.OperatorSettings()
    apply_settings(settings)

    assert isinstance(settings.persistence.diffbase_storage, NoDiffBase)
    body = kopf.Body({"metadata": {"name": "p", "uid": "u"}, "spec": {"nodeName": ""}})
    assert settings.persistence.diffbase_storage.build(body=body) is None
    assert settings.persistence.diffbase_storage.fetch(body=body) is None
    assert settings.posting.enabled is False
    assert settings.peering.standalone is True
    assert settings.scanning.disabled is True


async def test_every_watched_kind_has_one_event_handler_that_forwards() -> None:
    registry = kopf.OperatorRegistry()
    recorder = Recorder()
    register(registry, recorder.route)

    handlers = registry._watching.get_all_handlers()
    assert len(handlers) == len(watched_by(Watcher.KOPF))
    by_id = {handler.id: handler for handler in handlers}
    pdb_handler = by_id["forward-poddisruptionbudgets"]
    namespace_handler = by_id["forward-namespaces"]

    await pdb_handler.fn(event={"type": None, "object": {"metadata": {"name": "a"}}})
    await pdb_handler.fn(event={"type": "MODIFIED", "object": {"metadata": {"name": "a"}}})
    await namespace_handler.fn(event={"type": "DELETED", "object": {"metadata": {"name": "n"}}})
    await pdb_handler.fn(event={"type": "ADDED", "object": None})

    assert recorder.calls == [
        ("PodDisruptionBudget", "ADDED", "a"),
        ("PodDisruptionBudget", "MODIFIED", "a"),
        ("Namespace", "DELETED", "n"),
    ]
    assert "forward-pods" not in by_id  # pods and nodes come through k8s.reflector
    assert "forward-nodes" not in by_id


@pytest.mark.parametrize(
    ("group", "plural", "kind"),
    [
        pytest.param("", "persistentvolumeclaims", "PersistentVolumeClaim", id="claims"),
        pytest.param("", "persistentvolumes", "PersistentVolume", id="volumes"),
        pytest.param("storage.k8s.io", "storageclasses", "StorageClass", id="classes"),
        pytest.param("storage.k8s.io", "csinodes", "CSINode", id="csinodes"),
        pytest.param("storage.k8s.io", "csidrivers", "CSIDriver", id="csidrivers"),
        pytest.param(
            "storage.k8s.io", "csistoragecapacities", "CSIStorageCapacity", id="capacities"
        ),
        pytest.param("storage.k8s.io", "volumeattachments", "VolumeAttachment", id="attachments"),
    ],
)
async def test_storage_kinds_are_watched_in_v1_and_forwarded_with_their_kind(
    group: str, plural: str, kind: str
) -> None:
    registry = kopf.OperatorRegistry()
    recorder = Recorder()
    register(registry, recorder.route)
    handler = {h.id: h for h in registry._watching.get_all_handlers()}[f"forward-{plural}"]

    await handler.fn(event={"type": None, "object": {"metadata": {"name": "a"}}})
    await handler.fn(event={"type": "DELETED", "object": {"metadata": {"name": "a"}}})

    assert (handler.selector.group, handler.selector.version) == (group, "v1")
    assert recorder.calls == [(kind, "ADDED", "a"), (kind, "DELETED", "a")]
