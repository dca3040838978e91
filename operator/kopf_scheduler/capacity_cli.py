"""``kopf-scheduler capacity``: how many more copies fit, and which nodes could go.

``capacity`` starts from scenario files or from a read-only snapshot of a live cluster (the
LIST requests of ``simulate --from-cluster``; nothing is ever written to the cluster) and asks
the simulated scheduler, configured as ``--config`` says: with ``--podspec`` how many copies of
each template fit (``sim/capacity.py``), with ``--drain`` which nodes could be removed with their
pods placed elsewhere (``sim/drain.py``). Exit codes are ``cli.py``'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kopf_scheduler.cli_output import print_rendered
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import check_config_file, default_config
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.exit_codes import USAGE as EXIT_USAGE
from kopf_scheduler.gc_tuning import tune_for_large_heap
from kopf_scheduler.live_cluster import read_live_cluster
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.capacity import CapacityError, count_copies
from kopf_scheduler.sim.capacity_html import render_capacity_html, render_drain_html
from kopf_scheduler.sim.capacity_report import (
    render_capacity_json,
    render_capacity_table,
    render_drain_json,
    render_drain_table,
)
from kopf_scheduler.sim.drain import find_removable_nodes
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from kopf_scheduler.sim.templates import load_template


def _config(path: Path | None) -> SchedulerConfig:
    """The configuration at ``path`` (the defaults without one); warnings go to stderr."""
    if path is None:
        return default_config()
    loaded = check_config_file(path)
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return loaded.config


def _usage_problem(args: argparse.Namespace) -> str:
    if args.from_cluster and args.scenario:
        return "give scenario files or --from-cluster, not both"
    if not args.from_cluster and not args.scenario:
        return "give scenario files or --from-cluster (the live cluster, only read)"
    if args.drain and args.podspec:
        return "--drain takes no --podspec: it places the pods the nodes already run"
    if not args.drain and not args.podspec:
        return "needs at least one --podspec FILE (or --drain)"
    if args.max_limit < 0:
        return "--max-limit must be 0 (no limit) or more"
    return ""


def capacity_command(args: argparse.Namespace) -> int:
    """``capacity`` (and ``kubectl kopf-scheduler capacity``, which reads the live cluster)."""
    configure_logging("warning", "console")
    tune_for_large_heap()  # a snapshot of a large cluster is tens of thousands of objects
    problem = _usage_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = _config(args.config)
        templates = [load_template(path) for path in args.podspec]
    except (ConfigError, ScenarioError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.from_cluster:
        scenario, _ = read_live_cluster(args.kubeconfig, args.context, [config])
    else:
        try:
            scenario = load_scenario(args.scenario)
        except ScenarioError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    if args.drain:
        drained = sim_loop.run(
            find_removable_nodes(config, scenario, preemption=args.preemption, seed=args.seed)
        )
        if args.output == "html":
            print(render_drain_html(drained), end="")
        else:
            print(
                render_drain_json(drained) if args.output == "json" else render_drain_table(drained)
            )
        return 0
    try:
        counted = sim_loop.run(
            count_copies(
                config,
                scenario,
                templates,
                preemption=args.preemption,
                max_limit=args.max_limit,
                seed=args.seed,
                matrix=args.output == "html",
            )
        )
    except CapacityError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print_rendered(
        counted,
        args.output,
        {
            "json": render_capacity_json,
            "html": render_capacity_html,
            "table": render_capacity_table,
        },
    )
    return 0


def add_capacity_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``capacity`` among the ``kopf-scheduler`` commands."""
    capacity = commands.add_parser(
        "capacity",
        help="how many more copies of a pod fit (--podspec), or which nodes could go (--drain)",
        description=(
            "Add copies of each --podspec template in turn with the simulated scheduler until "
            "one fails; report the copies per template and node and why the next one failed. "
            "The live cluster is only read."
        ),
    )
    capacity.add_argument(
        "scenario", nargs="*", type=Path, help="scenario files (as for simulate) of the cluster"
    )
    capacity.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from the live cluster's state (read-only) instead of scenario files",
    )
    add_capacity_options(capacity)
    capacity.set_defaults(handler=capacity_command)


def add_capacity_options(capacity: argparse.ArgumentParser) -> None:
    """The options of ``capacity`` past its cluster's source, shared with the kubectl plugin."""
    capacity.add_argument(
        "--podspec",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help=(
            "a Pod, or a Deployment/ReplicaSet/StatefulSet/Job whose pod template to copy, "
            "with its PodGroup for a gang; may be repeated (copies alternate)"
        ),
    )
    capacity.add_argument(
        "--drain",
        action="store_true",
        help="instead: which nodes could go with their pods placed elsewhere, largest first",
    )
    capacity.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration file")
    capacity.add_argument(
        "--preemption",
        action="store_true",
        help="let copies preempt lower-priority pods (default: only free room counts)",
    )
    capacity.add_argument(
        "--max-limit",
        type=int,
        default=0,
        metavar="N",
        help="stop after N copies (default 0: until one fails)",
    )
    capacity.add_argument(
        "--output",
        "-o",
        choices=["table", "json", "html"],
        default="table",
        help="html: one self-contained page with a node × plugin matrix per template",
    )
    capacity.add_argument(
        "--seed", type=int, default=0, help="seed for every random choice (default 0)"
    )
    capacity.add_argument("--kubeconfig", type=Path, help="with --from-cluster: the cluster")
    capacity.add_argument(
        "--context", help="with --from-cluster: the kubeconfig context (default: the current one)"
    )
