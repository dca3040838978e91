"""``python -m bench upstream``: list or run scheduler_perf's own workloads.

    python -m bench upstream --list                       # every workload, runnable or why not
    python -m bench upstream --label integration-test     # the small ones, both schedulers
    python -m bench upstream --workload SchedulingBasic/5Nodes --out /tmp/upstream.json
    python -m bench upstream --label performance --smallest-first --out F --resume
    python -m bench upstream --report F   # F as the table in docs/benchmarks.md and a chart

``--config`` takes paths relative to scheduler_perf's directory in the Go module cache (default:
the six configs). ``--list`` lists every workload unless ``--label``/``--workload`` narrow it;
a run without ``--workload`` takes the workloads labelled ``integration-test``. A workload the
runner cannot run in full is reported with its reasons and skipped.

The full ``performance`` set takes hours. ``--resume`` keeps the workloads ``--out`` already
holds as run in full by every scheduler and runs the rest, so one run may be made in parts; the
file lists every part (date, command, machine, versions) and each workload names the part it
came from; ``--smallest-first`` takes the quick workloads first, so every test case is
measured early.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from doccharts.bars import ChartError, render

from bench import report as bench_report
from bench.config import SCHEDULERS
from bench.upstream import profiling, suite, support, table

DEFAULT_LABEL = suite.LABEL_INTEGRATION
DEFAULT_QPS = 5000.0
DEFAULT_BURST = 5000
"""The client QPS and burst both schedulers get, as the end-to-end benchmarks' first setting."""
REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "benchmarks.md"
CHART = REPO / "docs" / "images" / "scheduler-perf-ratios.svg"


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
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the workloads --out holds as complete and run only the others",
    )
    parser.add_argument(
        "--smallest-first",
        action="store_true",
        help="run the workloads in the order of the nodes and pods their parameters count",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="sample kopf-scheduler with py-spy over each collection window; the stacks go "
        "to DIR and a summary into the results (use apart from runs for the table)",
    )
    parser.add_argument(
        "--run-limit",
        type=float,
        default=suite.PER_TEST_TIMEOUT,
        metavar="SECONDS",
        help="fail a scheduler's run of a workload whose ops take longer, keeping what it "
        f"measured (default {suite.PER_TEST_TIMEOUT:.0f}, upstream's per-test timeout; 0: none)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="RESULTS",
        help="write RESULTS (JSON of a run) as the table in docs/benchmarks.md and the "
        "ratio chart in docs/images/, and run nothing",
    )


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


def _load(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise table.ReportError(f"{path}: {error}") from error
    if not isinstance(loaded, dict) or not isinstance(loaded.get("workloads"), list):
        raise table.ReportError(f"{path}: not the results of `python -m bench upstream`")
    return loaded


def report(results_path: Path, doc: Path = DOC, chart: Path = CHART) -> None:
    """The table of ``results_path`` into ``doc`` and its ratio chart into ``chart``."""
    results = _load(results_path)
    document = doc.read_text()
    doc.write_text(table.replace_section(document, table.markdown(results)))
    chart.parent.mkdir(parents=True, exist_ok=True)
    chart.write_text(render(table.ratio_chart(results)))


def main(args: argparse.Namespace) -> int:
    if args.report is not None:
        try:
            report(args.report)
        except (table.ReportError, ChartError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"wrote the table into {DOC} and the chart to {CHART}")
        return 0
    if args.profile is not None:
        try:
            profiling.py_spy()
        except profiling.ProfilerError as error:
            print(f"error: --profile: {error}", file=sys.stderr)
            return 2
    if args.resume and args.out is None:
        print("error: --resume goes on with the file --out names; give --out", file=sys.stderr)
        return 2
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
    if args.smallest_first:
        workloads.sort(key=lambda workload: workload.size)
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


PART_KEYS = ("date", "command", "machine", "versions")
"""What each part of a run records about itself."""


def resumed(
    earlier: dict[str, Any], schedulers: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], set[str]]:
    """The parts of an earlier run and its workloads, each marked with its part (a file from
    before parts were kept is one part), and the names of those every one of ``schedulers``
    ran in full, which a resumed run does not run again."""
    parts = list(earlier.get("parts") or [{key: earlier.get(key) for key in PART_KEYS}])
    kept = list(earlier["workloads"])
    for record in kept:
        record.setdefault("part", 0)
    done = {r["workload"] for r in kept if table.complete(r, schedulers)}
    return parts, kept, done


def merged(kept: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``kept`` with each workload run again replaced in its place by its new record, then the
    workloads new to the file: a failed workload stays listed until it is run again."""
    new = {r["workload"]: r for r in records}
    replaced = [new.pop(r["workload"], r) for r in kept]
    return [*replaced, *new.values()]


async def _run(
    args: argparse.Namespace, workloads: list[suite.Workload], schedulers: list[str]
) -> int:
    # The runner brings the whole end-to-end harness: imported only for a run, so that the
    # other commands of ``python -m bench`` (and the memory they measure) do without it.
    from bench.cluster import SchedulerPerfCluster, binaries_available, start_bench_cluster
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
    part = {
        "date": bench_report.now_iso(),
        "command": bench_report.command_line(),
        "machine": bench_report.machine(),
        "versions": bench_report.versions(),
    }
    earlier_parts: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    if args.resume and args.out.exists():
        try:
            earlier_parts, kept, done = resumed(_load(args.out), schedulers)
        except table.ReportError as error:
            print(f"error: --resume: {error}", file=sys.stderr)
            return 2
        for name in sorted(done):
            say(f"kept from {args.out}: {name}")
        runnable = [w for w in runnable if w.id not in done]
    part_index = len(earlier_parts)
    results: dict[str, Any] = {
        **part,
        "parts": [*earlier_parts, part],
        "suite": str(suite.suite_dir()),
        "qps": args.qps,
        "burst": args.burst,
        "schedulers": schedulers,
        "feature_gates": "recorded per workload, not applied (v1.34.10 defaults)",
        "workloads": kept,
        "skipped": skipped,
    }

    def checkpoint(records: list[dict[str, Any]]) -> None:
        for record in records:
            record.setdefault("part", part_index)
        results["workloads"] = merged(kept, records)
        if args.out is not None:
            runner.write(args.out, results)

    cluster = start_bench_cluster(kind=SchedulerPerfCluster)
    work = Path(tempfile.mkdtemp(prefix="bench-upstream-"))
    say(f"upstream workloads on {cluster.server}, work files in {work}")
    try:
        records = await runner.run_workloads(
            cluster,
            runnable,
            schedulers,
            args.qps,
            args.burst,
            work,
            checkpoint,
            args.profile,
            args.run_limit or None,
        )
    finally:
        if not args.keep_cluster:
            cluster.down()
    checkpoint(records)
    failed = [r["workload"] for r in records if not all(run["ok"] for run in r["runs"].values())]
    if args.out is not None:
        say(f"results in {args.out}")
    return 1 if failed else 0
