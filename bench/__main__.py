"""``python -m bench``: run a benchmark profile and record it.

    python -m bench quick            # in-process S1, S4, S2@0.2; end-to-end S1 (if built)
    python -m bench full             # all scenarios, both ways
    python -m bench run --inprocess S1,S2@0.2 --e2e S1 --qps 5000/5000,50/100
    python -m bench inprocess-one S2@0.2 --out result.json   # one scenario, this process
    python -m bench memory S2        # what the scheduler's memory holds after S2 in process
    python -m bench revisions c6128a8,HEAD --inprocess S2 --e2e S1   # commits in turn
    python -m bench capacity         # `kopf-scheduler capacity` on 5000 nodes, 50,000 pods
    python -m bench capacity --revisions 277bd04,HEAD   # the same, commits in turn
    python -m bench contention S2 --processes 1 --rounds 3   # quiet and beside a busy process
    python -m bench contention S2 --rate 100                 # ... the pods created at 100/s
    python -m bench chart            # docs/images/bench-ratios.svg from bench/results/
    python -m bench upstream --list  # scheduler_perf's own workloads (bench/upstream/cli.py)

Each in-process scenario runs in its own subprocess, so its peak RSS is its own. The
end-to-end runs share one local cluster in ``LOCALCLUSTER_DIR`` (default ``/tmp/lc-bench``),
which is stopped at the end unless ``--keep-cluster``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from doccharts.bars import ChartError

from bench import chart, report
from bench.config import SCHEDULERS
from bench.scenarios import scenario

REPO = Path(__file__).resolve().parent.parent
QPS_SETTINGS = ((5000.0, 5000), (50.0, 100))
E2E_RATIO = 1.0
"""End to end at qps 5000/5000, the scenarios run full size by default."""
E2E_RATIO_LOW_QPS = 0.2
"""At qps 50/100 the 5000-node scenarios run at this scale by default: there both schedulers
bind about 50 pods/s, so the full shapes (10,000 measured pods, 20,000 existing ones to create
and delete per scheduler) would take about an hour more per profile, and the rate limit, not
the scheduler, sets the pace. ``--e2e-ratio-low-qps 1`` runs them full size."""
LARGE_NODES = 1000

E2eRun = tuple[str, float, int]
"""One end-to-end pair: scenario spec, client QPS, burst."""

PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "inprocess": ["S1", "S4", "S2@0.2"],
        "e2e": ["S1"],
    },
    "full": {
        "inprocess": ["S1", "S2", "S3a", "S3b", "S4", "S5", "S6", "S7"],
        "e2e": ["S1", "S4", "S2", "S3a", "S3b", "S5", "S6", "S7", "DRA1"],
    },
}


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _env(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(source / "operator"), str(source)])
    return env


def run_inprocess_isolated(
    spec: str, timeout: float = 7200.0, source: Path = REPO
) -> dict[str, Any]:
    """One in-process scenario in a fresh interpreter (own RSS, no leftovers), with the
    benchmark and kopf-scheduler of ``source`` (a checkout or an exported revision)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "bench", "inprocess-one", spec, "--out", str(out)],
            cwd=source,
            env=_env(source),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0 or not out.exists():
            return {"label": spec, "error": (proc.stderr or proc.stdout).strip()[-500:]}
        result: dict[str, Any] = json.loads(out.read_text())
        result["process_seconds"] = round(time.monotonic() - started, 1)
        return result


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"error: {result['error'][-200:]}"
    t = result["throughput"]
    return (
        f"{t.get('average')} pods/s avg, {t.get('p50')} p50, attempt p99 "
        f"{result['attempt_ms'].get('p99')} ms, {result['bound_measured']}/"
        f"{result['measured_pods']} bound"
    )


def e2e_plan(specs: list[str], qps_settings: list[tuple[float, int]]) -> list[E2eRun]:
    """Every spec at every client setting."""
    return [(spec, qps, burst) for spec in specs for qps, burst in qps_settings]


