"""ImageLocality: spread-scaled image sizes, thresholds and ``:latest`` normalisation; cases
follow upstream's image_locality_test.go, with image states built by the real cache."""

from __future__ import annotations

import hashlib

import pytest

from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import MAX_NODE_SCORE
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import image_locality
from kopf_scheduler.plugins.image_locality import (
    MB,
    calculate_priority,
    normalized_image_name,
    pod_container_images,
)
from tests.builders import make_node, make_pod

NodeImages = list[tuple[list[str], int]]

NODE_40_300_2000: NodeImages = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: NodeImages = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_600_40_900: NodeImages = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: NodeImages = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: NodeImages = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: NodeImages = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: NodeImages = []


def _pod(images: list[str], init_images: list[str] | None = None) -> Pod:
    raw = make_pod("p").obj()
    raw["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    if init_images:
        raw["spec"]["initContainers"] = [
            {"name": f"i{i}", "image": im} for i, im in enumerate(init_images)
        ]
    return Pod(raw)


def _snapshot(nodes: dict[str, NodeImages]) -> Snapshot:
    cache = Cache(clock=lambda: 0.0)
    for name, images in nodes.items():
        builder = make_node(name)
        for names, size in images:
            builder.image(names, size)
        cache.add_node(builder.node())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"),
    [
        pytest.param(
            _pod(["gcr.io/40", "gcr.io/250"]),
            {"node1": NODE_40_300_2000, "node2": NODE_250_10},
            {"node1": 0, "node2": 5},
            id="two-images-spread-prefer-larger",
        ),
        pytest.param(
            _pod(["gcr.io/40", "gcr.io/300"]),
            {"node1": NODE_40_300_2000, "node2": NODE_250_10},
            {"node1": 7, "node2": 0},
            id="two-images-on-one-node",
        ),
        pytest.param(
            _pod(["gcr.io/10", "gcr.io/4000"]),
            {"node1": NODE_4000_30, "node2": NODE_250_10},
            {"node1": MAX_NODE_SCORE, "node2": 0},
            id="exceeds-limit-uses-limit",
        ),
        pytest.param(
            _pod(["gcr.io/10", "gcr.io/4000"]),
            {"node1": NODE_4000_30, "node2": NODE_250_10, "node3": NO_IMAGES},
            {"node1": 66, "node2": 0, "node3": 0},
            id="exceeds-limit-with-imageless-node",
        ),
        pytest.param(
            _pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            {"node1": NODE_600_40_900, "node2": NODE_300_600_900, "node3": NO_IMAGES},
            {"node1": 32, "node2": 36, "node3": 0},
            id="multiple-large-images",
        ),
        pytest.param(
            _pod(["gcr.io/30", "gcr.io/40"]),
            {"node1": NODE_20_30_40, "node2": NODE_4000_30},
            {"node1": 1, "node2": 0},
            id="multiple-small-images",
        ),
        pytest.param(
            _pod(["gcr.io/30"], init_images=["gcr.io/300"]),
            {"node1": NODE_40_300_2000, "node2": NODE_20_30_40},
            {"node1": 6, "node2": 0},
            id="init-containers-count",
        ),
        pytest.param(
            _pod(["gcr.io/300:v1"]),
            {"node1": NODE_40_300_2000, "node2": NO_IMAGES},
            {"node1": 12, "node2": 0},
            id="explicit-tag-matches-alias",
        ),
        pytest.param(
            _pod(["gcr.io/300:v2"]),
            {"node1": NODE_40_300_2000},
            {"node1": 0},
            id="other-tag-does-not-match",
        ),
    ],
)
def test_score(pod: Pod, nodes: dict[str, NodeImages], expected: dict[str, int]) -> None:
    snapshot = _snapshot(nodes)
    plugin = image_locality.new(None, Handle(snapshot=snapshot))
    assert plugin.score_extensions() is None
    got = {}
    for info in snapshot.node_info_list:
        score, status = plugin.score(CycleState(), pod, info)
        assert status.is_success()
        got[info.name] = score
    assert got == expected


def _digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("root", "root:latest", id="add-latest"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="registry-port"),
        pytest.param("root:tag", "root:tag", id="keep-tag"),
        pytest.param("root@" + _digest("root"), "root@" + _digest("root"), id="keep-digest"),
    ],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


@pytest.mark.parametrize(
    ("total", "containers", "expected"),
    [
        pytest.param(0, 1, 0, id="below-min"),
        pytest.param(23 * MB, 1, 0, id="at-min"),
        pytest.param(1000 * MB, 1, MAX_NODE_SCORE, id="at-max"),
        pytest.param(5000 * MB, 2, MAX_NODE_SCORE, id="above-max"),
        pytest.param(511 * MB, 1, 49, id="truncates"),
        pytest.param(0, 0, 0, id="no-containers"),
    ],
)
def test_calculate_priority(total: int, containers: int, expected: int) -> None:
    assert calculate_priority(total, containers) == expected


def test_pod_container_images_lists_init_first_and_keeps_missing() -> None:
    raw = make_pod("p").obj()
    raw["spec"]["containers"] = [{"name": "a", "image": "x"}, {"name": "b"}]
    raw["spec"]["initContainers"] = [{"name": "i", "image": "y"}]
    assert pod_container_images(Pod(raw)) == ["y", "x", ""]
