"""``python -m differential``: campaigns, saved cases, single scenarios, reduction, recording,
race rates.

Every command that plays scenarios starts (or reuses) a control plane of its own in
``--cluster-dir`` (default ``$DIFFERENTIAL_CLUSTER_DIR``, else
``~/.cache/kopf-scheduler/differential``) and takes it down at the end unless it was already
running or ``--keep-cluster`` is given. Exit codes: 0 all identical or upstream-nondeterministic,
1 a true divergence, a failing case or a scenario that could not be played, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from doccharts.bars import ChartError
from e2e.localcluster.versions import cache_root

from . import cases as saved
from . import chart
from .campaign import (
    DEFAULT_OURS_RUNS,
    DEFAULT_UPSTREAM_RUNS,
    ScenarioResult,
    load_results,
    parse_seeds,
    play,
)
from .campaign import run_all as play_all
from .compare import Verdict
from .generator import CI_PROFILES, PROFILES, generate
from .normalise import ASPECTS, normalise
from .rates import measure, play_alternately
from .rates import render as render_rates
from .rates import to_json as rates_json
from .record import OURS, UPSTREAM, RunRecord
from .reduce import reduce
from .report import CampaignInfo, aspect_details, details, render, render_details, summary
from .runner import Lab, RunnerError
from .scenario import Scenario, ScenarioError, dump, load

DEFAULT_OUT = Path("/tmp/kopf-differential")
DETAILS = Path("results") / "fidelity-campaign.md"
"""The report's details page, relative to the report."""
_GENERATED = re.compile(rf"^({'|'.join(PROFILES)})-(\d+)$")


class UsageError(ValueError):
    pass


def cluster_dir(argument: str | None) -> Path:
    chosen = argument or os.environ.get("DIFFERENTIAL_CLUSTER_DIR")
    return Path(chosen).expanduser().resolve() if chosen else cache_root() / "differential"


def resolve(argument: str) -> Scenario:
    """A scenario file (or case file), or a generated scenario named ``<profile>-<seed>``."""
    path = Path(argument)
    if path.exists():
        return saved.load_case(path).scenario if saved.is_case(path) else load(path)
    match = _GENERATED.match(argument)
    if match is None:
        raise UsageError(
            f"{argument!r} is neither a file nor a generated scenario "
            f"(<profile>-<seed>, profiles: {', '.join(PROFILES)})"
        )
    return generate(int(match.group(2)), match.group(1))


def profiles(text: str) -> list[str]:
    chosen = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PROFILES]
    if unknown or not chosen:
        raise UsageError(f"profiles: {text!r}; known: {', '.join(PROFILES)}")
    return chosen


def _lab(args: argparse.Namespace, out: Path) -> Lab:
    return Lab(cluster_dir(args.cluster_dir), out, keep_cluster=args.keep_cluster)


class Runs(TypedDict):
    upstream_runs: int
    ours_runs: int


def _runs(args: argparse.Namespace) -> Runs:
    return {"upstream_runs": args.upstream_runs, "ours_runs": args.ours_runs}


def _say(message: str) -> None:
    print(message, flush=True)


# -- commands ---------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    sys.stdout.write(dump(resolve(args.scenario)))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    scenario = resolve(args.scenario)
    out = Path(args.out)
    with _lab(args, out) as lab:
        result = play(lab, scenario, **_runs(args), records=out / "runs")
    _say(details(result))
    return 1 if result.error or result.comparison.verdict is Verdict.DIVERGENCE else 0


def _campaign(
    args: argparse.Namespace, lab: Lab, scenarios: list[Scenario], out: Path
) -> list[ScenarioResult]:
    total = len(scenarios)
    done = 0

    def progress(result: ScenarioResult) -> None:
        nonlocal done
        done += 1
        _say(f"[{done}/{total}] {summary(result)}")

    return play_all(lab, scenarios, **_runs(args), out_dir=out, on_result=progress)


def _write_report(
    results: list[ScenarioResult], args: argparse.Namespace, seconds: float, path: Path
) -> None:
    command = args.command_line or "python -m differential " + shlex.join(sys.argv[1:])
    info = CampaignInfo(
        command=command,
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
        seconds=seconds,
        upstream_runs=args.upstream_runs,
        ours_runs=args.ours_runs,
    )
    details_page = path.parent / DETAILS
    details_page.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(results, info, DETAILS.as_posix()))
    details_page.write_text(render_details(results, info, f"../{path.name}"))
    _say(f"report written to {path}, the details to {details_page}")
    _draw_chart(path, None)


