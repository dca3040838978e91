"""DynamicResources for pods without ResourceClaims: the PreFilter skip and its state, the
PostFilter message, the ``not found`` error when PreFilter never ran, and the plugin's
arguments. The claimless cases follow upstream's dynamicresources_test.go ("empty"); pods with
claims are in test_dynamic_resources_claims.py."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import API_VERSION, KIND, parse_config
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import dynamic_resources
from kopf_scheduler.plugins.dynamic_resources import (
    NO_CLAIMS_TO_DEALLOCATE,
    STATE_NOT_FOUND,
    DynamicResources,
    DynamicResourcesArgs,
)
from tests.builders import PodBuilder, make_node, make_pod, node_info

NOT_FOUND = Status(Code.ERROR, STATE_NOT_FOUND)


def _plugin() -> DynamicResources:
    return dynamic_resources.new(None, Handle())


def _with_claims(
    builder: PodBuilder, claims: list[dict[str, Any]], statuses: list[dict[str, Any]]
) -> Pod:
    """The pod with ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` set."""
    raw = builder.obj()
    raw["spec"]["resourceClaims"] = claims
    if statuses:
        raw["status"]["resourceClaimStatuses"] = statuses
    return Pod(raw)


def _pre_filtered(pod: Pod) -> tuple[CycleState, Status]:
    state = CycleState()
    result, status = _plugin().pre_filter(state, pod, [node_info(make_node("n1"))])
    assert result is None
    return state, status


def test_claimless_pod_skips_and_postfilter_has_no_claims_to_deallocate() -> None:
    plugin = _plugin()
    pod = make_pod("p").pod()
    state, status = _pre_filtered(pod)
    assert status.code == Code.SKIP
    assert plugin.post_filter(state, pod, NodeToStatus()) == (
        None,
        Status(Code.UNSCHEDULABLE, NO_CLAIMS_TO_DEALLOCATE),
    )
    assert plugin.post_filter(state, pod, NodeToStatus())[1].message() == (
        "no new claims to deallocate"
    )


def test_later_points_pass_for_a_claimless_pod_once_prefilter_ran() -> None:
    plugin = _plugin()
    pod = make_pod("p").pod()
    state, _ = _pre_filtered(pod)
    assert plugin.filter(state, pod, node_info(make_node("n1"))).is_success()
    assert plugin.reserve(state, pod, "n1").is_success()


async def test_prebind_passes_for_a_claimless_pod_once_prefilter_ran() -> None:
    pod = make_pod("p").pod()
    state, _ = _pre_filtered(pod)
    assert (await _plugin().pre_bind(state, pod, "n1")).is_success()


def test_postfilter_without_prefilter_state_is_the_not_found_error() -> None:
    """What happens when an earlier PreFilter turned the pod away: this PreFilter never ran."""
    pod = make_pod("p").pod()
    result, status = _plugin().post_filter(CycleState(), pod, NodeToStatus())
    assert result is None
    assert status == NOT_FOUND
    assert status.message() == "not found"


async def test_every_point_after_prefilter_needs_its_state() -> None:
    plugin = _plugin()
    pod = make_pod("p").pod()
    assert plugin.filter(CycleState(), pod, node_info(make_node("n1"))) == NOT_FOUND
    assert plugin.reserve(CycleState(), pod, "n1") == NOT_FOUND
    assert await plugin.pre_bind(CycleState(), pod, "n1") == NOT_FOUND


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        pytest.param(None, 10.0, id="default"),
        pytest.param({}, 10.0, id="empty"),
        pytest.param({"filterTimeout": None}, 10.0, id="null-means-default"),
        pytest.param({"filterTimeout": "0"}, 0.0, id="zero-disables"),
        pytest.param({"filterTimeout": "0s"}, 0.0, id="zero-seconds"),
        pytest.param({"filterTimeout": "1m30s"}, 90.0, id="minutes-and-seconds"),
        pytest.param({"filterTimeout": "250ms"}, 0.25, id="milliseconds"),
        pytest.param({"filterTimeout": "+1.5s"}, 1.5, id="explicit-sign-and-fraction"),
    ],
)
def test_args_accepted(raw: dict[str, Any] | None, seconds: float) -> None:
    assert DynamicResourcesArgs.parse(raw).filter_timeout == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            {"filterTimeout": "-1s"},
            "args.filterTimeout",
            "must be zero or positive, got '-1s'",
            id="negative",
        ),
        pytest.param(
            {"filterTimeout": 10},
            "args.filterTimeout",
            "must be a duration such as '10s', got 10",
            id="number",
        ),
        pytest.param(
            {"filterTimeout": "10"},
            "args.filterTimeout",
            "must be a duration such as '10s', got '10'",
            id="no-unit",
        ),
        pytest.param(
            {"filterTimeout": "ten seconds"},
            "args.filterTimeout",
            "must be a duration such as '10s', got 'ten seconds'",
            id="words",
        ),
        pytest.param({"bindTimeout": "1s"}, "args.bindTimeout", "unknown field", id="unknown"),
    ],
)
def test_args_rejected(raw: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(InvalidArgsError) as info:
        DynamicResourcesArgs.parse(raw)
    assert (info.value.field, info.value.reason) == (field, reason)


def test_plugin_config_error_names_the_field() -> None:
    config = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [
            {
                "pluginConfig": [
                    {"name": "DynamicResources", "args": {"filterTimeout": "-5s"}},
                ]
            }
        ],
    }
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert "profiles[0].pluginConfig[0].args.filterTimeout" in str(info.value)
    assert "must be zero or positive" in str(info.value)
