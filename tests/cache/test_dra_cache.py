"""The claim tracker: an assumed claim stands until the watch delivers a newer version, restore
goes back to the watch's copy, the devices in use follow claims gaining and losing an allocation
(admin access does not count), in-flight allocations count until removed, and every visible
change reaches the listeners (the ResourceClaim cluster events)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.cache.storage_cache import AssumeConflictError
from kopf_scheduler.dra.allocator import DeviceID
from kopf_scheduler.model.resource_claim import ResourceClaim

DRIVER = "gpu.example.com"


def claim(version: str, *devices: str, admin: bool = False, name: str = "c") -> ResourceClaim:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
    }
    raw["metadata"]["resourceVersion"] = version
    if devices:
        results = [
            {"request": "r", "driver": DRIVER, "pool": "p", "device": d, "adminAccess": admin}
            for d in devices
        ]
        raw["status"] = {"allocation": {"devices": {"results": results}}}
    return ResourceClaim(raw)


def device(name: str) -> DeviceID:
    return DeviceID(DRIVER, "p", name)


def test_an_assumed_claim_stands_until_the_watch_is_newer() -> None:
    cache = DraCache()
    changes: list[tuple[str | None, str | None]] = []
    cache.subscribe(
        lambda old, new: changes.append(
            (old.resource_version if old else None, new.resource_version if new else None)
        )
    )
    cache.put_claim(claim("1"))
    cache.assume_claim(claim("2", "gpu-0"))
    cache.put_claim(claim("2"))  # the watch, not newer: ignored
    seen = cache.claim("default", "c")
    assert seen is not None and seen.allocation is not None
    assert cache.allocated_devices() == {device("gpu-0")}
    cache.put_claim(claim("3", "gpu-0"))  # the API server caught up with the write
    assert cache.allocated_devices() == {device("gpu-0")}
    assert changes == [(None, "1"), ("1", "2"), ("2", "3")]
    cache.delete_claim("default/c")
    assert cache.allocated_devices() == set()
    assert cache.claim("default", "c") is None


def test_restore_goes_back_to_the_watch_copy_and_frees_the_devices() -> None:
    cache = DraCache()
    cache.put_claim(claim("1"))
    cache.assume_claim(claim("2", "gpu-0"))
    cache.restore_claim("default/c")
    seen = cache.claim("default", "c")
    assert seen is not None and seen.resource_version == "1"
    assert cache.allocated_devices() == set()


def test_an_assumption_older_than_what_is_known_is_refused() -> None:
    cache = DraCache()
    cache.put_claim(claim("5"))
    with pytest.raises(AssumeConflictError):
        cache.assume_claim(claim("4", "gpu-0"))


def test_in_flight_allocations_count_until_removed() -> None:
    cache = DraCache()
    allocated = copy.deepcopy(dict(claim("1", "gpu-3").raw))
    cache.signal_pending_allocation("uid-c", allocated)
    assert cache.has_pending_allocation("uid-c")
    assert cache.allocated_devices() == {device("gpu-3")}
    assert cache.remove_pending_allocation("uid-c")
    assert not cache.remove_pending_allocation("uid-c")
    assert cache.allocated_devices() == set()


def test_admin_access_does_not_take_a_device() -> None:
    cache = DraCache()
    cache.put_claim(claim("1", "gpu-0", admin=True))
    assert cache.allocated_devices() == set()
