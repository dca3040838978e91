"""Node utilisation in ``simulate``'s report: the JSON's ``utilisation`` section (each node's
requests against its allocatable at the start of the run and at its end, and the cluster's
total) and the page's table, which must show the JSON's numbers and nothing of its own; and
``--compare-config``'s, which shows both runs' utilisation at their end side by side. DRA
devices count per node as the node-local pools' devices that allocated claims hold."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.sim.bundled_scenarios import bundled_example
from kopf_scheduler.sim.simulate_html import render_simulation_html
from kopf_scheduler.sim.utilisation import node_utilisation
from tests.sim.support import node, pod, report, simulate, simulate_docs
from tests.sim.test_compare import fit_config, two_nodes_one_busy

Raw = dict[str, Any]
GPU = "example.com/gpu"
GIB = 1 << 30


def _with_gpus(raw: Raw, count: int) -> Raw:
    raw["status"]["allocatable"][GPU] = str(count)
    return raw


def _asking_gpus(raw: Raw, count: int) -> Raw:
    raw["spec"]["containers"][0]["resources"]["requests"][GPU] = str(count)
    return raw


def _finished(raw: Raw) -> Raw:
    raw["status"] = {"phase": "Succeeded"}
    return raw


def _preemption() -> list[Raw]:
    """``low`` fills n1; ``high`` can only get in by evicting it."""
    return [
        node("n1", cpu="2", memory="4Gi"),
        pod("low", cpu="2", memory="1Gi", node_name="n1", priority=0, grace=0),
        pod("high", cpu="1", memory="2Gi", priority=1000),
    ]


class _UtilisationTable(HTMLParser):
    """The cells of ``table#utilisation``: per row (the node, or ``total``), per resource, the
    amounts before, after and allocatable the cell carries, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, tuple[int, int, int]]] = {}
        self.labels: dict[str, dict[str, str]] = {}
        self._inside = False
        self._row = ""
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._inside = found.get("id") == "utilisation"
        elif self._inside and tag == "tr" and (found.get("data-node") or found.get("id")):
            self._row = found.get("data-node") or "total"
            self.rows[self._row], self.labels[self._row] = {}, {}
        elif self._inside and tag == "td" and found.get("data-resource") and self._row:
            resource = str(found["data-resource"])
            self._cell = resource
            self.labels[self._row][resource] = ""
            if "data-after" in found:
                self.rows[self._row][resource] = (
                    int(str(found["data-before"])),
                    int(str(found["data-after"])),
                    int(str(found["data-allocatable"])),
                )

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None
        elif tag == "table":
            self._inside = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self.labels[self._row][self._cell] += data


def _table(page: str) -> _UtilisationTable:
    parser = _UtilisationTable()
    parser.feed(page)
    return parser


def test_the_json_has_each_nodes_requests_at_the_start_and_at_the_end(tmp_path: Path) -> None:
    docs = [
        node("a", cpu="4", memory="8Gi", pods="10"),
        node("b", cpu="2", memory="4Gi", pods="5"),
        pod("running", cpu="1500m", memory="1Gi", node_name="a"),
        pod("done", cpu="3", memory="3Gi", node_name="a"),
        pod("new", cpu="1", memory="2Gi"),
    ]
    _finished(docs[3])  # a Succeeded pod holds nothing
    section = report(simulate_docs(tmp_path, docs))["utilisation"]
    placed = {n["node"]: n for n in section["nodes"]}
    assert list(placed) == ["a", "b"]
    assert placed["a"]["allocatable"] == {"cpu": 4000, "memory": 8 * GIB, "pods": 10}
    assert placed["b"]["allocatable"] == {"cpu": 2000, "memory": 4 * GIB, "pods": 5}
    assert placed["a"]["before"] == {"cpu": 1500, "memory": 1 * GIB, "pods": 1}
    # LeastAllocated sends the new pod to the emptier node.
    assert placed["b"]["before"] == {"cpu": 0, "memory": 0, "pods": 0}
    assert placed["a"]["after"] == placed["a"]["before"]
    assert placed["b"]["after"] == {"cpu": 1000, "memory": 2 * GIB, "pods": 1}
    assert section["total"] == {
        "allocatable": {"cpu": 6000, "memory": 12 * GIB, "pods": 15},
        "before": {"cpu": 1500, "memory": 1 * GIB, "pods": 1},
        "after": {"cpu": 2500, "memory": 3 * GIB, "pods": 2},
    }


def test_a_node_whose_pod_was_evicted_has_less_after(tmp_path: Path) -> None:
    rep = report(simulate_docs(tmp_path, _preemption()))
    assert {p["name"]: p["status"] for p in rep["pods"]} == {"low": "Preempted", "high": "Bound"}
    [n1] = rep["utilisation"]["nodes"]
    assert n1["before"] == {"cpu": 2000, "memory": 1 * GIB, "pods": 1}
    assert n1["after"] == {"cpu": 1000, "memory": 2 * GIB, "pods": 1}