def run_e2e(
    plan: list[E2eRun],
    keep_cluster: bool,
    pairs: list[dict[str, Any]],
    checkpoint: Callable[[], None],
    schedulers: tuple[str, ...] = SCHEDULERS,
) -> list[str]:
    """Run the pairs (fewest nodes first), appending each to ``pairs``, checkpointing after it;
    ``schedulers``: which of the two run, in that order."""
    from bench.cluster import binaries_available, start_bench_cluster
    from bench.e2e import run_pair

    if not binaries_available():
        return ["end to end: the local control-plane binaries are not built (make cluster-up)"]
    runs = sorted(
        ((scenario(spec), qps, burst) for spec, qps, burst in plan),
        key=lambda run: (run[0].nodes, -run[1]),
    )
    cluster = start_bench_cluster()
    work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    say(f"end to end on {cluster.server}, work files in {work}")
    try:
        for sc, qps, burst in runs:
            try:
                pair = asyncio.run(run_pair(cluster, sc, qps, burst, work, order=schedulers))
            except Exception as error:
                traceback.print_exc()
                pair = {
                    "mode": "e2e",
                    "scenario": sc.as_dict(),
                    "qps": qps,
                    "burst": burst,
                    "error": f"{type(error).__name__}: {error}"[:500],
                }
            pairs.append(pair)
            checkpoint()
            for which, run in (pair.get("runs") or {}).items():
                t = run.get("throughput") or {}
                say(
                    f"{sc.label} {qps:g}/{burst} {which}: {t.get('average')} pods/s avg, "
                    f"create→bound p99 {(run.get('create_to_bound_ms') or {}).get('p99')} ms"
                )
    finally:
        if not keep_cluster:
            cluster.down()
    return []


def _notes(results: dict[str, Any]) -> list[str]:
    notes = []
    scaled = [r["scenario"] for r in results.get("inprocess", []) if "scenario" in r]
    scaled += [p["scenario"] for p in results.get("e2e", [])]
    seen = set()
    for s in scaled:
        if s["ratio"] != 1.0 and s["label"] not in seen:
            seen.add(s["label"])
            notes.append(f"Scaled: {s['label']} = {s['id']} × {s['ratio']:g}: {s['shape']}.")
    for pair in results.get("e2e", []):
        for which, run in (pair.get("runs") or {}).items():
            average = (run.get("throughput") or {}).get("average")
            created = (run.get("creation") or {}).get("per_second")
            if average and created and average >= 0.8 * created:
                notes.append(
                    f"{pair['scenario']['label']} {which} at qps {pair['qps']:g}: throughput "
                    f"{average} pods/s is within 20% of the creator's {created} pods/s, so it is "
                    "bounded by pod creation, not by the scheduler."
                )
    top = results["machine"].get("top_processes") or []
    if top:
        notes.append(
            "Busiest processes over 2 s at the start (% of one CPU): " + "; ".join(top[:6]) + "."
        )
    return notes


def _stop_idle_cluster() -> None:
    """An idle benchmark cluster (5000 kwok nodes cost a core) would skew in-process runs."""
    from bench.cluster import BenchCluster, state_dir

    cluster = BenchCluster(state_dir())
    if cluster.processes():
        say(f"stopping the benchmark cluster in {cluster.state_dir} before in-process runs")
        cluster.down()


def run_profile(
    profile: str,
    inprocess: list[str],
    e2e: list[E2eRun],
    write: bool,
    keep_cluster: bool,
    out: Path | None = None,
    schedulers: tuple[str, ...] = SCHEDULERS,
) -> dict[str, Any]:
    started = time.monotonic()
    partial = report.RESULTS_DIR / f"{chart.PARTIAL}{profile}.json"

    def checkpoint() -> None:
        # Everything measured so far, in case a long profile is interrupted.
        if write:
            report.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(results))

    results: dict[str, Any] = {
        "date": report.now_iso(),
        "profile": profile,
        "command": report.command_line(),
        "machine": report.machine(),
        "versions": report.versions(),
        "inprocess": [],
        "e2e": [],
        "skipped": [],
    }
    if inprocess:
        _stop_idle_cluster()
    for spec in inprocess:
        say(f"in-process {spec}")
        result = run_inprocess_isolated(spec)
        say(f"in-process {spec}: {_brief(result)}")
        results["inprocess"].append(result)
        checkpoint()
    if e2e:
        results["skipped"] += run_e2e(e2e, keep_cluster, results["e2e"], checkpoint, schedulers)
    results["machine_end"] = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    results["notes"] = _notes(results)
    if write:
        path = report.write_json(results, profile)
        partial.unlink(missing_ok=True)
        report.update_doc(report.render(results))
        say(f"results in {path.relative_to(REPO)} and docs/results/benchmark-runs.md")
        _draw_chart(report.RESULTS_DIR, chart.OUT)
    if out is not None:
        out.write_text(json.dumps(results, indent=1))
        say(f"results in {out}")
    return results


