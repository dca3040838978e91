"""A restarted kube-apiserver that finds its port still taken is started again, within a limit;
any other failure to start, or one past the limit, is the caller's error at once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.localcluster import cluster as local
from e2e.localcluster.cluster import ClusterError, LocalCluster
from e2e.localcluster.listen_ports import port_holders
from e2e.localcluster.processes import spawn_logged


def _run_stand_in(cluster: LocalCluster) -> subprocess.Popen[bytes]:
    """A sleeping process recorded as the cluster's kube-apiserver, for restart to kill."""
    stand_in = [sys.executable, "-c", "import time; time.sleep(60)"]
    popen = spawn_logged(stand_in, cluster.log_dir / "kube-apiserver.log")
    cluster._record("kube-apiserver", popen)
    return popen


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    state_dir = tmp_path / "cluster"
    state_dir.mkdir()
    made = LocalCluster(state_dir)
    made._state["ports"] = {"apiserver": 27882}
    made.log_dir.mkdir(parents=True, exist_ok=True)
    popen = _run_stand_in(made)
    yield made
    for process in (popen, made._popens.get("kube-apiserver")):
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


def _starts(outcomes: list[str], seen: list[str]) -> object:
    def start() -> None:
        outcome = outcomes.pop(0)
        seen.append(outcome)
        if outcome:
            raise ClusterError(f"kube-apiserver exited (code 1) while waiting:\n{outcome}")

    return start


def test_a_taken_port_is_waited_out(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = "failed to listen on 127.0.0.1:27882: bind: address already in use"
    seen: list[str] = []
    monkeypatch.setattr(cluster, "_start_apiserver", _starts([taken, taken, ""], seen))
    monkeypatch.setattr("e2e.localcluster.cluster.time.sleep", lambda seconds: None)
    assert cluster.restart_apiserver() >= 0
    assert seen == [taken, taken, ""]
    assert not cluster.processes()["kube-apiserver"].alive()


def test_any_other_failure_and_a_port_taken_past_the_limit_are_errors(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    monkeypatch.setattr(cluster, "_start_apiserver", _starts(["bad flag", ""], seen))
    with pytest.raises(ClusterError, match="bad flag"):
        cluster.restart_apiserver()
    assert seen == ["bad flag"]

    _run_stand_in(cluster)
    taken = "bind: address already in use"
    seen.clear()
    monkeypatch.setattr(cluster, "_start_apiserver", _starts([taken] * 3, seen))
    monkeypatch.setattr(local, "RESTART_PORT_TIMEOUT", -1.0)
    with pytest.raises(ClusterError, match="address already in use"):
        cluster.restart_apiserver()
    assert seen == [taken]


LISTENER = """
import socket, time
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
time.sleep(30)
"""


def test_port_holders_lists_a_listener() -> None:
    listener = subprocess.Popen(
        [sys.executable, "-c", LISTENER],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert listener.stdout is not None
        port = int(listener.stdout.readline())
        holders = port_holders(port)
    finally:
        listener.kill()
        listener.wait()
    assert "LISTEN" in holders
    assert f":{port}" in holders
