"""The ``kopf-scheduler`` command line: ``run``, ``simulate`` and ``explain``.

``simulate`` with no scenario runs the bundled preemption demo, so a newcomer sees the scheduler
decide, preempt and explain without a cluster. ``run`` and ``explain`` talk to a cluster; their
modules (kopf, the API client) are imported only when they are used.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import default_config, load_config
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.sim.report import build_report, render_json, render_table, render_yaml
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import Scenario, ScenarioError, load_scenario

EXIT_USAGE = 2


def bundled_demo() -> Path:
    """The path of the bundled preemption demo scenario."""
    return Path(str(resources.files("kopf_scheduler") / "examples" / "preemption-demo.yaml"))


def _simulate(args: argparse.Namespace) -> int:
    configure_logging("warning", "console")
    try:
        config = load_config(args.config) if args.config else default_config()
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    added: list[str] = []
    if args.from_cluster:
        if not args.add:
            print("error: --from-cluster needs at least one --add FILE", file=sys.stderr)
            return EXIT_USAGE
        try:
            scenario, added = asyncio.run(_cluster_scenario(args))
        except (ScenarioError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    else:
        if args.add:
            print("error: --add goes with --from-cluster", file=sys.stderr)
            return EXIT_USAGE
        paths = args.scenario or [bundled_demo()]
        try:
            scenario = load_scenario(paths)
        except ScenarioError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    simulation = Simulation(config, seed=args.seed)
    result = asyncio.run(simulation.run(scenario))
    report = build_report(result, explain=args.explain, added=added)
    if args.output == "json":
        print(render_json(report))
    elif args.output == "yaml":
        print(render_yaml(report), end="")
    else:
        print(render_table(report), end="")
    return 0


async def _cluster_scenario(args: argparse.Namespace) -> tuple[Scenario, list[str]]:
    from kopf_scheduler.k8s.client import make_api
    from kopf_scheduler.service.whatif import cluster_scenario

    api = await make_api(str(args.kubeconfig) if args.kubeconfig else None)
    try:
        return await cluster_scenario(api, args.add)
    finally:
        await api.close()


def _run(args: argparse.Namespace) -> int:
    from kopf_scheduler.service.runner import RunOptions, run

    options = RunOptions(
        config_path=str(args.config) if args.config else None,
        kubeconfig=str(args.kubeconfig) if args.kubeconfig else None,
        namespace=args.namespace,
        health_host=args.health_host,
        health_port=args.health_port,
        log_format=args.log_format,
        log_level=args.log_level,
        identity=args.identity,
        tune_gc=True,
    )
    return asyncio.run(run(options))


def _explain(args: argparse.Namespace) -> int:
    configure_logging("warning", "console")
    from kopf_scheduler.service.explain_cli import explain

    return asyncio.run(
        explain(args.pod, str(args.kubeconfig) if args.kubeconfig else None, args.output)
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kopf-scheduler",
        description="A Kubernetes scheduler: kube-scheduler's decisions, explained.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser(
        "simulate",
        help="schedule a scenario of Kubernetes objects in memory (default: the bundled demo)",
    )
    simulate.add_argument(
        "scenario",
        nargs="*",
        type=Path,
        help=(
            "YAML or JSON files of Nodes, Pods, PDBs, PriorityClasses, Namespaces and storage "
            "objects (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, "
            "VolumeAttachments)"
        ),
    )
    simulate.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration file")
    simulate.add_argument("--output", "-o", choices=["table", "json", "yaml"], default="table")
    simulate.add_argument(
        "--seed", type=int, default=0, help="seed for every random choice (default 0)"
    )
    simulate.add_argument(
        "--explain", action="store_true", help="include every attempt's per-node reasons and scores"
    )
    simulate.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from the live cluster's state (read-only) instead of scenario files",
    )
    simulate.add_argument(
        "--add",
        action="append",
        type=Path,
        default=[],
        help="with --from-cluster: pods to add (YAML/JSON); may be repeated",
    )
    simulate.add_argument("--kubeconfig", type=Path, help="with --from-cluster: the cluster")
    simulate.set_defaults(handler=_simulate)

    run = commands.add_parser("run", help="schedule pods in a cluster (the operator)")
    run.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration file")
    run.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig (default: in-cluster, then ~/.kube/config)"
    )
    run.add_argument(
        "--namespace", help="namespace of the leader-election Lease (overrides the config)"
    )
    run.add_argument(
        "--health-host", default="0.0.0.0", help="address of /healthz, /readyz, /metrics"
    )
    run.add_argument(
        "--health-port", type=int, default=10259, help="port of /healthz, /readyz, /metrics"
    )
    run.add_argument("--log-format", choices=["json", "console"], help="default: json in a cluster")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--identity", help="leader-election identity (default: hostname_pid)")
    run.set_defaults(handler=_run)

    explain = commands.add_parser("explain", help="show why a pod was (not) scheduled or preempted")
    explain.add_argument("pod", help="NAMESPACE/NAME")
    explain.add_argument("--kubeconfig", type=Path)
    explain.add_argument("--output", "-o", choices=["text", "json"], default="text")
    explain.set_defaults(handler=_explain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
