"""VolumeBindingArgs: the bind timeout and the ``shape`` that v1.34 rejects with its scoring
gate off (upstream's ValidateVolumeBindingArgsWithOptions)."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.plugins import volume_binding
from kopf_scheduler.plugins.volume_binding import Args
from tests.plugins.volume_binding_support import handle_with, storage_with


@pytest.mark.parametrize(
    ("raw", "timeout"),
    [
        pytest.param(None, 600, id="defaults"),
        pytest.param({}, 600, id="empty"),
        pytest.param({"bindTimeoutSeconds": None}, 600, id="null-timeout"),
        pytest.param({"bindTimeoutSeconds": 300}, 300, id="timeout"),
        pytest.param({"bindTimeoutSeconds": 0}, 0, id="zero-timeout"),
        pytest.param({"shape": None}, 600, id="null-shape"),
        pytest.param(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "VolumeBindingArgs"},
            600,
            id="type-meta",
        ),
    ],
)
def test_valid(raw: Any, timeout: int) -> None:
    assert Args.parse(raw) == Args(bind_timeout_seconds=timeout)


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            {"bindTimeoutSeconds": -1},
            "args.bindTimeoutSeconds",
            "invalid BindTimeoutSeconds, should not be a negative value",
            id="negative-timeout",
        ),
        pytest.param(
            {"bindTimeoutSeconds": "600"},
            "args.bindTimeoutSeconds",
            "must be an integer, got '600'",
            id="timeout-not-integer",
        ),
        pytest.param(
            {"bindTimeoutSeconds": True},
            "args.bindTimeoutSeconds",
            "must be an integer, got True",
            id="timeout-boolean",
        ),
        pytest.param(
            {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
            "args.shape",
            "unexpected field `shape`, remove it or turn on the feature gate "
            "StorageCapacityScoring",
            id="shape-without-gate",
        ),
        pytest.param(
            {"shape": []},
            "args.shape",
            "unexpected field `shape`, remove it or turn on the feature gate "
            "StorageCapacityScoring",
            id="empty-shape-without-gate",
        ),
        pytest.param(
            {"bindTimeout": 5},
            "args.bindTimeout",
            "unknown field; did you mean 'bindTimeoutSeconds'?",
            id="unknown-field",
        ),
        pytest.param([], "args", "must be an object, got []", id="not-an-object"),
    ],
)
def test_invalid(raw: Any, field: str, reason: str) -> None:
    with pytest.raises(InvalidArgsError) as raised:
        Args.parse(raw)
    assert (raised.value.field, raised.value.reason) == (field, reason)


def test_factory_takes_the_args() -> None:
    plugin = volume_binding.new({"bindTimeoutSeconds": 30}, handle_with(storage_with()))
    assert plugin.name == volume_binding.NAME == "VolumeBinding"
    assert plugin.args.bind_timeout_seconds == 30
