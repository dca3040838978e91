"""``kopf-scheduler run`` started wrong, as a new user starts it.

A kubeconfig that cannot work is a one-line error and exit 2 before anything connects; a health
port that is taken is a one-line error and exit 1 before anything connects; an API server that
cannot be reached (or refuses) is what kube-scheduler keeps retrying, so ``run`` keeps retrying
too: one warning per attempt naming the problem and the wait, ``/readyz`` 503 meanwhile, and a
clean exit on SIGTERM. A server whose certificate the kubeconfig's CA does not sign is one of
those problems: kube-scheduler's informers retry it like any other failed list.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from kopf_scheduler.service.serving_cert import self_signed_pem
from tests.cli.support import (
    Lines,
    assert_one_line_error,
    environment,
    kopf_scheduler,
    write_kubeconfig,
)

Writer = Callable[[Path], str]


def kubeconfig_text(body: str) -> Writer:
    def write(directory: Path) -> str:
        path = directory / "kubeconfig"
        path.write_text(body)
        return str(path)

    return write


def kubeconfig_with(context: dict[str, str]) -> Writer:
    def write(directory: Path) -> str:
        path = directory / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "ctx", "context": context}],
                    "current-context": "ctx",
                }
            )
        )
        return str(path)

    return write


@pytest.mark.parametrize(
    ("writer", "message"),
    [
        pytest.param(
            lambda directory: str(directory / "absent"),
            "kubeconfig {path}: the file does not exist",
            id="missing",
        ),
        pytest.param(
            kubeconfig_text("clusters: [\n"),
            "kubeconfig {path}: line 2, column 1: not valid YAML: while parsing a flow node, "
            "expected the node content, but found '<stream end>'",
            id="not-yaml",
        ),
        pytest.param(
            kubeconfig_text("current-context: gone\ncontexts: []\n"),
            "kubeconfig {path}: current-context 'gone' is not among the contexts (defined: none)",
            id="missing-context",
        ),
        pytest.param(
            kubeconfig_with({"cluster": "nope", "user": "u"}),
            "kubeconfig {path}: context 'ctx': names cluster 'nope', which is not defined",
            id="missing-cluster",
        ),
        pytest.param(
            kubeconfig_with({"cluster": "c", "user": "nobody"}),
            "kubeconfig {path}: context 'ctx': names user 'nobody', which is not defined",
            id="missing-user",
        ),
    ],
)
def test_a_kubeconfig_that_cannot_work_is_one_line_and_exit_2(
    tmp_path: Path, writer: Writer, message: str
) -> None:
    path = writer(tmp_path)
    outcome = kopf_scheduler(
        "run", "--kubeconfig", path, "--health-port", "0", env=environment(tmp_path)
    )
    assert_one_line_error(outcome, 2, message.format(path=path))


def test_without_any_kubeconfig_the_default_path_is_named(tmp_path: Path) -> None:
    outcome = kopf_scheduler("run", "--health-port", "0", env=environment(tmp_path))
    expected = (
        f"kubeconfig {tmp_path}/.kube/config: the file does not exist "
        "(give --kubeconfig, or set KUBECONFIG)"
    )
    assert_one_line_error(outcome, 2, expected)


def test_a_taken_health_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:9")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        outcome = kopf_scheduler(
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--health-host",
            "127.0.0.1",
            "--health-port",
            str(port),
            env=environment(tmp_path),
        )
    message = f"cannot serve /healthz, /readyz and /metrics on 127.0.0.1:{port}: "
    assert_one_line_error(outcome, 1, message + "Address already in use")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running(kubeconfig: Path, home: Path) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    """``kopf-scheduler run`` with JSON logs, its output merged into one stream of lines."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf_scheduler",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--health-host",
            "127.0.0.1",
            "--health-port",
            "0",
            "--log-format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment(home),
    )
    assert process.stdout is not None
    try:
        yield process, Lines(process.stdout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def unreachable_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{_closed_port()}")
    with running(kubeconfig, tmp_path) as run:
        yield run


def _event(line: str) -> dict[str, object]:
    try:
        parsed = json.loads(line)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _readyz(scheme: object, port: object) -> tuple[int, dict[str, object]]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(
            f"{scheme}://127.0.0.1:{port}/readyz", context=context, timeout=30
        ) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_an_unreachable_api_server_is_retried_with_a_warning_and_readyz_false(
    unreachable_run: tuple[subprocess.Popen[str], Lines],
) -> None:
    process, lines = unreachable_run
    serving = _event(lines.wait_for(lambda line: _event(line).get("event") == "serving"))
    first = _event(lines.wait_for(lambda line: _event(line).get("event") == "api_unavailable"))
    second = _event(lines.wait_for(lambda line: _event(line).get("event") == "api_unavailable"))

    assert str(first["reason"]).startswith("cannot connect to the API server: ")
    assert (first["level"], first["attempt"], first["retry_in"]) == ("warning", 1, 1.0)
    assert (second["attempt"], second["retry_in"]) == (2, 2.0)
    assert _readyz(serving["scheme"], serving["port"]) == (503, {"synced": False, "leader": False})

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    output = lines.rest()
    assert not any("Traceback" in line for line in output)
    assert _event(output[-1]).get("event") == "stopped_before_synced"


class _Version(http.server.BaseHTTPRequestHandler):
    """Answers like an API server would, were its certificate trusted."""

    def do_GET(self) -> None:
        body = json.dumps({"major": "1", "minor": "34", "gitVersion": "v1.34.10"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


def _certificate(pem: bytes) -> bytes:
    end = b"-----END CERTIFICATE-----\n"
    return pem[: pem.index(end) + len(end)]


@pytest.fixture
def tls_server_of_another_ca(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An HTTPS server with a certificate of its own, and a CA file that did not sign it."""
    served = tmp_path / "served.pem"
    served.write_bytes(self_signed_pem("127.0.0.1"))
    other_ca = tmp_path / "other-ca.crt"
    other_ca.write_bytes(_certificate(self_signed_pem("127.0.0.1")))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Version)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1]), other_ca
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_certificate_the_kubeconfig_ca_did_not_sign_is_named_and_retried(
    tmp_path: Path, tls_server_of_another_ca: tuple[int, Path]
) -> None:
    port, other_ca = tls_server_of_another_ca
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        f"https://127.0.0.1:{port}",
        **{"certificate-authority": str(other_ca)},
    )
    with running(kubeconfig, tmp_path) as (process, lines):
        serving = _event(lines.wait_for(lambda line: _event(line).get("event") == "serving"))
        first = _event(lines.wait_for(lambda line: _event(line).get("event") == "api_unavailable"))
        second = _event(lines.wait_for(lambda line: _event(line).get("event") == "api_unavailable"))
        ready = _readyz(serving["scheme"], serving["port"])
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        output = lines.rest()

    assert first["reason"] == (
        "cannot connect to the API server: the API server's certificate failed verification "
        "(certificate verify failed: self-signed certificate); check the CA the client trusts: "
        "the kubeconfig's certificate-authority, or the ServiceAccount's ca.crt in a pod"
    )
    assert (first["level"], first["attempt"], first["retry_in"]) == ("warning", 1, 1.0)
    assert (second["attempt"], second["retry_in"]) == (2, 2.0)
    assert ready == (503, {"synced": False, "leader": False})
    assert code == 0
    assert not any("Traceback" in line for line in output)
    assert all(_event(line) for line in output), "every line is one JSON log line"
    assert _event(output[-1]).get("event") == "stopped_before_synced"
