"""What another module attaches to a local cluster (a real node) is stopped by ``down`` first,
through the teardown it registered; a cluster cannot be taken down past something it cannot
stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.localcluster import cluster as local
from e2e.localcluster.cluster import ClusterError, LocalCluster


def _attach(state_dir: Path, key: str) -> None:
    cluster = LocalCluster(state_dir)
    cluster.attachment(key)["pid"] = 4242
    cluster.save_state()


def test_down_runs_the_registered_teardown_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "cluster"
    state_dir.mkdir()
    _attach(state_dir, "gadget")
    seen: list[tuple[dict[str, object], float, bool]] = []

    def tear_down(cluster: LocalCluster, timeout: float, keep_logs: bool) -> None:
        seen.append((dict(cluster.attachment("gadget")), timeout, keep_logs))
        cluster.detach("gadget")

    monkeypatch.setitem(local._TEARDOWNS, "gadget", tear_down)
    reopened = LocalCluster(state_dir)
    assert reopened.is_attached("gadget")
    reopened.down(timeout=3, keep_logs=True)
    assert seen == [({"pid": 4242}, 3, True)]
    assert not reopened.is_attached("gadget")
    assert not state_dir.exists()


def test_down_refuses_to_leave_an_attachment_it_cannot_stop(tmp_path: Path) -> None:
    state_dir = tmp_path / "cluster"
    state_dir.mkdir()
    _attach(state_dir, "contraption")
    with pytest.raises(ClusterError, match=r"a contraption is attached .* e2e\.localcluster down"):
        LocalCluster(state_dir).down()
    assert LocalCluster(state_dir).is_attached("contraption")


def test_the_real_node_registers_its_teardown() -> None:
    from e2e.localcluster import realnode

    assert local._TEARDOWNS[realnode.STATE_KEY] is realnode._tear_down
