"""``python -m bench revisions A,B``: kopf-scheduler at several commits, in turn, on one machine.

A benchmark ratio from one day against one from another mixes in the machine, its load and
kube-scheduler's own variation: the S1 CPU ratio of two quick profiles a few hours apart moved
from 1.14 to 1.28 with no change that touched that path. Whether a change made kopf-scheduler
slower is answered by running the revisions before and after it in turn, round after round, on
the same cluster and the same scenario: what is left between them is the noise between rounds,
which the table shows by listing every round.

Each revision is exported with ``git archive`` into a cache directory keyed by its commit
(``operator/`` for end-to-end runs; with ``bench/``, ``doccharts/``, ``e2e/`` and ``tests/`` for
in-process runs, which use that revision's own harness). It runs with this checkout's virtual
environment, the exported package first on ``PYTHONPATH``, so the dependencies are this
checkout's. End to end, only kopf-scheduler runs (kube-scheduler is the same binary for every
revision), and a revision must accept this harness's command line (any since /metrics is served
over HTTPS).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Protocol

from bench import report
from bench.e2e import say
from bench.scenarios import scenario
from bench.stats import summary

REPO = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "kopf-scheduler" / "bench-revisions"
EXPORTED = ("operator", "bench", "doccharts", "e2e", "tests")
"""What a revision's harness imports; a revision older than one of them is exported without it."""


class InProcessRunner(Protocol):
    def __call__(self, spec: str, *, source: Path) -> dict[str, Any]:
        """One in-process scenario run by the harness exported in ``source``."""


def export(revision: str, cache: Path = CACHE) -> tuple[str, Path]:
    """``(commit, directory)`` holding the revision's files, exported once per commit."""
    resolved = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if resolved.returncode != 0:
        raise SystemExit(f"bench revisions: {revision!r} is not a commit of this repository")
    commit = resolved.stdout.strip()
    target = cache / commit
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", commit],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    present = [path for path in EXPORTED if path in listing.stdout.split()]
    if not all((target / path).is_dir() for path in present):
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", commit, *present], cwd=REPO, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return commit, target


def _row(revision: str, round_: int, result: dict[str, Any]) -> dict[str, Any]:
    """One run's figures, in process or end to end (each has one of the two timings)."""
    return {
        "revision": revision,
        "round": round_,
        "cpu_seconds": result.get("cpu_seconds"),
        "peak_rss_mb": result.get("peak_rss_mb"),
        "pods_per_second": (result.get("throughput") or {}).get("average"),
        "attempt_ms": result.get("attempt_ms"),
        "create_to_bound_ms": result.get("create_to_bound_ms"),
        "error": result.get("error"),
    }


def run_e2e(
    trees: dict[str, Path], spec: str, qps: float, burst: int, rounds: int
) -> list[dict[str, Any]]:
    """kopf-scheduler of every revision on ``spec``, in turn, ``rounds`` times."""
    from bench.cluster import start_bench_cluster
    from bench.e2e import run_pair

    cluster = start_bench_cluster()
    work = Path(tempfile.mkdtemp(prefix="bench-revisions-"))
    say(f"revisions end to end on {cluster.server}, work files in {work}")
    rows = []
    try:
        for round_ in range(rounds):
            for revision, tree in trees.items():
                pair = asyncio.run(
                    run_pair(cluster, scenario(spec), qps, burst, work, ("kopf",), source=tree)
                )
                row = _row(revision, round_, pair["runs"]["kopf"])
                say(f"{spec} {revision} round {round_ + 1}: {json.dumps(row)}")
                rows.append(row)
    finally:
        cluster.down()
    return rows


def run_inprocess(
    trees: dict[str, Path], spec: str, rounds: int, run_isolated: InProcessRunner
) -> list[dict[str, Any]]:
    """Each revision's own in-process harness on ``spec``, in turn, ``rounds`` times."""
    rows = []
    for round_ in range(rounds):
        for revision, tree in trees.items():
            row = _row(revision, round_, run_isolated(spec, source=tree))
            say(f"{spec} {revision} round {round_ + 1}: {json.dumps(row)}")
            rows.append(row)
    return rows


def _cell(values: list[Any], digits: int = 1) -> str:
    present = [float(v) for v in values if v is not None]
    if not present:
        return "–"
    each = " / ".join(f"{v:.{digits}f}" for v in present)
    mean = summary(present)["mean"]
    return f"{each} (mean {mean:.{digits}f})"


def render(results: dict[str, Any]) -> str:
    """A table per scenario: every round's figure for each revision, and their mean."""
    lines = [f"Command: `{results['command']}`", ""]
    for block in results["blocks"]:
        timing = "create→bound p50 ms" if block["mode"] == "e2e" else "attempt p99 ms"
        lines += [
            f"**{block['label']}** ({block['mode']}, rounds in turn)",
            "",
            f"| revision | sched CPU s | peak RSS MiB | pods/s avg | {timing} |",
            "|---|---|---|---|---|",
        ]
        for revision in results["revisions"]:
            rows = [r for r in block["rows"] if r["revision"] == revision]
            timed = [
                (r.get("create_to_bound_ms") or {}).get("p50")
                if block["mode"] == "e2e"
                else (r.get("attempt_ms") or {}).get("p99")
                for r in rows
            ]
            lines.append(
                f"| {revision} | {_cell([r['cpu_seconds'] for r in rows], 2)} "
                f"| {_cell([r['peak_rss_mb'] for r in rows])} "
                f"| {_cell([r['pods_per_second'] for r in rows])} "
                f"| {_cell(timed, 2 if block['mode'] != 'e2e' else 0)} |"
            )
        lines.append("")
        lines += [
            f"- {r['revision']} round {r['round'] + 1} failed: {r['error']}"
            for r in block["rows"]
            if r.get("error")
        ]
    return "\n".join(lines).rstrip() + "\n"


def compare(
    names: list[str],
    inprocess: list[str],
    e2e: list[str],
    qps: float,
    burst: int,
    rounds: int,
    run_isolated: InProcessRunner,
    cache: Path = CACHE,
) -> dict[str, Any]:
    """Every scenario for every revision, rounds in turn; in-process runs first."""
    trees = {}
    for name in names:
        commit, tree = export(name, cache)
        trees[name if commit.startswith(name) else f"{name} ({commit[:7]})"] = tree
    blocks = []
    for spec in inprocess:
        rows = run_inprocess(trees, spec, rounds, run_isolated)
        blocks.append({"mode": "in-process", "label": spec, "rows": rows})
    for spec in e2e:
        rows = run_e2e(trees, spec, qps, burst, rounds)
        blocks.append({"mode": "e2e", "label": f"{spec} qps {qps:g}/{burst}", "rows": rows})
    return {
        "command": report.command_line(),
        "revisions": list(trees),
        "machine": report.machine(),
        "blocks": blocks,
    }
