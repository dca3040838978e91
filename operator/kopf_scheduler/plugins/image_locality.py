"""ImageLocality: prefer nodes that already hold the pod's container images.

A node's raw score is the sum, over the pod's init containers and containers whose image the node
lists, of the image size scaled by the share of cluster nodes that have the image
(``size * nodes_with_image / all_nodes``). Scaling by spread keeps a popular image from pulling
every pod onto the same few nodes. The sum is clamped to ``[23 MiB, 1000 MiB * containers]`` and
mapped linearly onto ``[0, 100]`` with integer arithmetic, as upstream does; there is no
normalisation step.

Image names in a pod spec are compared with the names a node reports after adding ``:latest``
to names that carry neither a tag nor a digest. Registry aliases (``docker.io/library/x`` versus
``x``) are not reconciled, as upstream does not reconcile them either.

The batch Score adds the scaled sizes up over the node columns' image index (image name -> the
nodes listing it), so each image costs one addition per group of nodes sharing its state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
"""Image bytes below which a node gets no credit."""
MAX_CONTAINER_THRESHOLD = 1000 * MB
"""Image bytes per container at which a node gets full credit."""


def normalized_image_name(name: str) -> str:
    """``name`` with ``:latest`` appended when it has no tag or digest."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: api.ImageState, total_num_nodes: int) -> int:
    """The image size scaled by the fraction of nodes that have it (truncated like Go)."""
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Map the summed image bytes onto ``[0, MAX_NODE_SCORE]`` between the two thresholds."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return api.go_div(
        api.MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD
    )


def pod_container_images(pod: Pod) -> list[str]:
    """The image of every init container and container, in spec order ("" when unset)."""
    spec = pod.raw.get("spec") or {}
    images: list[str] = []
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            image = container.get("image") if isinstance(container, Mapping) else None
            images.append(image if isinstance(image, str) else "")
    return images


def sum_image_scores(node_info: api.NodeInfo, images: list[str], total_num_nodes: int) -> int:
    """Sum of the spread-scaled sizes of the ``images`` present on the node."""
    states = node_info.image_states
    total = 0
    for image in images:
        state = states.get(normalized_image_name(image))
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


class ImageLocality:
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle) -> None:
        self._handle = handle

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        total_num_nodes = self._handle.snapshot.num_nodes()
        images = pod_container_images(pod)
        image_sum = (
            sum_image_scores(node_info, images, total_num_nodes) if total_num_nodes > 0 else 0
        )
        return calculate_priority(image_sum, len(images)), api.SUCCESS

    def score_extensions(self) -> api.ScoreExtensions | None:
        return None

    def batch_score(self) -> ImageLocality:
        return self

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        images = pod_container_images(pod)
        if not images:
            return np.zeros(len(positions), dtype=np.int64)
        total_num_nodes = self._handle.snapshot.num_nodes()
        mirror = nodes.mirror
        sums = np.zeros(mirror.size, dtype=np.int64)
        if total_num_nodes > 0:
            index = mirror.image_index()
            for image in images:
                for image_state, members in index.get(normalized_image_name(image), ()):
                    sums[members] += scaled_image_score(image_state, total_num_nodes)
        picked = sums[positions]
        if picked.max(initial=0) >= api.SAFE_LIMIT:
            raise api.Fallback
        max_threshold = MAX_CONTAINER_THRESHOLD * len(images)
        clamped = np.where(picked < MIN_THRESHOLD, MIN_THRESHOLD, np.minimum(picked, max_threshold))
        result: api.IntArray = (
            api.MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        )
        return result


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> ImageLocality:
    api.reject_unknown(api.ensure_mapping(args), set())
    return ImageLocality(handle)
