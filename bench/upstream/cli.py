"""``python -m bench upstream``: list or run scheduler_perf's own workloads.

    python -m bench upstream --list                       # every workload, runnable or why not
    python -m bench upstream --label integration-test     # the small ones, both schedulers
    python -m bench upstream --workload SchedulingBasic/5Nodes --out /tmp/upstream.json

``--config`` takes paths relative to scheduler_perf's directory in the Go module cache (default:
the six configs). ``--list`` lists every workload unless ``--label``/``--workload`` narrow it;
a run without ``--workload`` takes the workloads labelled ``integration-test``. A workload the
runner cannot run in full is reported with its reasons and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench import report
from bench.config import SCHEDULERS
from bench.upstream import suite, support

DEFAULT_LABEL = suite.LABEL_INTEGRATION
DEFAULT_QPS = 5000.0
DEFAULT_BURST = 5000
"""The client QPS and burst both schedulers get, as the end-to-end benchmarks' first setting."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="a performance-config.yaml, relative to scheduler_perf/ (repeatable; default: six)",
    )
    parser.add_argument(
        "--workload",
        action="append",
        default=[],
        help="TestCase/workload, a test case or a workload name (repeatable)",
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        help=f"only workloads with this label (repeatable; default {DEFAULT_LABEL} "
        "when no --workload is given)",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--out", type=Path, help="write the results (JSON) here")
    parser.add_argument(
        "--schedulers",
        default=",".join(SCHEDULERS),
        help="which schedulers run each workload, in order (default kopf,upstream)",
    )
    parser.add_argument("--qps", type=float, default=DEFAULT_QPS)
    parser.add_argument("--burst", type=int, default=DEFAULT_BURST)
    parser.add_argument("--keep-cluster", action="store_true")


def _configs(names: list[str]) -> list[Path]:
    root = suite.suite_dir()
    return [root / name for name in names] if names else suite.default_configs(root)


def render_list(workloads: list[suite.Workload]) -> str:
    """One line per workload (supported or the blocking ops), then the counts by label."""
    lines = []
    supported: Counter[str] = Counter()
    total: Counter[str] = Counter()
    blocking: Counter[str] = Counter()
    for workload in workloads:
        found = support.blockers(workload)
        labels = ",".join(workload.labels) or "-"
        state = "runs" if not found else "NOT RUN: " + "; ".join(str(b) for b in found)
        lines.append(f"{workload.id}  [{labels}]  {state}")
        for label in (*workload.labels, "all"):
            total[label] += 1
            supported[label] += not found
        if suite.LABEL_PERFORMANCE in workload.labels:
            blocking.update({b.opcode for b in found})
    lines.append("")
    for label in (suite.LABEL_PERFORMANCE, suite.LABEL_INTEGRATION, "all"):
        lines.append(f"{label}: {supported[label]} of {total[label]} workloads run in full")
    if blocking:
        named = ", ".join(f"{op} ({n})" for op, n in blocking.most_common())
        lines.append(f"{suite.LABEL_PERFORMANCE} workloads held back by: {named}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    try:
        test_cases = suite.load_all(_configs(args.config))
    except suite.SuiteError as error:
        print(
            f"error: {error} (scheduler_perf is read from {suite.suite_dir()}; "
            "`make cluster-up` fetches it)",
            file=sys.stderr,
        )
        return 2
    unknown_workloads = suite.unknown_names(test_cases, args.workload)
    if unknown_workloads:
        print(f"error: no workload is named {', '.join(unknown_workloads)}", file=sys.stderr)
        return 2
    labels = args.label or ([] if args.workload or args.list else [DEFAULT_LABEL])
    workloads = suite.select(test_cases, args.workload, labels)
    if args.list:
        print(render_list(workloads))
        return 0
    if not workloads:
        print("error: no workload matches", file=sys.stderr)
        return 2
    schedulers = [s for s in args.schedulers.split(",") if s]
    unknown = sorted(set(schedulers) - set(SCHEDULERS))
    if unknown or not schedulers:
        print(
            f"error: --schedulers: {', '.join(unknown) or 'none'}; known: {', '.join(SCHEDULERS)}",
            file=sys.stderr,
        )
        return 2
    return asyncio.run(_run(args, workloads, schedulers))


async def _run(
    args: argparse.Namespace, workloads: list[suite.Workload], schedulers: list[str]
) -> int:
    # The runner brings the whole end-to-end harness: imported only for a run, so that the
    # other commands of ``python -m bench`` (and the memory they measure) do without it.
    from bench.cluster import binaries_available, start_bench_cluster
    from bench.e2e import say
    from bench.upstream import runner

    blocked = {w.id: [str(b) for b in support.blockers(w)] for w in workloads}
    runnable = [w for w in workloads if not blocked[w.id]]
    skipped = [{"workload": name, "reasons": why} for name, why in blocked.items() if why]
    for entry in skipped:
        say(f"skipping {entry['workload']}: {'; '.join(entry['reasons'])}")
    if not binaries_available():
        print(
            "error: the local control-plane binaries are not built (make cluster-up)",
            file=sys.stderr,
        )
        return 2
    results: dict[str, Any] = {
        "date": report.now_iso(),
        "command": report.command_line(),
        "machine": report.machine(),
        "versions": report.versions(),
        "suite": str(suite.suite_dir()),
        "qps": args.qps,
        "burst": args.burst,
        "schedulers": schedulers,
        "feature_gates": "recorded per workload, not applied (v1.34.10 defaults)",
        "workloads": [],
        "skipped": skipped,
    }

    def checkpoint(records: list[dict[str, Any]]) -> None:
        results["workloads"] = records
        if args.out is not None:
            runner.write(args.out, results)

    cluster = start_bench_cluster()
    work = Path(tempfile.mkdtemp(prefix="bench-upstream-"))
    say(f"upstream workloads on {cluster.server}, work files in {work}")
    try:
        records = await runner.run_workloads(
            cluster, runnable, schedulers, args.qps, args.burst, work, checkpoint
        )
    finally:
        if not args.keep_cluster:
            cluster.down()
    checkpoint(records)
    failed = [r["workload"] for r in records if not all(run["ok"] for run in r["runs"].values())]
    if args.out is not None:
        say(f"results in {args.out}")
    return 1 if failed else 0
