"""The order in which nodes are examined: round-robin over zones, like upstream's nodeTree.

When only a fraction of the nodes is filtered (large clusters), interleaving zones spreads the
examined nodes over every zone instead of exhausting the first zone listed.
"""

from __future__ import annotations

from kopf_scheduler.model.node import REGION_LABEL, ZONE_LABEL, Node


def zone_key(node: Node) -> str:
    """Region and zone joined the way upstream keys its node tree (empty for unzoned nodes)."""
    region = node.labels.get(REGION_LABEL, "")
    zone = node.labels.get(ZONE_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names grouped by zone, in insertion order within each zone."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def add(self, node: Node) -> None:
        if node.name in self._zone_of:
            self.update(node)
            return
        zone = zone_key(node)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def update(self, node: Node) -> None:
        old_zone = self._zone_of.get(node.name)
        if old_zone == zone_key(node):
            return
        self.remove(node.name)
        self.add(node)

    def __len__(self) -> int:
        return len(self._zone_of)

    def ordered(self) -> list[str]:
        """Every node name, taking one from each zone in turn."""
        result: list[str] = []
        zones = list(self._zones.values())
        index = 0
        while len(result) < len(self._zone_of):
            for names in zones:
                if index < len(names):
                    result.append(names[index])
            index += 1
        return result
