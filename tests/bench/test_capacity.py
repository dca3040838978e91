"""The capacity benchmark's snapshot is a cluster that could exist, and its count is the truth."""

from __future__ import annotations

import re
import subprocess
from collections import Counter, defaultdict

import pytest
from bench.__main__ import main

from bench import capacity


def _per_node(items: list[dict]) -> tuple[Counter[str], dict[str, list[int]]]:
    pods: Counter[str] = Counter()
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item in items:
        if item["kind"] != "Pod":
            continue
        node = item["spec"]["nodeName"]
        requests = item["spec"]["containers"][0]["resources"]["requests"]
        pods[node] += 1
        used[node][0] += capacity._millis(requests["cpu"])
        used[node][1] += capacity._mebibytes(requests["memory"])
    return pods, used


def test_the_snapshot_overcommits_no_node_and_is_the_same_every_time() -> None:
    listing = capacity.snapshot(50, 500)
    assert listing == capacity.snapshot(50, 500)
    assert Counter(item["kind"] for item in listing["items"]) == {"Node": 50, "Pod": 500}
    pods, used = _per_node(listing["items"])
    assert all(cpu <= 16_000 and memory <= 64 * 1024 for cpu, memory in used.values())
    assert max(pods.values()) <= 110
    requested = sum(cpu for cpu, _ in used.values()) / (50 * 16_000)
    assert 0.5 < requested < 0.95


def test_a_snapshot_that_cannot_hold_its_pods_is_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        capacity.snapshot(1, 200)


def test_the_command_counts_the_copies_the_free_room_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listing = capacity.snapshot(12, 90)
    pods, used = _per_node(listing["items"])
    expected = sum(
        min((16_000 - used[name][0]) // 1000, (64 * 1024 - used[name][1]) // 4096, 110 - pods[name])
        for name in (
            item["metadata"]["name"] for item in listing["items"] if item["kind"] == "Node"
        )
    )
    assert main(["capacity", "--nodes", "12", "--pods", "90", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert f", {expected} copies (" in out
    assert re.search(r"run 1: [0-9.]+ s \(CPU [0-9.]+ s\)", out), out


def _commit(revision: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", revision], capture_output=True, text=True, check=True
    ).stdout.strip()[:10]


def test_revisions_are_timed_in_turn_each_round(capsys: pytest.CaptureFixture[str]) -> None:
    before, after = _commit("HEAD~1"), _commit("HEAD")
    arguments = ["capacity", "--nodes", "3", "--pods", "9", "--rounds", "2"]
    assert main([*arguments, "--revisions", "HEAD~1,HEAD"]) == 0
    runs = [line.split(":")[0].strip() for line in capsys.readouterr().out.splitlines()[1:]]
    assert runs == [
        f"run 1, {before}",
        f"run 1, {after}",
        f"run 2, {before}",
        f"run 2, {after}",
    ]
    with pytest.raises(SystemExit):
        main([*arguments, "--revisions", "HEAD,HEAD"])
    assert "name each commit once" in capsys.readouterr().err
