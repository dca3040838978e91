"""The local components' listen ports stay out of the range outgoing connections draw from."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from e2e.localcluster import listen_ports


@pytest.fixture
def narrow_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("11000\t60999\n")
    monkeypatch.setattr(listen_ports, "RANGE_FILE", range_file)
    return 11000


def test_ports_are_below_the_ephemeral_range_and_distinct(narrow_range: int) -> None:
    ports = listen_ports.free_ports(50)
    assert len(set(ports)) == 50
    assert all(listen_ports.LOWEST <= port < narrow_range for port in ports)


def test_a_port_in_use_is_never_chosen(narrow_range: int) -> None:
    held = []
    try:
        for port in range(listen_ports.LOWEST, narrow_range):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
        released = {sock.getsockname()[1]: sock for sock in held}
        released = {port: sock for port, sock in released.items() if port % 100 == 7}
        for sock in released.values():
            sock.close()
        held = [sock for sock in held if sock.fileno() != -1]
        ports = listen_ports.free_ports(len(released))
        assert set(ports) == set(released)
    finally:
        for sock in held:
            sock.close()


def test_a_range_too_small_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text(f"{listen_ports.LOWEST + 3} 60999\n")
    monkeypatch.setattr(listen_ports, "RANGE_FILE", range_file)
    with pytest.raises(RuntimeError, match="too few ports below the ephemeral range"):
        listen_ports.free_ports(2)
