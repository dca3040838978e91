"""Keep the benchmark harness working: tiny scenarios through the real code paths.

Nothing here is timed. The in-process runs check that the result carries every figure the
reports read and that every measured pod was bound; the pure helpers (throughput sampling,
percentiles, histogram quantiles, audit counting, the docs table) are checked on known inputs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from bench.e2e import audit_counts, ratios, scheduler_metrics, wait_until_quiet, watch_figures
from bench.inprocess import run_inprocess
from bench.queue_moves import offer_events
from bench.scenarios import Arrivals, Group, Scenario, check

from bench import promtext, report, stats

INPROCESS_KEYS = {
    "mode",
    "scenario",
    "measured_pods",
    "bound_measured",
    "all_measured_bound",
    "throughput",
    "attempt_ms",
    "attempt_all_ms",
    "preemption_ms",
    "preemption_any_ms",
    "preemption_outcomes",
    "unschedulable_attempt_ms",
    "create_to_bound_ms",
    "preemptor_create_to_bound_ms",
    "victims_per_preemptor",
    "victims_total",
    "head_of_line_gaps_ms",
    "arrivals",
    "queue",
    "cycles",
    "measured_seconds",
    "cpu_seconds",
    "cpu_seconds_total",
    "rss_before_mb",
    "peak_rss_mb",
    "checks",
}

TINY = {
    "basic": Scenario(
        "S1", "SchedulingBasic", 20, (Group("default", 20),), (Group("default", 50),)
    ),
    "preemption": Scenario(
        "S4",
        "PreemptionBasic/5Nodes",
        5,
        (Group("low", 20),),
        (Group("high", 5),),
        checks=("victims",),
    ),
    "arrivals": Scenario(
        "S6",
        "Unschedulable/5Nodes",
        5,
        (Group("default", 5),),
        (Group("default", 10),),
        arrivals=Arrivals("large", 5.0),
    ),
    "anti-affinity": Scenario(
        "S3b", "PodAntiAffinity", 30, (Group("anti", 5),), (Group("anti", 20),), checks=("anti",)
    ),
    "spreading": Scenario(
        "S3a",
        "TopologySpreading",
        30,
        (Group("default", 30),),
        (Group("spread", 40),),
        checks=("spread",),
    ),
}


@pytest.mark.parametrize("name", list(TINY), ids=list(TINY))
def test_inprocess_result_has_every_figure_and_binds_all(name: str) -> None:
    result = run_inprocess(TINY[name], configure_logs=False)
    assert set(result) >= INPROCESS_KEYS
    assert result["measured_pods"] == TINY[name].measured_count
    assert result["all_measured_bound"], result["bound_measured"]
    assert result["checks"]["ok"], result["checks"]
    assert result["attempt_ms"]["count"] >= TINY[name].measured_count
    json.dumps(result)  # the raw results file must be able to hold it


def test_preemption_run_reports_three_victims_per_preemptor() -> None:
    result = run_inprocess(TINY["preemption"], configure_logs=False)
    assert result["victims_per_preemptor"] == {"3": 5}
    assert result["preemption_ms"]["count"] == 5
    assert result["checks"]["victims"]["ok"]


@pytest.mark.parametrize(
    ("times", "start", "rates"),
    [
        pytest.param([0.1, 0.2, 1.5, 2.2, 2.9, 3.7], 0.0, [2.0, 1.0, 2.0, 1 / 0.7], id="tail-kept"),
        pytest.param([0.1, 0.2, 1.5, 2.1], 0.0, [2.0, 2 / 1.1], id="short-tail-joins-last"),
        pytest.param([0.5] + [4.2] * 9, 0.0, [1.0, 0.0, 0.0, 9 / 1.2], id="burst-at-the-end-kept"),
        pytest.param([0.05, 0.1], 0.0, [20.0], id="only-a-partial-sample"),
        pytest.param([], 0.0, [], id="nothing-bound"),
        pytest.param([4.5, 5.5], 4.0, [1.0, 1 / 0.5], id="offset-start"),
    ],
)
def test_per_second_rates(times: list[float], start: float, rates: list[float]) -> None:
    assert stats.per_second_rates(times, start) == pytest.approx(rates)


def test_throughput_skips_the_first_sample() -> None:
    # 10 pods in the first second, then 4 per second for 3 seconds.
    times = [i * 0.09 for i in range(10)] + [1 + i * 0.25 for i in range(12)]
    result = stats.throughput(times, 0.0)
    assert result["samples"] == 3
    assert result["average"] == pytest.approx(4.0, abs=0.5)


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        pytest.param([5, 1, 3, 2, 4], 50, 3, id="median-nearest-rank"),
        pytest.param(list(range(1, 101)), 99, 99, id="p99-of-100"),
        pytest.param([7], 99, 7, id="single"),
        pytest.param([], 50, None, id="empty"),
    ],
)
def test_percentile_nearest_rank(values: list[float], p: float, expected: float | None) -> None:
    assert stats.percentile(values, p) == expected


METRICS = """\
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.001"} 0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.002"} 50
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.004"} 100
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="+Inf"} 100
scheduler_scheduling_attempt_duration_seconds_sum{profile="p",result="scheduled"} 0.2
scheduler_scheduling_attempt_duration_seconds_count{profile="p",result="scheduled"} 100
scheduler_schedule_attempts_total{profile="p",result="scheduled"} 100
scheduler_schedule_attempts_total{profile="p",result="unschedulable"} 3
"""


def test_histogram_quantiles_interpolate_inside_buckets() -> None:
    samples = promtext.parse(METRICS)
    hist = promtext.histogram(
        samples, "scheduler_scheduling_attempt_duration_seconds", result="scheduled"
    )
    assert hist["count"] == 100
    assert hist["p50"] == pytest.approx(0.002)
    assert hist["p99"] == pytest.approx(0.002 + 0.002 * 49 / 50)
    totals = promtext.by_label(samples, "scheduler_schedule_attempts_total", "result")
    assert totals == {"scheduled": 100.0, "unschedulable": 3.0}


def _audit_line(user: str, verb: str, resource: str, subresource: str = "") -> str:
    ref: dict[str, Any] = {"resource": resource}
    if subresource:
        ref["subresource"] = subresource
    return json.dumps(
        {
            "user": {"username": user},
            "verb": verb,
            "objectRef": ref,
            "responseStatus": {"code": 201},
        }
    )


def test_audit_counts_only_the_given_user_after_the_offset(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    before = _audit_line("bench-kopf-scheduler", "create", "pods", "binding") + "\n"
    after = [
        _audit_line("bench-kopf-scheduler", "create", "pods", "binding"),
        _audit_line("bench-kopf-scheduler", "create", "events"),
        _audit_line("bench-kube-scheduler", "create", "pods", "binding"),
        _audit_line("bench-kopf-scheduler", "patch", "pods", "status"),
    ]
    log.write_text(before + "\n".join(after) + "\n")
    counts = audit_counts(log, len(before), "bench-kopf-scheduler")
    assert counts["total"] == 3
    assert counts["by_verb"] == {"create": 2, "patch": 1}
    assert counts["by_verb_resource"]["create pods/binding"] == 1


def test_ratios_are_ours_over_upstream() -> None:
    ours = {"throughput": {"average": 50.0, "p50": 40.0}, "cpu_seconds": 3.0}
    upstream = {"throughput": {"average": 100.0, "p50": 0.0}, "cpu_seconds": 1.5}
    result = ratios(ours, upstream)
    assert result["throughput_average"] == 0.5
    assert result["throughput_p50"] is None
    assert result["cpu_seconds"] == 2.0


def test_checks_flag_shared_anti_affinity_nodes_and_large_skew() -> None:
    scenario = Scenario("S3", "x", 3, (), (Group("anti", 1),), checks=("anti", "spread"))

    def pod(color: str, node: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"color": color}}, "spec": {"nodeName": node}}

    pods = [pod("green", "n1"), pod("green", "n1")] + [pod("blue", "n2")] * 6
    result = check(scenario, pods, {"n1": "a", "n2": "b", "n3": "c"})
    assert result["anti"] == {"nodes_with_two_or_more": 1, "ok": False}
    assert result["spread"]["skew"] == 6
    assert result["ok"] is False


def test_render_produces_the_tables() -> None:
    result = run_inprocess(TINY["basic"], configure_logs=False)
    results = {
        "date": "2026-01-01 00:00 UTC",
        "profile": "smoke",
        "command": "python -m bench smoke",
        "machine": {
            "nproc": 2,
            "cpu_model": "cpu",
            "ram_gib": 1.0,
            "kernel": "k",
            "loadavg": [0.0, 0.0, 0.0],
        },
        "versions": {
            "python": "3",
            "kopf_scheduler_commit": "abc",
            "kubernetes": "v1.34.10",
            "etcd": "v3",
            "kwok": "v0",
            "numpy": "2",
        },
        "inprocess": [result],
        "e2e": [],
    }
    text = report.render(results)
    assert text.startswith("## 2026-01-01 00:00 UTC — profile `smoke`")
    assert "| S1 | 20 nodes, init 20 default, measured 50 default |" in text


STAGE_METRICS = """\
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="pods",le="1.0"} 1
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="pods",le="2.0"} 2
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="pods",le="+Inf"} 2
kopf_scheduler_watch_delivery_lag_seconds_count{resource="pods"} 2
kopf_scheduler_watch_delivery_lag_seconds_sum{resource="pods"} 2.5
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="nodes",le="1.0"} 0
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="nodes",le="2.0"} 0
kopf_scheduler_watch_delivery_lag_seconds_bucket{resource="nodes",le="+Inf"} 5
kopf_scheduler_watch_delivery_lag_seconds_count{resource="nodes"} 5
kopf_scheduler_watch_delivery_lag_seconds_sum{resource="nodes"} 50.0
"""


def test_the_stage_table_shows_the_pod_stages_each_scheduler_measures() -> None:
    ours = scheduler_metrics(STAGE_METRICS)
    upstream = scheduler_metrics("")
    pair = {
        "scenario": {"label": "S2"},
        "runs": {
            "kopf": {"throughput": {}, "scheduler_metrics": ours},
            "upstream": {"throughput": {}, "scheduler_metrics": upstream},
        },
    }

    header, _, kopf_row, upstream_row = report.stage_table([pair])[1:]

    assert "created → seen on the watch p50 / p99 ms" in header
    # Pods only (the nodes' series would put the p99 past 2 s), in milliseconds.
    assert kopf_row.startswith("| S2 | kopf-scheduler | 1000.0 / 1980.0 |")
    assert upstream_row == "| S2 | kube-scheduler |" + " – |" * len(report.STAGES)


def _watched(role: str, kind: str, seen: float, **times: float) -> dict[str, Any]:
    return {"role": role, "kind": kind, "seen": seen, **times}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(
            {
                "a-high-0": _watched("arrival", "high", 0.0, nominated=0.1, bound=1.5),
                "a-high-1": _watched("arrival", "high", 0.2, nominated=0.3),
                **{f"init-low-{i}": _watched("init", "low", 0.0, deleted=0.5) for i in range(6)},
            },
            {"deleted_low_priority": 6, "preempting": 2, "bound_preemptors": 1, "ok": True},
            id="nominated-but-unbound-preemptor-counts",
        ),
        pytest.param(
            {
                "a-high-0": _watched("arrival", "high", 0.0, bound=1.0),
                **{f"init-low-{i}": _watched("init", "low", 0.0, deleted=0.5) for i in range(4)},
            },
            {"deleted_low_priority": 4, "preempting": 1, "bound_preemptors": 1, "ok": False},
            id="more-than-three-victims-fails",
        ),
        pytest.param(
            {"init-low-0": _watched("init", "low", 0.0)},
            {"deleted_low_priority": 0, "preempting": 0, "bound_preemptors": 0, "ok": True},
            id="no-preemption",
        ),
    ],
)
def test_e2e_victims_are_compared_with_preempting_pods(
    pods: dict[str, dict[str, Any]], expected: dict[str, Any]
) -> None:
    measured = {"m-default-0": _watched("measured", "default", 0.0, bound=0.5)}
    scenario = Scenario(
        "S5", "x", 1, (Group("low", 6),), (Group("default", 1),), Arrivals("high", 5.0)
    )
    figures = watch_figures(scenario, {"pods": {**measured, **pods}, "done_at": 2.0}, 0.0)
    victims = figures["victims"]
    assert {k: victims[k] for k in expected} == expected
    assert figures["all_measured_bound"]


def test_waiting_for_a_quiet_control_plane_stops_when_the_load_is_low_or_steady() -> None:
    def run(cpu_per_window: list[float]) -> dict[str, float]:
        now = [0.0]
        used = [0.0]
        rates = iter(cpu_per_window)

        async def sleep(seconds: float) -> None:
            now[0] += seconds
            used[0] += next(rates) * seconds

        return asyncio.run(
            wait_until_quiet(
                lambda: used[0],
                window=5.0,
                threshold=0.35,
                timeout=60.0,
                clock=lambda: now[0],
                sleep=sleep,
            )
        )

    assert run([1.8, 1.2, 0.2, 0.1]) == {"seconds": 15.0, "cores": 0.2}  # fell below the threshold
    assert run([1.8, 0.9, 0.85, 0.1]) == {"seconds": 15.0, "cores": 0.85}  # stopped falling
    assert run([2.0 / 1.5**i for i in range(20)]) == {"seconds": 30.0, "cores": 0.263}
    assert run([1.0] * 20) == {"seconds": 10.0, "cores": 1.0}  # a steady load: one more window


LOOP_LAG_METRICS = """\
kopf_scheduler_event_loop_lag_seconds_bucket{le="0.001"} 90
kopf_scheduler_event_loop_lag_seconds_bucket{le="0.1"} 100
kopf_scheduler_event_loop_lag_seconds_bucket{le="+Inf"} 100
kopf_scheduler_event_loop_lag_seconds_count 100
kopf_scheduler_event_loop_lag_seconds_sum 1.5
"""


def test_a_runs_figures_hold_the_event_loops_lag() -> None:
    lag = scheduler_metrics(LOOP_LAG_METRICS)["event_loop_lag_s"]
    assert lag["count"] == 100
    assert lag["p50"] < 0.001 < lag["p99"] <= 0.1


def test_the_queue_moves_benchmark_offers_bound_pods_to_pods_that_none_of_them_moves() -> None:
    figures = asyncio.run(offer_events(waiting=20, events=10))
    assert figures["waiting"] == figures["still_waiting"] == 20
    assert figures["microseconds_per_event"] > 0
