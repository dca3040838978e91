"""Machine and version facts, the raw JSON results, and the tables in docs/benchmarks.md.

Every run writes ``bench/results/<date>-<profile>.json`` and puts a dated section at the top of
the runs in ``docs/benchmarks.md`` (newest first; earlier sections are kept as they are).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from e2e.localcluster import procfs

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
RUNS_DOC = REPO / "docs" / "results" / "benchmark-runs.md"
"""Every run's section, newest first; docs/benchmarks.md says what they add up to."""
RUNS_MARKER = "<!-- runs: newest first; `make bench` / `make bench-full` insert below -->"


# -- facts ----------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _operator_changes() -> str:
    """A short digest of the uncommitted changes under operator/ ('' when there are none)."""
    status = _git("status", "--porcelain", "--untracked-files=all", "--", "operator")
    if not status:
        return ""
    digest = hashlib.sha256(_git("diff", "HEAD", "--", "operator").encode())
    for line in sorted(status.splitlines()):
        if line.startswith("??"):
            path = REPO / line[3:].strip()
            with contextlib.suppress(OSError):
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _cpu_ticks() -> dict[int, int]:
    ticks = {}
    for pid in procfs.process_ids():
        fields = procfs.stat_fields(pid)
        if fields is not None:
            ticks[pid] = procfs.cpu_ticks(fields)
    return ticks


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def top_processes(count: int = 6, window: float = 2.0) -> list[str]:
    """The busiest processes over the next ``window`` seconds (% of one CPU), for contention."""
    before = _cpu_ticks()
    time.sleep(window)
    after = _cpu_ticks()
    hz = procfs.CLOCK_TICKS_PER_SECOND
    busy = sorted(
        ((after[pid] - before.get(pid, after[pid])) / hz / window * 100, pid) for pid in after
    )
    return [
        f"{share:.0f}% {_cmdline(pid)[:80]}" for share, pid in reversed(busy[-count:]) if share >= 1
    ]


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_gib": _mem_total_gib(),
        "kernel": platform.release(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "top_processes": top_processes(),
    }


def versions() -> dict[str, Any]:
    from e2e.localcluster import versions as v

    commit = _git("rev-parse", "--short=12", "HEAD")
    changes = _operator_changes()
    try:
        import numpy

        numpy_version = numpy.__version__
    except ImportError:
        numpy_version = ""
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "kopf_scheduler_commit": commit
        + (f" + uncommitted operator/ changes (digest {changes})" if changes else ""),
        "kubernetes": v.KUBERNETES_VERSION,
        "etcd": v.ETCD_VERSION,
        "kwok": v.KWOK_VERSION,
        "numpy": numpy_version,
    }


# -- files ----------------------------------------------------------------------------------


