"""Loopback ports for the local components to listen on, chosen outside the ephemeral range.

A port the kernel hands out for ``bind(0)`` comes from ``ip_local_port_range``: the same range
outgoing connections take their source ports from. While a listener is down (the fault suite
kills kube-apiserver and starts it again on the same port), every client retries against that
port, and one retry whose source port happens to equal the destination connects to itself (TCP
simultaneous open on loopback). That connection then holds the port and the restarted server
exits with "address already in use". A port below the ephemeral range is never a source port, so
a restart always gets its port back.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
from pathlib import Path

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000
"""Well above the ports services usually claim."""
DEFAULT_EPHEMERAL_START = 32768


def _ephemeral_start() -> int:
    try:
        return int(RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_START


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports on ``host`` that are free now and never used as source ports."""
    top = _ephemeral_start()
    if top - LOWEST < count * 4:
        raise RuntimeError(
            f"too few ports below the ephemeral range ({RANGE_FILE}: starts at {top})"
        )
    chosen: list[int] = []
    held: list[socket.socket] = []
    try:
        for port in random.sample(range(LOWEST, top), top - LOWEST):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    finally:
        for sock in held:
            sock.close()
    raise RuntimeError(f"no {count} free ports on {host} below {top}")


def free_port(host: str = "127.0.0.1") -> int:
    """One port as :func:`free_ports` chooses them."""
    return free_ports(1, host)[0]


def port_holders(port: int) -> str:
    """The sockets on ``port`` with their owners as ``ss`` lists them, for a log line that says
    why the port is taken; a note instead when ``ss`` is missing or fails."""
    ss = shutil.which("ss")
    if ss is None:
        return "ss not installed"
    listing = subprocess.run(
        [ss, "-Htanp", f"sport = :{port}"], capture_output=True, text=True, check=False
    )
    if listing.returncode != 0:
        return f"ss failed: {listing.stderr.strip()}"
    lines = [" ".join(line.split()) for line in listing.stdout.splitlines() if line.strip()]
    return "; ".join(lines) or "no socket listed"
