"""``kopf-scheduler simulate --compare-config A.yaml B.yaml``: a configuration change, tried first.

The scenario (files, or the live cluster read-only with ``--from-cluster --add``) is simulated
under each configuration (``sim/compare.py``). Exit codes: 0 the decisions are the same, 3 they
differ (a pod placed elsewhere or not at all, a pod evicted under one only), otherwise
``cli.py``'s (1 at run time, 2 for bad input).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kopf_scheduler.cli_output import print_rendered
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import check_config_file
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.exit_codes import USAGE as EXIT_USAGE
from kopf_scheduler.live_cluster import read_live_cluster
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.bundled_scenarios import bundled_demo
from kopf_scheduler.sim.compare import (
    compare,
    render_comparison_json,
    render_comparison_table,
    run_both,
)
from kopf_scheduler.sim.compare_html import render_comparison_html
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario

EXIT_CHANGED = 3


def _load(path: Path) -> SchedulerConfig:
    loaded = check_config_file(path)
    for warning in loaded.warnings:
        print(f"warning: {path}: {warning}", file=sys.stderr)
    return loaded.config


def _usage_problem(args: argparse.Namespace) -> str:
    if args.config is not None:
        return "--compare-config names both configurations; leave out --config"
    if args.explain:
        return "--compare-config reports differences; --explain goes with a single run"
    if args.output == "yaml":
        return "--compare-config prints a table, JSON or HTML"
    if args.from_cluster and not args.add:
        return "--from-cluster needs at least one --add FILE"
    if args.add and not args.from_cluster:
        return "--add goes with --from-cluster"
    return ""


def compare_configs(args: argparse.Namespace) -> int:
    """The ``simulate --compare-config`` command."""
    configure_logging("warning", "console")
    problem = _usage_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    first, second = args.compare_config
    try:
        configs = (_load(first), _load(second))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.from_cluster:
        scenario, _ = read_live_cluster(args.kubeconfig, args.context, configs, args.add)
    else:
        try:
            scenario = load_scenario(args.scenario or [bundled_demo()])
        except ScenarioError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    results = sim_loop.run(run_both(configs, scenario, seed=args.seed))
    comparison = compare((str(first), str(second)), results)
    print_rendered(
        comparison,
        args.output,
        {
            "json": render_comparison_json,
            "html": render_comparison_html,
            "table": render_comparison_table,
        },
    )
    return EXIT_CHANGED if comparison.changed else 0
