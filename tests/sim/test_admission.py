"""A scenario pod means what it would mean on a cluster: the API server's defaults that change a
decision (requests from limits, host ports on the host network) and the Priority admission apply
to every pod the simulator creates, running or pending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sim.support import node, pod, pods_by_name, priority_class, report, simulate_docs

Raw = dict[str, Any]


def _limited(raw: Raw, limits: dict[str, str], *, init: bool = False) -> Raw:
    """``raw`` with a container that sets only ``limits`` (an init container if ``init``)."""
    container = {"name": "limited", "image": "busybox", "resources": {"limits": limits}}
    if init:
        raw["spec"]["initContainers"] = [container]
    else:
        raw["spec"]["containers"] = [container]
    return raw


def _pod_level(raw: Raw, limits: dict[str, str]) -> Raw:
    raw["spec"]["resources"] = {"limits": limits}
    return raw


def _host_network(name: str, port: int) -> Raw:
    raw = pod(name, cpu="100m")
    raw["spec"]["hostNetwork"] = True
    raw["spec"]["containers"][0]["ports"] = [{"containerPort": port}]
    return raw


@pytest.mark.parametrize(
    ("pending", "status", "first_sentence"),
    [
        pytest.param(
            _limited(pod("p", cpu=None), {"cpu": "3"}),
            "Pending",
            "0/1 nodes are available: 1 Insufficient cpu.",
            id="limit-becomes-the-request",
        ),
        pytest.param(
            _limited(pod("p", cpu=None), {"cpu": "3"}, init=True),
            "Pending",
            "0/1 nodes are available: 1 Insufficient cpu.",
            id="init-container-limit",
        ),
        pytest.param(
            _limited(pod("p", cpu=None), {"cpu": "1", "memory": "32Gi"}),
            "Pending",
            "0/1 nodes are available: 1 Insufficient memory.",
            id="each-resource-separately",
        ),
        pytest.param(
            _pod_level(pod("p", cpu=None), {"cpu": "3"}),
            "Pending",
            "0/1 nodes are available: 1 Insufficient cpu.",
            id="pod-level-limit-without-container-requests",
        ),
        pytest.param(
            _pod_level(pod("p", cpu="1"), {"cpu": "3"}),
            "Bound",
            "",
            id="pod-level-limit-with-container-requests",
        ),
    ],
)
def test_requests_default_to_limits(
    tmp_path: Path, pending: Raw, status: str, first_sentence: str
) -> None:
    result = simulate_docs(tmp_path, [node("n1", cpu="2", memory="16Gi"), pending])
    entry = pods_by_name(report(result))["p"]
    assert entry["status"] == status
    assert entry["message"].startswith(first_sentence)
    assert bool(entry["message"]) is bool(first_sentence)


def test_a_request_given_is_kept_beside_a_larger_limit(tmp_path: Path) -> None:
    raw = _limited(pod("p", cpu=None), {"cpu": "3", "memory": "1Gi"})
    raw["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    result = simulate_docs(tmp_path, [node("n1", cpu="2"), raw])
    assert pods_by_name(report(result))["p"]["status"] == "Bound"
    resources = result.cluster.pods["default/p"]["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "1", "memory": "1Gi"}


def test_host_network_ports_are_host_ports(tmp_path: Path) -> None:
    docs = [node("n1"), _host_network("first", 8080), _host_network("second", 8080)]
    result = simulate_docs(tmp_path, docs)
    pods = pods_by_name(report(result))
    assert pods["first"]["status"] == "Bound"
    assert pods["second"]["status"] == "Pending"
    assert pods["second"]["message"].startswith(
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )
    port = result.cluster.pods["default/second"]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "hostPort": 8080}


@pytest.mark.parametrize(
    ("running_class", "global_default", "preempts"),
    [
        pytest.param("batch", False, True, id="named-low-class"),
        pytest.param("critical", False, False, id="named-high-class"),
        pytest.param(None, True, False, id="global-default-class"),
        pytest.param(None, False, True, id="no-class-means-zero"),
    ],
)
def test_running_pods_get_their_priority_from_their_class(
    tmp_path: Path, running_class: str | None, global_default: bool, preempts: bool
) -> None:
    docs = [
        priority_class("batch", 10),
        priority_class("critical", 1000, global_default=global_default),
        node("n1", cpu="2"),
        pod("running", cpu="2", node_name="n1", priority_class=running_class, grace=0),
        pod("incoming", cpu="2", priority=500),
    ]
    result = simulate_docs(tmp_path, docs)
    pods = pods_by_name(report(result))
    expected_priority = {"batch": 10, "critical": 1000}.get(running_class or "", 0)
    if global_default:
        expected_priority = 1000
    assert pods["running"]["priority"] == expected_priority
    assert (pods["incoming"]["status"] == "Bound") is preempts
    assert (pods["running"]["status"] == "Preempted") is preempts
