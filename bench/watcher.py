"""The external observer of an end-to-end run: one process watching the pods of one namespace.

It is the single source of the end-to-end figures for both schedulers, so they are measured by
the same clock and the same watch. For every pod it keeps when it was first seen, when it was
first seen nominated (``status.nominatedNodeName``), when it was first seen bound
(``spec.nodeName`` set) and when it was deleted, all as wall-clock seconds
(``time.time()``). It prints ``READY`` once the watch is open, and ends when ``--expect``
measured pods are bound, on SIGTERM, or after ``--timeout``; then it writes its JSON.

    BENCH_WATCH_TOKEN=... python -m bench.watcher --server URL --ca CA --namespace NS \\
        --expect 1000 --out result.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench.kube import Client, Endpoint, list_then_watch
from bench.shapes import KIND_LABEL, ROLE_LABEL, ROLE_MEASURED


class PodLog:
    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.pods: dict[str, dict[str, Any]] = {}
        self.bound_measured = 0
        self.events = 0
        self.relists = 0
        self.ready_at: float | None = None
        self.done_at: float | None = None
        self.done = asyncio.Event()

    def observe(self, event_type: str, raw: dict[str, Any], now: float) -> None:
        metadata = raw.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            return
        entry = self.pods.get(name)
        if entry is None:
            labels = metadata.get("labels") or {}
            entry = {
                "role": labels.get(ROLE_LABEL, ""),
                "kind": labels.get(KIND_LABEL, ""),
                "seen": now,
                "uid": metadata.get("uid", ""),
            }
            self.pods[name] = entry
        if event_type == "DELETED":
            entry.setdefault("deleted", now)
            return
        nominated = (raw.get("status") or {}).get("nominatedNodeName")
        if nominated and "nominated" not in entry:
            entry["nominated"] = now
        node_name = (raw.get("spec") or {}).get("nodeName")
        if node_name and "bound" not in entry:
            entry["bound"] = now
            entry["node"] = node_name
            if entry["role"] == ROLE_MEASURED:
                self.bound_measured += 1
                if self.bound_measured >= self.expect and self.done_at is None:
                    self.done_at = now
                    self.done.set()

    def as_json(self) -> dict[str, Any]:
        return {
            "ready_at": self.ready_at,
            "done_at": self.done_at,
            "expect": self.expect,
            "bound_measured": self.bound_measured,
            "events": self.events,
            "relists": self.relists,
            "cpu_seconds": round(sum(os.times()[:2]), 3),
            "pods": self.pods,
        }


async def follow(client: Client, namespace: str, log: PodLog) -> None:
    lists = 0

    def listed(items: list[dict[str, Any]]) -> None:
        nonlocal lists
        lists += 1
        log.relists = lists - 1
        now = time.time()
        for raw in items:
            log.observe("ADDED" if lists == 1 else "MODIFIED", raw, now)

    def observed(kind: str, raw: dict[str, Any]) -> None:
        log.events += 1
        log.observe(kind, raw, time.time())

    def opened() -> None:
        if log.ready_at is None:
            log.ready_at = time.time()
            print("READY", flush=True)

    await list_then_watch(
        client, f"/api/v1/namespaces/{namespace}/pods", listed, observed, on_open=opened
    )


async def main_async(args: argparse.Namespace) -> int:
    endpoint = Endpoint(args.server, os.environ["BENCH_WATCH_TOKEN"], args.ca)
    log = PodLog(args.expect)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with Client(endpoint, "bench-watcher", connections=4) as client:
        watch = asyncio.ensure_future(follow(client, args.namespace, log))
        waiters = {
            watch,
            asyncio.ensure_future(log.done.wait()),
            asyncio.ensure_future(stop.wait()),
        }
        _, pending = await asyncio.wait(
            waiters, timeout=args.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
        with contextlib.suppress(BaseException):
            await watch
    Path(args.out).write_text(json.dumps(log.as_json()))
    print("DONE" if log.done_at is not None else "STOPPED", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watcher")
    parser.add_argument("--server", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