def _draw_chart(report: Path, out: Path | None) -> bool:
    """The report's per-aspect chart drawn again; False (and why) when it cannot be."""
    try:
        written = chart.write(report, out)
    except ChartError as error:
        print(f"differential: chart: {error}", file=sys.stderr)
        return False
    _say(f"chart written to {written}")
    return True


def cmd_chart(args: argparse.Namespace) -> int:
    report = Path(args.report)
    if not report.is_file():
        raise UsageError(f"--report {args.report}: no such file")
    return 0 if _draw_chart(report, Path(args.out) if args.out else None) else 2


def _outcome_code(results: Sequence[ScenarioResult]) -> int:
    bad = [r for r in results if r.error or r.comparison.verdict is Verdict.DIVERGENCE]
    return 1 if bad else 0


def cmd_campaign(args: argparse.Namespace) -> int:
    scenarios = [
        generate(seed, p) for seed in parse_seeds(args.seeds) for p in profiles(args.profiles)
    ]
    out = Path(args.out) / datetime.now(UTC).strftime("campaign-%Y%m%dT%H%M%S")
    started = time.monotonic()
    with _lab(args, out) as lab:
        results = _campaign(args, lab, scenarios, out)
    _write_report(results, args, time.monotonic() - started, Path(args.report))
    _say(f"results and raw runs: {out}")
    return _outcome_code(results)


def cmd_report(args: argparse.Namespace) -> int:
    results = load_results(Path(args.results))
    seconds = sum(r.seconds for r in results)
    _write_report(results, args, seconds, Path(args.report))
    return _outcome_code(results)


def _check_cases(lab: Lab, cases: Sequence[saved.Case], live: bool, upstream_runs: int) -> int:
    failed = 0
    for case in cases:
        path = case.path
        with lab.stage(case.scenario):
            ours = normalise(lab.run(case.scenario, OURS, 1), case.scenario.pod_names())
            problems = saved.failures(saved.check_case(case, ours))
            live_note = ""
            if live:
                upstream = [
                    normalise(lab.run(case.scenario, UPSTREAM, n), case.scenario.pod_names())
                    for n in range(1, upstream_runs + 1)
                ]
                agreed = saved.agreed(upstream)
                changed = [a for a in case.upstream if agreed.get(a) != case.upstream[a]]
                live_note = (
                    f"; upstream now differs from the recording in {changed}" if changed else ""
                )
                failed += bool(changed)
        if problems:
            failed += 1
            _say(f"case {path.name}: FAILED in {', '.join(p.aspect for p in problems)}{live_note}")
            for problem in problems:
                _say(aspect_details(problem))
        else:
            _say(f"case {path.name}: ours matches upstream{live_note}")
    return 1 if failed else 0


def cmd_cases(args: argparse.Namespace) -> int:
    cases = [saved.load_case(path) for path in saved.case_paths(args.files)]
    if not cases:
        _say("no saved cases")
        return 0
    out = Path(args.out)
    with _lab(args, out) as lab:
        return _check_cases(lab, cases, args.live, args.upstream_runs)


def cmd_ci(args: argparse.Namespace) -> int:
    out = Path(args.out) / datetime.now(UTC).strftime("ci-%Y%m%dT%H%M%S")
    scenarios = [
        generate(seed, p) for seed in parse_seeds(args.seeds) for p in profiles(args.profiles)
    ]
    cases = [saved.load_case(path) for path in saved.case_paths()]
    started = time.monotonic()
    with _lab(args, out) as lab:
        cases_code = _check_cases(lab, cases, False, args.upstream_runs)
        results = _campaign(args, lab, scenarios, out)
    _write_report(results, args, time.monotonic() - started, out / "fidelity.md")
    _say(f"took {time.monotonic() - started:.0f}s")
    return max(cases_code, _outcome_code(results))