def test_extended_resources_are_listed_for_every_node(tmp_path: Path) -> None:
    docs = [
        _with_gpus(node("gpu", cpu="4"), 4),
        node("plain", cpu="4"),
        _asking_gpus(pod("trainer", cpu="1", node_name="gpu"), 1),
        _asking_gpus(pod("more", cpu="1"), 2),
    ]
    section = report(simulate_docs(tmp_path, docs))["utilisation"]
    placed = {n["node"]: n for n in section["nodes"]}
    assert list(section["total"]["allocatable"]) == ["cpu", "memory", "pods", GPU]
    assert (placed["gpu"]["allocatable"][GPU], placed["gpu"]["before"][GPU]) == (4, 1)
    assert placed["gpu"]["after"][GPU] == 3
    assert placed["plain"]["allocatable"][GPU] == placed["plain"]["after"][GPU] == 0
    assert section["total"]["after"][GPU] == 3


def test_the_page_shows_the_numbers_of_the_json(tmp_path: Path) -> None:
    docs = [*_preemption(), node("n2", cpu="1", memory="1Gi")]
    rep = report(simulate_docs(tmp_path, docs), explain=True)
    table = _table(render_simulation_html(rep))
    section = rep["utilisation"]
    expected = {
        entry["node"]: {
            resource: (entry["before"][resource], entry["after"][resource], offered)
            for resource, offered in entry["allocatable"].items()
        }
        for entry in [*section["nodes"], {"node": "total", **section["total"]}]
    }
    assert table.rows == expected
    # n1 lost its pod to a smaller one: the page says so in words as well.
    assert table.labels["n1"]["cpu"] == "2 → 1 of 2"
    assert table.labels["n1"]["memory"] == "1Gi → 2Gi of 4Gi"
    assert table.labels["total"]["cpu"] == "2 → 1 of 3"


def test_node_names_in_the_table_are_text(tmp_path: Path) -> None:
    hostile = "n<img src=x onerror=alert(1)>"
    rep = report(simulate_docs(tmp_path, [node(hostile, cpu="2"), pod("p", cpu="1")]))
    page = render_simulation_html(rep)
    assert "<img" not in page
    assert list(_table(page).rows) == [hostile, "total"]
    assert f'data-node="{html.escape(hostile)}"' in page


def test_a_comparison_shows_both_runs_utilisation_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = two_nodes_one_busy(tmp_path)
    spread = fit_config(tmp_path / "spread.yaml")
    pack = fit_config(tmp_path / "pack.yaml", scoringStrategy={"type": "MostAllocated"})
    args = ["simulate", str(scenario), "--compare-config", str(spread), str(pack)]
    assert main([*args, "-o", "json"]) == 3
    answer = json.loads(capsys.readouterr().out)["utilisation"]
    assert main([*args, "-o", "html"]) == 3
    table = _table(capsys.readouterr().out)
    # Spreading puts the new pod on n2, packing on n1; both start from busy on n1.
    ends = {
        side: {entry["node"]: entry["after"]["cpu"] for entry in answer[side]["nodes"]}
        for side in ("a", "b")
    }
    assert ends == {"a": {"n1": 2000, "n2": 1000}, "b": {"n1": 3000, "n2": 0}}
    assert table.rows == {
        entry_a["node"]: {
            resource: (entry_a["after"][resource], entry_b["after"][resource], offered)
            for resource, offered in entry_a["allocatable"].items()
        }
        for entry_a, entry_b in zip(
            [*answer["a"]["nodes"], {"node": "total", **answer["a"]["total"]}],
            [*answer["b"]["nodes"], {"node": "total", **answer["b"]["total"]}],
            strict=True,
        )
    }


def _slice(name: str, pool: str, devices: list[str], generation: int = 1, **where: Any) -> Raw:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
            "devices": [{"name": device} for device in devices],
            **where,
        },
    }


def _claim(name: str, pool: str, devices: list[str]) -> Raw:
    results = [
        {"request": "gpu", "driver": "gpu.example.com", "pool": pool, "device": device}
        for device in devices
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def test_a_nodes_devices_are_those_of_its_pools_newest_generation() -> None:
    nodes = {name: node(name) for name in ("a", "b")}
    slices = [
        _slice("a-old", "a", ["gpu-0", "gpu-1", "gpu-2"], generation=1, nodeName="a"),
        _slice("a-new", "a", ["gpu-0", "gpu-1"], generation=2, nodeName="a"),
        _slice("b", "b", ["gpu-0"], nodeName="b"),
        # Shared by every node: no one node's devices.
        _slice("shared", "fabric", ["gpu-0", "gpu-1"], allNodes=True),
    ]
    claims = [_claim("on-a", "a", ["gpu-1"]), _claim("on-fabric", "fabric", ["gpu-0"])]
    found = node_utilisation(nodes, [], slices, claims)
    devices = "devices/gpu.example.com"
    assert (found["a"].requested[devices], found["a"].allocatable[devices]) == (1, 2)
    assert (found["b"].requested[devices], found["b"].allocatable[devices]) == (0, 1)


def test_the_devices_example_ends_with_every_gpu_in_use() -> None:
    # The example's own account: node-a and node-b publish two GPUs each; trainer takes both of
    # node-a's, notebook node-b's h100, the viewers' shared claim node-b's a100.
    rep = report(simulate([bundled_example("devices")]))
    devices = "devices/gpu.example.com"
    section = rep["utilisation"]
    assert {
        entry["node"]: (entry["before"][devices], entry["after"][devices])
        for entry in section["nodes"]
    } == {"node-a": (0, 2), "node-b": (0, 2)}
    assert section["total"]["allocatable"][devices] == 4
    page = render_simulation_html(rep)
    assert _table(page).labels["total"][devices] == "0 → 4 of 4"
    assert "gpu.example.com devices" in page