def _draw_chart(results_dir: Path, out: Path) -> bool:
    """The ratio chart of docs/benchmarks.md drawn again; False (and why) when it cannot be."""
    try:
        path = chart.write(results_dir, out)
    except ChartError as error:
        print(f"bench: chart: {error}", file=sys.stderr)
        return False
    say(f"chart of the ratios in {path}")
    return True


def _scaled(specs: list[str], ratio: float) -> list[str]:
    """Scale the specs of scenarios larger than LARGE_NODES by ``ratio`` (none when 1)."""
    result = []
    for spec in specs:
        large = "@" not in spec and scenario(spec).nodes > LARGE_NODES
        result.append(f"{spec}@{ratio:g}" if large and ratio != 1.0 else spec)
    return result


def _qps(text: str) -> list[tuple[float, int]]:
    settings = []
    for item in text.split(","):
        qps, _, burst = item.partition("/")
        settings.append((float(qps), int(burst)))
    return settings


def _compare_revisions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from bench import revisions

    names = [name for name in args.revisions.split(",") if name]
    if len(names) < 2:
        parser.error("revisions: give at least two, comma-separated")
    try:
        ((qps, burst),) = _qps(args.qps)
    except ValueError:
        parser.error(f"--qps {args.qps!r}: expected one QPS/BURST, e.g. 50/100")
    results = revisions.compare(
        names,
        [spec for spec in args.inprocess.split(",") if spec],
        [spec for spec in args.e2e.split(",") if spec],
        qps,
        burst,
        args.rounds,
        run_inprocess_isolated,
    )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print(revisions.render(results))
    return 0


def _contention(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from bench import contention
    from bench.cluster import binaries_available

    if args.processes < 1 or args.rounds < 1:
        parser.error("--processes and --rounds must be at least 1")
    try:
        ((qps, burst),) = _qps(args.qps)
    except ValueError:
        parser.error(f"--qps {args.qps!r}: expected one QPS/BURST, e.g. 5000/5000")
    chosen = scenario(args.spec)  # fail early on a typo
    if args.rate is not None and args.rate <= 0:
        parser.error(f"--rate {args.rate:g}: expected a positive number of pods a second")
    if args.rate is not None and chosen.drain:
        parser.error(f"--rate: {chosen.label}'s pods are all created before the scheduler starts")
    if not binaries_available():
        print(
            "error: the local control-plane binaries are not built (make cluster-up)",
            file=sys.stderr,
        )
        return 1
    results = contention.run_rounds(
        args.spec,
        args.processes,
        args.rounds,
        qps,
        burst,
        args.keep_cluster,
        args.rate,
        warm_up=args.warm_up,
    )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print(contention.render(results))
    return 0


def _exit_on_sigterm() -> None:
    # SIGTERM becomes SystemExit, so that the schedulers, the watcher and (unless kept) the
    # cluster this run started are stopped by the ``finally`` blocks.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.unraisablehook = _redeliver_lost_exit(sys.unraisablehook)


def _redeliver_lost_exit(
    previous: Callable[[Any], object],
) -> Callable[[Any], None]:
    """A hook for exceptions Python drops: the handler's SystemExit is dropped when the signal
    arrives while a finaliser or a weakref callback runs, so the signal is sent again, from a
    thread a moment later (sent from here, it would land in the hook and be dropped again);
    anything else goes to ``previous``."""

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, SystemExit):
            resend = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM))
            resend.daemon = True
            resend.start()
            return
        previous(unraisable)

    return hook