def cmd_reduce(args: argparse.Namespace) -> int:
    scenario = resolve(args.scenario)
    aspects = set(args.aspect)
    unknown = sorted(aspects - set(ASPECTS))
    if unknown:
        raise UsageError(f"--aspect: unknown {unknown}; aspects: {', '.join(ASPECTS)}")
    out = Path(args.out_dir)
    with _lab(args, out) as lab:

        def trial(candidate: Scenario) -> ScenarioResult:
            return play(lab, candidate, **_runs(args), records=out / "runs")

        original = trial(scenario)
        _say(details(original))
        best = reduce(original, aspects, trial, budget=args.budget, say=_say)
    best.scenario.name = Path(args.out).stem
    best.scenario.seed = best.scenario.profile = None  # no longer what the generator makes
    best.scenario.description = args.description or (
        f"reduced from {scenario.name}; shows a divergence in {', '.join(sorted(aspects))}"
    )
    Path(args.out).write_text(saved.dump_case(best.scenario, args.finding, best.upstream))
    _say(details(best))
    _say(f"case written to {args.out}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    """Every upstream run first, then ours: a case holds what upstream agreed on in all of
    them, and is written only when ours matches that already."""
    scenario = resolve(args.scenario)
    aspects = set(args.aspect)
    out = Path(args.out_dir)
    with _lab(args, out) as lab:
        result = play(lab, scenario, **_runs(args), records=out / "runs", every_upstream_run=True)
    _say(details(result))
    refused = saved.refusal(result, aspects)
    if refused is not None:
        print(f"differential: record: {refused}; no case written", file=sys.stderr)
        return 1
    Path(args.out).write_text(saved.dump_case(scenario, args.finding, result.upstream))
    recorded = saved.agreed(result.upstream)
    held = [a for a in ASPECTS if a in recorded]
    _say(f"case written to {args.out}, holding {', '.join(held)}")
    wavering = [a for a in ASPECTS if a in aspects and a not in recorded]
    if wavering:
        _say(f"not held (upstream disagreed with itself): {', '.join(wavering)}")
    return 0


def cmd_rates(args: argparse.Namespace) -> int:
    """Each scenario played ``--runs`` times by each side in turn; how often each way came out."""
    if args.runs < 2:
        raise UsageError("--runs must be at least 2")
    aspects = args.aspect or list(ASPECTS)
    out = Path(args.out) / datetime.now(UTC).strftime("rates-%Y%m%dT%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    with _lab(args, out) as lab:
        for name in args.scenario:
            scenario = resolve(name)

            def save(record: RunRecord, attempt: int, where: Path = out / scenario.name) -> None:
                record.save(where / f"{record.side}-{attempt}.json")

            upstream, ours = play_alternately(lab, scenario, args.runs, save=save)
            (out / f"{scenario.name}.json").write_text(rates_json(scenario.name, upstream, ours))
            _say(render_rates(scenario.name, args.runs, measure(upstream, ours, aspects)))
    _say(f"every run's outcome and raw record: {out}")
    return 0


# -- arguments --------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m differential",
        description="Compare kopf-scheduler with kube-scheduler v1.34.10 on the same scenarios.",
    )
    commands = top.add_subparsers(dest="command", required=True)

    def playing(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--cluster-dir", help="state directory of the control plane to use")
        sub.add_argument(
            "--keep-cluster", action="store_true", help="leave a control plane it started running"
        )
        sub.add_argument(
            "--upstream-runs",
            type=int,
            default=DEFAULT_UPSTREAM_RUNS,
            help="upstream runs at most per scenario, reruns included (at least 2)",
        )
        sub.add_argument(
            "--ours-runs",
            type=int,
            default=DEFAULT_OURS_RUNS,
            help="runs of ours at most per scenario, reruns included (at least 1)",
        )
        sub.add_argument(
            "--out", default=str(DEFAULT_OUT), help="where results and raw run records go"
        )

    show = commands.add_parser("show", help="print a scenario as YAML")
    show.add_argument("scenario", help="<profile>-<seed> or a scenario file")
    show.set_defaults(handler=cmd_show)

    run = commands.add_parser("run", help="play one scenario and print the comparison")
    run.add_argument("scenario", help="<profile>-<seed> or a scenario file")
    playing(run)
    run.set_defaults(handler=cmd_run)

    campaign = commands.add_parser("campaign", help="play seeds and write the report")
    campaign.add_argument("--seeds", default="1-50", help="e.g. 1-50 or 1,4,10-12")
    campaign.add_argument("--profiles", default=",".join(PROFILES))
    campaign.add_argument("--report", default="docs/fidelity.md")
    campaign.add_argument("--command-line", help="the command to name in the report")
    playing(campaign)
    campaign.set_defaults(handler=cmd_campaign)

    report = commands.add_parser("report", help="write the report again from a results file")
    report.add_argument("results", help="results.jsonl of a campaign")
    report.add_argument("--report", default="docs/fidelity.md")
    report.add_argument("--command-line", help="the command to name in the report")
    report.add_argument("--upstream-runs", type=int, default=DEFAULT_UPSTREAM_RUNS)
    report.add_argument("--ours-runs", type=int, default=DEFAULT_OURS_RUNS)
    report.set_defaults(handler=cmd_report)

    draw = commands.add_parser(
        "chart",
        help="draw the report's per-aspect fidelity, campaign by campaign, as SVG "
        "(from the report and its versions in git)",
    )
    draw.add_argument("--report", default="docs/fidelity.md")
    draw.add_argument(
        "--out", help=f"the SVG file to write (default: {chart.IMAGE} beside the report)"
    )
    draw.set_defaults(handler=cmd_chart)

    cases = commands.add_parser("cases", help="hold ours to the saved cases")
    cases.add_argument("files", nargs="*", help="case files (default: differential/cases/*.yaml)")
    cases.add_argument(
        "--live", action="store_true", help="run upstream too and check the recording"
    )
    playing(cases)
    cases.set_defaults(handler=cmd_cases)

    ci = commands.add_parser("ci", help="the saved cases and a short campaign (report in --out)")
    ci.add_argument("--seeds", default="1-2")
    ci.add_argument(
        "--profiles",
        default=",".join(CI_PROFILES),
        help="default: the profiles whose CI seed kube-scheduler plays the same way every time",
    )
    ci.add_argument("--command-line", help="the command to name in the report")
    playing(ci)
    ci.set_defaults(handler=cmd_ci)

    rates = commands.add_parser(
        "rates",
        help="play scenarios many times with each scheduler in turn and count how often each "
        "pod's outcome came out each way",
    )
    rates.add_argument("scenario", nargs="+", help="<profile>-<seed>, scenario or case files")
    rates.add_argument("--runs", type=int, default=20, help="runs of each side (default 20)")
    rates.add_argument(
        "--aspect", action="append", choices=ASPECTS, help="the aspects to count (default: all)"
    )
    rates.add_argument("--cluster-dir", help="state directory of the control plane to use")
    rates.add_argument("--keep-cluster", action="store_true")
    rates.add_argument("--out", default=str(DEFAULT_OUT), help="where outcomes and raw runs go")
    rates.set_defaults(handler=cmd_rates)

    def case_making(sub: argparse.ArgumentParser, out_dir: str) -> None:
        sub.add_argument("scenario", help="<profile>-<seed> or a scenario file")
        sub.add_argument("--aspect", action="append", required=True, choices=ASPECTS)
        sub.add_argument("--out", required=True, help="the case file to write")
        sub.add_argument("--finding", default="", help="what differs and why (upstream source)")
        sub.add_argument("--cluster-dir", help="state directory of the control plane to use")
        sub.add_argument("--keep-cluster", action="store_true")
        sub.add_argument("--upstream-runs", type=int, default=DEFAULT_UPSTREAM_RUNS)
        sub.add_argument("--ours-runs", type=int, default=DEFAULT_OURS_RUNS)
        sub.add_argument("--out-dir", default=str(DEFAULT_OUT / out_dir))

    shrink = commands.add_parser("reduce", help="shrink a divergent scenario into a saved case")
    case_making(shrink, "reduce")
    shrink.add_argument("--description", help="the scenario's description")
    shrink.add_argument("--budget", type=int, default=40, help="trials at most")
    shrink.set_defaults(handler=cmd_reduce)

    record = commands.add_parser(
        "record",
        help="play a scenario with every upstream run and ours, and save upstream's agreed "
        "outcome as a case (refused when ours differs from it)",
    )
    case_making(record, "record")
    record.set_defaults(handler=cmd_record)
    return top


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "upstream_runs", 2) < 2 or getattr(args, "ours_runs", 1) < 1:
        print(
            "differential: error: --upstream-runs must be at least 2, --ours-runs at least 1",
            file=sys.stderr,
        )
        return 2
    # SIGTERM unwinds like Ctrl-C, so that the schedulers, the runs and a control plane the
    # command started are cleaned up.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        code: int = args.handler(args)
    except (UsageError, ScenarioError, ValueError) as error:
        print(f"differential: error: {error}", file=sys.stderr)
        return 2
    except RunnerError as error:
        print(f"differential: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("differential: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
