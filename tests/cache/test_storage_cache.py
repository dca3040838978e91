"""The assume cache: an assumption stands until the watch brings a newer version or it is
restored, and an assumption older than what is known is refused. The storage cache's change
signal reaches its listeners and keeps the CSINodes that migrate in-tree plugins."""

from __future__ import annotations

import pytest

from kopf_scheduler.cache.storage_cache import (
    STORAGE_CLASS_KIND,
    VOLUME_KIND,
    AssumeCache,
    AssumeConflictError,
    StorageCache,
)
from kopf_scheduler.model.storage import (
    PersistentVolume,
)
from tests.storage_builders import make_volume


def _pv(version: str, claimed_by: str = "") -> PersistentVolume:
    builder = make_volume("pv").version(version)
    if claimed_by:
        builder.claimed_by("ns", claimed_by)
    return builder.volume()


def test_assumption_survives_an_event_that_is_not_newer() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    cache.upsert(_pv("5"))
    assumed = _pv("5", claimed_by="c")
    cache.assume(assumed)
    cache.upsert(_pv("5"))
    assert cache.get("pv") is assumed
    assert cache.is_assumed("pv")


def test_a_newer_event_replaces_the_assumption() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    cache.upsert(_pv("5"))
    cache.assume(_pv("5", claimed_by="c"))
    written = _pv("6", claimed_by="c")
    cache.upsert(written)
    assert cache.get("pv") is written
    assert not cache.is_assumed("pv")


def test_restore_goes_back_to_the_api_object() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    original = _pv("5")
    cache.upsert(original)
    cache.assume(_pv("5", claimed_by="c"))
    cache.restore("pv")
    assert cache.get("pv") is original
    assert cache.get_api_object("pv") is original


def test_an_assumption_older_than_the_stored_object_is_refused() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    cache.upsert(_pv("7"))
    with pytest.raises(AssumeConflictError):
        cache.assume(_pv("6", claimed_by="c"))


def test_assuming_an_unknown_object_is_an_error() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    with pytest.raises(KeyError):
        cache.assume(_pv("1"))


def test_delete_forgets_both_versions() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache()
    cache.upsert(_pv("5"))
    cache.assume(_pv("5", claimed_by="c"))
    cache.delete("pv")
    assert cache.get("pv") is None and cache.get_api_object("pv") is None


def test_volumes_of_class_see_assumptions() -> None:
    storage = StorageCache()
    storage.volumes.upsert(make_volume("a").storage_class("local").version("1").volume())
    storage.volumes.upsert(make_volume("b").storage_class("other").version("1").volume())
    taken = make_volume("a").storage_class("local").version("1").claimed_by("ns", "c").volume()
    storage.volumes.assume(taken)
    assert storage.volumes_of_class("local") == [taken]


def test_the_listeners_hear_api_changes_and_not_assumptions() -> None:
    storage = StorageCache()
    heard: list[tuple[str, str]] = []

    class Listener:
        def storage_changed(self, kind: str, key: str) -> None:
            heard.append((kind, key))

    storage.subscribe(Listener())
    storage.volumes.upsert(_pv("5"))
    storage.volumes.assume(_pv("5", claimed_by="c"))
    storage.volumes.restore("pv")
    storage.volumes.upsert(_pv("4"))
    storage.volumes.delete("pv")
    storage.volumes.delete("pv")
    storage.changed(STORAGE_CLASS_KIND, "fast")

    assert heard == [(VOLUME_KIND, "pv"), (VOLUME_KIND, "pv"), (STORAGE_CLASS_KIND, "fast")]