def write_json(results: dict[str, Any], profile: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    date = results["date"][:10]
    path = RESULTS_DIR / f"{date}-{profile}.json"
    counter = 2
    while path.exists():
        path = RESULTS_DIR / f"{date}-{profile}-{counter}.json"
        counter += 1
    path.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    return path


def update_doc(section: str, doc: Path = RUNS_DOC) -> None:
    """Put ``section`` at the top of the runs page (made when missing)."""
    text = doc.read_text() if doc.exists() else ""
    if RUNS_MARKER not in text:
        text = RUNS_HEADER + "\n" + RUNS_MARKER + "\n" + text
    head, _, tail = text.partition(RUNS_MARKER)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(head + RUNS_MARKER + "\n\n" + section.rstrip() + "\n\n" + tail.lstrip("\n"))


RUNS_HEADER = """# Benchmark runs

Every run `make bench`, `make bench-full` and `python -m bench run` recorded, newest first, as it
came out: the machine, the versions, every figure of both schedulers. What they add up to is in
[the summary](../benchmarks.md); the raw results are in `bench/results/`.
"""


# -- tables ---------------------------------------------------------------------------------


def _f(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pair(summary: dict[str, Any] | None, digits: int = 1) -> str:
    if not summary or not summary.get("count"):
        return "–"
    return f"{_f(summary.get('p50'), digits)} / {_f(summary.get('p99'), digits)}"


def _ms(summary: dict[str, Any] | None) -> dict[str, Any]:
    """A histogram summary in seconds (``promtext.histogram``) with its quantiles in ms."""
    summary = summary or {}
    return {
        "count": summary.get("count"),
        **{q: None if summary.get(q) is None else summary[q] * 1000 for q in ("p50", "p99")},
    }


STAGES = (
    ("watch_delivery_lag_s", "created → seen on the watch"),
    ("queued_before_first_attempt_s", "queued → first attempt"),
    ("algorithm_duration_s", "scheduling algorithm"),
    ("binding_request_delay_s", "cycle end → binding request"),
    ("binding_request_duration_s", "binding request"),
    ("sli_duration_s", "queued → bound (SLI)"),
)
"""The stages of a pod's wait, in order, as the scheduler's own histograms measure them."""


def stage_table(pairs: list[dict[str, Any]]) -> list[str]:
    header = " | ".join(f"{title} p50 / p99 ms" for _, title in STAGES)
    lines = [
        "",
        f"| scenario | scheduler | {header} |",
        "|---|---|" + "---|" * len(STAGES),
    ]
    for pair in pairs:
        if "error" in pair:
            continue
        for which, run in pair["runs"].items():
            if "throughput" not in run:
                continue
            metrics = run.get("scheduler_metrics") or {}
            cells = " | ".join(_pair(_ms(metrics.get(key)), 1) for key, _ in STAGES)
            name = "kopf-scheduler" if which == "kopf" else "kube-scheduler"
            lines.append(f"| {pair['scenario']['label']} | {name} | {cells} |")
    return lines


def _checks(result: dict[str, Any]) -> str:
    checks = result.get("checks") or {}
    parts = []
    if not result.get("all_measured_bound"):
        parts.append(f"bound {result.get('bound_measured')}/{result.get('measured_pods')}")
    for name in ("spread", "anti", "victims"):
        value = checks.get(name)
        if not isinstance(value, dict):
            continue
        if name == "spread":
            parts.append(f"skew {value.get('skew')}")
        elif name == "anti":
            parts.append(f"shared nodes {value.get('nodes_with_two_or_more')}")
        elif "histogram" in value:
            parts.append("victims " + ",".join(f"{k}×{v}" for k, v in value["histogram"].items()))
        elif "preempting" in value:
            parts.append(
                f"victims {value.get('deleted_low_priority')} for "
                f"{value.get('preempting')} preempting, {value.get('bound_preemptors')} bound"
            )
        else:  # results written before preempting pods were counted
            parts.append(
                f"victims {value.get('deleted_low_priority')} for "
                f"{value.get('bound_preemptors')} bound preemptors"
            )
            continue
        if not value.get("ok", True):
            parts[-1] += " FAIL"
    return "; ".join(parts) or "ok"


def _inprocess_tables(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| scenario | shape | pods/s avg | pods/s p50 | samples | pods/s overall "
        "| attempt p50 / p99 ms "
        "| create→bound p50 / p99 ms | preemption p50 / p99 ms | CPU s | peak RSS MiB | checks |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r.get('label', '?')} | error: {r['error'][-200:]} |||||||||||")
            continue
        s = r["scenario"]
        t = r["throughput"]
        lines.append(
            f"| {s['label']} | {s['shape']} | {_f(t.get('average'))} | {_f(t.get('p50'))} "
            f"| {t.get('samples')} | {_f(t.get('overall'))} | {_pair(r['attempt_ms'], 2)} "
            f"| {_pair(r['create_to_bound_ms'], 0)} "
            f"| {_pair(r['preemption_ms'], 1)} | {_f(r['cpu_seconds'])} "
            f"| {_f(r['peak_rss_mb'], 0)} | {_checks(r)} |"
        )
    extra = [r for r in results if "error" not in r and _has_extras(r)]
    if extra:
        lines += [
            "",
            "| scenario | preemptor create→bound p50 / p99 ms | preemption attempts "
            "(outcome: count) | head-of-line gap p99 / max ms | unschedulable attempt p50 / p99 ms "
            "| queue max (active/backoff/unschedulable) | arrivals injected / bound |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in extra:
            q = (r.get("queue") or {}).get("max") or {}
            gaps = r.get("head_of_line_gaps_ms") or {}
            outcomes = ", ".join(
                f"{k}: {v}" for k, v in (r.get("preemption_outcomes") or {}).items()
            )
            lines.append(
                f"| {r['scenario']['label']} | {_pair(r['preemptor_create_to_bound_ms'], 0)} "
                f"| {outcomes or '–'} | {_f(gaps.get('p99'))} / {_f(gaps.get('max'))} "
                f"| {_pair(r['unschedulable_attempt_ms'], 1)} "
                f"| {q.get('active', '–')}/{q.get('backoff', '–')}/{q.get('unschedulable', '–')} "
                f"| {r['arrivals']['injected']} / {r['arrivals']['bound']} |"
            )
    return lines


def _has_extras(r: dict[str, Any]) -> bool:
    return bool(
        (r.get("preemptor_create_to_bound_ms") or {}).get("count")
        or (r.get("arrivals") or {}).get("injected")
        or (r.get("unschedulable_attempt_ms") or {}).get("count")
    )


def _requests(run: dict[str, Any]) -> str:
    requests = run.get("api_requests") or {}
    if "total" not in requests:
        return "–"
    verbs = " ".join(f"{k} {v}" for k, v in (requests.get("by_verb") or {}).items())
    return f"{requests['total']} ({verbs})"


def _e2e_tables(pairs: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    settings = sorted({(p["qps"], p["burst"]) for p in pairs}, reverse=True)
    for qps, burst in settings:
        lines += [
            "",
            f"**clientConnection qps {qps:g} / burst {burst}**",
            "",
            "| scenario | scheduler | pods/s avg | pods/s p50 | samples "
            "| create→bound p50 / p99 ms | attempt p50 / p99 ms (own histogram) "
            "| API requests (by verb) | sched CPU s "
            "| peak RSS MiB | creator pods/s | checks |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for pair in (p for p in pairs if (p["qps"], p["burst"]) == (qps, burst)):
            label = pair["scenario"]["label"]
            if "error" in pair:
                lines.append(f"| {label} | error: {pair['error'][-200:]} |||||||||||")
                continue
            for which, run in pair["runs"].items():
                if "throughput" not in run:
                    lines.append(f"| {label} | {which} | error: {run.get('error', '?')} ||||||||||")
                    continue
                t = run["throughput"]
                metrics = run.get("scheduler_metrics") or {}
                attempt_ms = _ms(metrics.get("attempt_duration_scheduled_s"))
                name = "kopf-scheduler" if which == "kopf" else "kube-scheduler"
                lines.append(
                    f"| {label} | {name} | {_f(t.get('average'))} | {_f(t.get('p50'))} "
                    f"| {t.get('samples')} | {_pair(run['create_to_bound_ms'], 0)} "
                    f"| {_pair(attempt_ms, 1)} "
                    f"| {_requests(run)} | {_f(run.get('cpu_seconds'))} "
                    f"| {_f(run.get('peak_rss_mb'), 0)} "
                    f"| {_f((run.get('creation') or {}).get('per_second'), 0)} | {_checks(run)} |"
                )
            ratio = pair.get("ratios") or {}
            lines.append(
                f"| {label} | **ours / upstream** | {_f(ratio.get('throughput_average'), 2)} "
                f"| {_f(ratio.get('throughput_p50'), 2)} | "
                f"| {_f(ratio.get('create_to_bound_p50'), 2)} / "
                f"{_f(ratio.get('create_to_bound_p99'), 2)} | | {_f(ratio.get('api_requests'), 2)} "
                f"| {_f(ratio.get('cpu_seconds'), 2)} | {_f(ratio.get('peak_rss_mb'), 2)} | | |"
            )
        loads = [
            f"{p['scenario']['label']} {p['contention_at_start']['loadavg'][0]}"
            for p in pairs
            if (p["qps"], p["burst"]) == (qps, burst) and p.get("contention_at_start")
        ]
        if loads:
            lines += ["", "1-minute load average when each pair started: " + ", ".join(loads) + "."]
        lines += stage_table([p for p in pairs if (p["qps"], p["burst"]) == (qps, burst)])
        extra = [p for p in pairs if (p["qps"], p["burst"]) == (qps, burst) and _e2e_extra(p)]
        if extra:
            lines += [
                "",
                "| scenario | scheduler | preemptor create→bound p50 / p99 ms | PostFilter p50 "
                "/ p99 ms (own histogram) | unschedulable attempts | head-of-line gap p99 / max "
                "ms | pending max | arrivals injected / bound |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for pair in extra:
                for which, run in pair["runs"].items():
                    if "throughput" not in run:
                        continue
                    metrics = run.get("scheduler_metrics") or {}
                    post_ms = _ms(metrics.get("postfilter_duration_s"))
                    unsched = (metrics.get("schedule_attempts_total") or {}).get("unschedulable")
                    gaps = run.get("head_of_line_gaps_ms") or {}
                    name = "kopf-scheduler" if which == "kopf" else "kube-scheduler"
                    lines.append(
                        f"| {pair['scenario']['label']} | {name} "
                        f"| {_pair(run['preemptor_create_to_bound_ms'], 0)} | {_pair(post_ms, 1)} "
                        f"| {_f(unsched, 0)} | {_f(gaps.get('p99'))} / {_f(gaps.get('max'))} "
                        f"| {(run.get('queue') or {}).get('max', {}).get('pending', '–')} "
                        f"| {run['arrivals']['injected']} / {run['arrivals']['bound']} |"
                    )
    return lines


def _e2e_extra(pair: dict[str, Any]) -> bool:
    return "error" not in pair and any(
        _has_extras(run) for run in pair.get("runs", {}).values() if "throughput" in run
    )


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    v = results["versions"]
    lines = [
        f"## {results['date']} — profile `{results['profile']}`",
        "",
        f"- Machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['ram_gib']} GiB RAM, "
        f"Linux {m['kernel']}; load average at start {m['loadavg']}, at end "
        f"{results.get('machine_end', {}).get('loadavg', '–')}.",
        f"- Versions: Python {v['python']}, kopf-scheduler `{v['kopf_scheduler_commit']}`, "
        f"Kubernetes {v['kubernetes']} (kube-scheduler, apiserver), etcd {v['etcd']}, "
        f"kwok {v['kwok']}, numpy {v['numpy']}.",
        f"- Command: `{results['command']}`; wall time {results.get('wall_seconds', '–')} s.",
    ]
    for note in results.get("notes", []):
        lines.append(f"- {note}")
    inprocess = results.get("inprocess") or []
    if inprocess:
        lines += ["", "### In-process (real scheduler, in-memory cluster, wall clock)", ""]
        lines += _inprocess_tables(inprocess)
    e2e = results.get("e2e") or []
    if e2e:
        lines += ["", "### End to end (local control plane, kwok nodes)"]
        lines += _e2e_tables(e2e)
    skipped = results.get("skipped") or []
    if skipped:
        lines += ["", "Not run: " + "; ".join(skipped) + "."]
    return "\n".join(lines) + "\n"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def command_line() -> str:
    return " ".join(["python -m bench", *sys.argv[1:]])