def main(argv: list[str] | None = None) -> int:
    _exit_on_sigterm()
    parser = argparse.ArgumentParser(prog="python -m bench")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in PROFILES:
        p = sub.add_parser(name, help=f"the {name} profile")
        p.add_argument("--no-e2e", action="store_true", help="skip the end-to-end runs")
        p.add_argument("--no-inprocess", action="store_true", help="skip the in-process runs")
        p.add_argument("--no-write", action="store_true", help="do not write results or docs")
        p.add_argument("--keep-cluster", action="store_true")
        p.add_argument(
            "--e2e-ratio",
            type=float,
            default=E2E_RATIO,
            help=f"scale of the end-to-end scenarios above {LARGE_NODES} nodes at qps 5000",
        )
        p.add_argument(
            "--e2e-ratio-low-qps",
            type=float,
            default=E2E_RATIO_LOW_QPS,
            help=f"the same at qps 50/100 (default {E2E_RATIO_LOW_QPS:g})",
        )
    run = sub.add_parser("run", help="chosen scenarios")
    run.add_argument("--inprocess", default="", help="comma-separated, e.g. S1,S2@0.2")
    run.add_argument("--e2e", default="", help="comma-separated, e.g. S1,S4")
    run.add_argument("--qps", default="5000/5000,50/100", help="qps/burst settings")
    run.add_argument("--profile", default="custom", help="name used for the results file")
    run.add_argument("--no-write", action="store_true")
    run.add_argument("--keep-cluster", action="store_true")
    run.add_argument("--out", type=Path, help="also write the raw results to this file")
    run.add_argument(
        "--schedulers",
        default=",".join(SCHEDULERS),
        help="end to end: which schedulers run, in order (default kopf,upstream)",
    )
    one = sub.add_parser("inprocess-one", help="one in-process scenario in this process")
    one.add_argument("spec")
    one.add_argument("--out", required=True)
    one.add_argument("--seed", type=int, default=0)
    render = sub.add_parser("render", help="print the docs section of a results file")
    render.add_argument("path")
    memory = sub.add_parser("memory", help="what the scheduler's memory holds after a scenario")
    memory.add_argument("spec", help="an in-process scenario, e.g. S2 or S2@3")
    image = sub.add_parser("image", help="the container image's size and idle/busy memory")
    image.add_argument("--nodes", type=int, default=100, help="kwok nodes (default 100)")
    image.add_argument("--pods", type=int, default=500, help="pods to bind (default 500)")
    draw = sub.add_parser(
        "chart", help="draw the ratios ours/upstream of the newest end-to-end pairs as SVG"
    )
    draw.add_argument("--results", type=Path, default=report.RESULTS_DIR, help="results files")
    draw.add_argument("--out", type=Path, default=chart.OUT, help="the SVG file to write")
    revisions = sub.add_parser(
        "revisions", help="kopf-scheduler at several commits, in turn, on one machine"
    )
    revisions.add_argument("revisions", help="comma-separated commits, e.g. c6128a8,HEAD")
    revisions.add_argument("--inprocess", default="", help="comma-separated, e.g. S2")
    revisions.add_argument("--e2e", default="", help="comma-separated, e.g. S1")
    revisions.add_argument("--qps", default="50/100", help="qps/burst of the end-to-end runs")
    revisions.add_argument("--rounds", type=int, default=2, help="rounds of all revisions")
    revisions.add_argument("--out", type=Path, help="also write the raw results to this file")
    capacity_timing = sub.add_parser(
        "capacity", help="time `kopf-scheduler capacity` on a large generated snapshot"
    )
    capacity_timing.add_argument("--nodes", type=int, default=5000, help="default 5000")
    capacity_timing.add_argument("--pods", type=int, default=50_000, help="default 50000")
    capacity_timing.add_argument("--rounds", type=int, default=3, help="runs (default 3)")
    capacity_timing.add_argument(
        "--revisions",
        default="",
        help="comma-separated commits to time in turn each round (as `bench revisions` exports "
        "them), e.g. 277bd04,HEAD; default: this checkout",
    )
    contention = sub.add_parser(
        "contention",
        help="one scenario end to end, quiet and beside busy processes, rounds alternated",
    )
    contention.add_argument("spec", help="an end-to-end scenario, e.g. S2 or S2@0.2")
    contention.add_argument("--processes", type=int, default=1, help="busy processes (1)")
    contention.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    contention.add_argument("--qps", default="5000/5000", help="qps/burst (default 5000/5000)")
    contention.add_argument(
        "--rate",
        type=float,
        help="create the measured pods at this many a second in every run (default: as fast "
        "as the API server takes them)",
    )
    contention.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the uncounted first run that takes a new cluster's one-off costs",
    )
    contention.add_argument("--keep-cluster", action="store_true")
    contention.add_argument("--out", type=Path, help="also write the raw results to this file")
    upstream = sub.add_parser(
        "upstream", help="scheduler_perf's own performance-config.yaml workloads, both schedulers"
    )
    from bench.upstream import cli as upstream_cli

    upstream_cli.add_arguments(upstream)
    args = parser.parse_args(argv)

    if args.command == "upstream":
        return upstream_cli.main(args)

    if args.command == "chart":
        return 0 if _draw_chart(args.results, args.out) else 2

    if args.command == "revisions":
        return _compare_revisions(parser, args)

    if args.command == "contention":
        return _contention(parser, args)

    if args.command == "capacity":
        from bench import capacity

        if min(args.nodes, args.pods + 1, args.rounds) < 1:
            parser.error("--nodes and --rounds must be at least 1, --pods at least 0")
        sources: list[capacity.Source] = [capacity.THIS_CHECKOUT]
        if args.revisions:
            from bench.revisions import export

            exported = [export(revision) for revision in args.revisions.split(",")]
            if len({commit for commit, _ in exported}) != len(exported):
                parser.error("--revisions: name each commit once")
            sources = [(commit[:10], directory / "operator") for commit, directory in exported]
        try:
            timings = capacity.run(args.nodes, args.pods, args.rounds, sources)
        except (ValueError, RuntimeError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(capacity.render(args.nodes, args.pods, timings))
        return 0

    if args.command == "image":
        from bench.image import measure, render_figures

        print(render_figures(measure(args.nodes, args.pods)))
        return 0

    if args.command == "memory":
        from bench import memory as memory_breakdown

        print(memory_breakdown.render(memory_breakdown.run(scenario(args.spec))))
        return 0

    if args.command == "inprocess-one":
        from bench.inprocess import run_inprocess

        result = run_inprocess(scenario(args.spec), seed=args.seed)
        Path(args.out).write_text(json.dumps(result))
        return 0
    if args.command == "render":
        print(report.render(json.loads(Path(args.path).read_text())))
        return 0
    schedulers = SCHEDULERS
    if args.command == "run":
        inprocess = [s for s in args.inprocess.split(",") if s]
        e2e = e2e_plan([s for s in args.e2e.split(",") if s], _qps(args.qps))
        profile = args.profile
        schedulers = tuple(s for s in args.schedulers.split(",") if s)
        unknown = sorted(set(schedulers) - set(SCHEDULERS)) or ([] if schedulers else ["none"])
        if unknown:
            parser.error(f"--schedulers: {', '.join(unknown)}; known: {', '.join(SCHEDULERS)}")
    else:
        profile = args.command
        inprocess = [] if args.no_inprocess else list(PROFILES[profile]["inprocess"])
        specs = [] if args.no_e2e else list(PROFILES[profile]["e2e"])
        (high_qps, high_burst), (low_qps, low_burst) = QPS_SETTINGS
        e2e = e2e_plan(_scaled(specs, args.e2e_ratio), [(high_qps, high_burst)])
        e2e += e2e_plan(_scaled(specs, args.e2e_ratio_low_qps), [(low_qps, low_burst)])
    for spec in (*inprocess, *(run[0] for run in e2e)):
        scenario(spec)  # fail early on a typo
    for spec in inprocess:
        if scenario(spec).devices:
            parser.error(
                f"{spec} runs only end to end (--e2e): its claims are made by "
                "kube-controller-manager's resource-claim controller"
            )
    out = getattr(args, "out", None)
    run_profile(profile, inprocess, e2e, not args.no_write, args.keep_cluster, out, schedulers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
