"""Running ``kopf-scheduler`` as a user does: a separate process, judged by its exit code and by
what it prints, which for bad input must be one line and never a traceback."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from kopf_scheduler.k8s.client import ListResult
from kopf_scheduler.ports import ApiError

CLEAN_ENVIRONMENT_KEYS = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any kubeconfig or in-cluster hint, ``HOME`` at ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENVIRONMENT_KEYS}
    env["HOME"] = str(home)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def kopf_scheduler(
    *args: str, env: Mapping[str, str], timeout: float = 120, cwd: Path | None = None
) -> Outcome:
    done = subprocess.run(
        [sys.executable, "-m", "kopf_scheduler", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_one_line_error(outcome: Outcome, code: int, message: str) -> None:
    """Exit ``code``, nothing on stdout, exactly ``error: <message>`` on stderr."""
    assert "Traceback" not in outcome.stderr + outcome.stdout
    assert outcome.error_lines == [f"error: {message}"], outcome.stderr
    assert outcome.stdout == ""
    assert outcome.code == code


def write_kubeconfig(path: Path, server: str, **cluster: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


class Lines:
    """The lines a running process writes to one stream, readable with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def wait_for(self, matches: Callable[[str], bool], timeout: float = 60) -> str:
        """The first line from now on that ``matches``; AssertionError if none comes in time."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no matching line; seen: {self.seen[-5:]}") from None
            if line is None:
                raise AssertionError(f"the stream ended; seen: {self.seen[-5:]}")
            self.seen.append(line)
            if matches(line):
                return line

    def rest(self) -> list[str]:
        """Every line until the stream ends (call after the process exited)."""
        while (line := self._lines.get(timeout=30)) is not None:
            self.seen.append(line)
        return self.seen


class AuditedApi:
    """Answers LIST requests from fixed collections and records every request; any other use
    (a write) is recorded too and fails."""

    def __init__(
        self,
        collections: Mapping[str, list[dict[str, Any]]],
        forbidden: frozenset[str] = frozenset(),
    ) -> None:
        self.collections = collections
        self.forbidden = forbidden
        self.requests: list[str] = []

    async def list(self, path: str, query: Mapping[str, str] | None = None) -> ListResult:
        self.requests.append(f"LIST {path}")
        if path in self.forbidden:
            raise ApiError(403, "Forbidden", f"cannot list resource at {path}")
        return ListResult([dict(item) for item in self.collections.get(path, [])], "1")

    async def close(self) -> None:
        self.requests.append("close")

    def __getattr__(self, name: str) -> Any:
        self.requests.append(name)
        raise AssertionError(f"capacity used the API for {name!r}")


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers every request 403 Forbidden with a Status, as an API server denying RBAC does."""

    def do_GET(self) -> None:
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": f'forbidden: cannot get path "{self.path}"',
                "reason": "Forbidden",
                "code": 403,
            }
        ).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read the command's output, not the server's."""


@contextlib.contextmanager
def refusing_api_server() -> Iterator[str]:
    """The URL of an HTTP server, in a thread, that answers every request 403."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
