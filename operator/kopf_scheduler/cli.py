"""The ``kopf-scheduler`` command line: ``run``, ``simulate``, ``capacity``, ``explain``,
``config`` and ``completion`` (a bash or zsh script generated from this parser).

``simulate`` with no scenario runs the bundled preemption demo, so a newcomer sees the scheduler
decide, preempt and explain without a cluster. ``run`` and ``explain`` talk to a cluster; their
modules (kopf, the API client) are imported only when they are used. ``config validate`` checks a
KubeSchedulerConfiguration file the way ``run`` would, without a cluster; ``config schema`` prints
the file's JSON Schema for editors.

Bad input ends in one line on stderr, never a traceback; the exit codes are
:mod:`kopf_scheduler.exit_codes`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from kopf_scheduler import exit_codes
from kopf_scheduler.cli_output import print_rendered
from kopf_scheduler.completion import add_completion_command
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import LoadedConfig, check_config_file, default_config
from kopf_scheduler.config.writer import config_yaml
from kopf_scheduler.live_cluster import read_live_cluster
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.bundled_scenarios import BUNDLED_EXAMPLES, bundled_example
from kopf_scheduler.sim.report import build_report, render_json, render_table, render_yaml
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from kopf_scheduler.sim.simulate_html import render_simulation_html
from kopf_scheduler.version import VERSION

EXIT_RUNTIME = exit_codes.RUNTIME
EXIT_USAGE = exit_codes.USAGE


def _load_config(path: Path | None) -> LoadedConfig:
    """The configuration at ``path`` (the defaults without one); warnings go to stderr."""
    if path is None:
        return LoadedConfig(default_config())
    loaded = check_config_file(path)
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return loaded


def report_config_error(error: ConfigError) -> None:
    """Every error of a refused file, one ``error:`` line each, on stderr."""
    for each in error.errors:
        print(f"error: {each}", file=sys.stderr)


def simulate_command(args: argparse.Namespace) -> int:
    """``simulate`` (and ``kubectl kopf-scheduler whatif``, which is ``--from-cluster``)."""
    if getattr(args, "compare_config", None):
        from kopf_scheduler.compare_cli import compare_configs

        return compare_configs(args)
    configure_logging("warning", "console")
    try:
        config = _load_config(args.config).config
    except ConfigError as error:
        report_config_error(error)
        return EXIT_USAGE
    chosen = args.config is not None
    added: list[str] = []
    if args.from_cluster:
        if not args.add:
            print("error: --from-cluster needs at least one --add FILE", file=sys.stderr)
            return EXIT_USAGE
        scenario, added = read_live_cluster(args.kubeconfig, args.context, [config], args.add)
    else:
        if args.add:
            print("error: --add goes with --from-cluster", file=sys.stderr)
            return EXIT_USAGE
        if args.example and args.scenario:
            print("error: give scenario files or --example, not both", file=sys.stderr)
            return EXIT_USAGE
        paths = args.scenario or [bundled_example(args.example or "preemption-demo")]
        try:
            scenario = load_scenario(paths)
        except ScenarioError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
        if scenario.configuration is not None and not chosen:
            # The scenario's own configuration, unless --config names one.
            for warning in scenario.configuration.warnings:
                print(f"warning: {warning}", file=sys.stderr)
            config = scenario.configuration.config
    # The page draws each pod's attempts, so it is always made with the explanations.
    explain = args.explain or args.output == "html"
    simulation = Simulation(config, seed=args.seed, explain=explain)
    result = sim_loop.run(simulation.run(scenario))
    report = build_report(result, explain=explain, added=added)
    print_rendered(
        report,
        args.output,
        {
            "html": render_simulation_html,
            "json": render_json,
            "yaml": render_yaml,
            "table": render_table,
        },
    )
    return 0


def _write_config(config_path: Path | None, target: Path) -> int:
    """``run --write-config-to``: the configuration with its defaults, written to ``target``."""
    try:
        config = _load_config(config_path).config
    except ConfigError as error:
        report_config_error(error)
        return EXIT_USAGE
    try:
        target.write_text(config_yaml(config), encoding="utf-8")
    except OSError as error:
        print(f"error: cannot write {target}: {error.strerror or error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote the configuration to {target}", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.write_config_to is not None:
        return _write_config(args.config, args.write_config_to)
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
        tls_cert_file=str(args.tls_cert_file) if args.tls_cert_file else None,
        tls_private_key_file=str(args.tls_private_key_file) if args.tls_private_key_file else None,
        always_allow_paths=tuple(
            path
            for path in map(str.strip, args.authorization_always_allow_paths.split(","))
            if path
        ),
    )
    return asyncio.run(run(options))


def _validate_config(args: argparse.Namespace) -> int:
    try:
        loaded = _load_config(args.file)
    except ConfigError as error:
        report_config_error(error)
        return EXIT_USAGE
    names = ", ".join(profile.scheduler_name for profile in loaded.config.profiles)
    print(f"{args.file}: valid (profiles: {names})")
    return 0


def _print_config_schema(args: argparse.Namespace) -> int:
    from kopf_scheduler.config.schema import config_schema_json

    sys.stdout.write(config_schema_json())
    return 0


def explain_command(args: argparse.Namespace) -> int:
    """``explain`` (and ``kubectl kopf-scheduler explain``)."""
    configure_logging("warning", "console")
    from kopf_scheduler.service.explain_cli import explain

    return asyncio.run(
        explain(
            args.pod,
            str(args.kubeconfig) if args.kubeconfig else None,
            args.output,
            namespace=args.namespace,
            context=args.context,
        )
    )


def _port(text: str) -> int:
    """A TCP port number for argparse (0 asks the system for a free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kopf-scheduler",
        description="A Kubernetes scheduler: kube-scheduler's decisions, explained.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
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
            "YAML or JSON files of Nodes, Pods, PDBs, PriorityClasses, Namespaces, PodGroups, "
            "storage objects (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers, "
            "CSIStorageCapacities, VolumeAttachments) and workloads (Deployments, ReplicaSets, "
            "StatefulSets, Jobs: the pods their controllers create)"
        ),
    )
    simulate.add_argument(
        "--example",
        choices=BUNDLED_EXAMPLES,
        help="run a scenario shipped with kopf-scheduler instead of files",
    )
    simulate.add_argument(
        "--config",
        type=Path,
        help=(
            "a KubeSchedulerConfiguration file (default: the scenario's own configuration "
            "document, if it has one, else the defaults)"
        ),
    )
    simulate.add_argument(
        "--output",
        "-o",
        choices=["table", "json", "yaml", "html"],
        default="table",
        help="html: one self-contained page with a node × plugin matrix per pod",
    )
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
    simulate.add_argument(
        "--context", help="with --from-cluster: the kubeconfig context (default: the current one)"
    )
    simulate.add_argument(
        "--compare-config",
        nargs=2,
        type=Path,
        metavar=("A", "B"),
        help="run under two configurations and report what differs (exit 3 when decisions do)",
    )
    simulate.set_defaults(handler=simulate_command)

    from kopf_scheduler.capacity_cli import add_capacity_command

    add_capacity_command(commands)

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
        "--health-port", type=_port, default=10259, help="port of /healthz, /readyz, /metrics"
    )
    run.add_argument(
        "--tls-cert-file",
        type=Path,
        help="serving certificate (PEM) of the HTTPS port (default: a self-signed one)",
    )
    run.add_argument(
        "--tls-private-key-file", type=Path, help="private key (PEM) of --tls-cert-file"
    )
    run.add_argument(
        "--authorization-always-allow-paths",
        default="/healthz,/readyz,/livez",
        help=(
            "comma-separated paths served without authentication; add /metrics to serve "
            "metrics to anyone, for local use (default: %(default)s)"
        ),
    )
    run.add_argument("--log-format", choices=["json", "console"], help="default: json in a cluster")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--identity", help="leader-election identity (default: hostname_pid)")
    run.add_argument(
        "--write-config-to",
        type=Path,
        metavar="FILE",
        help="write the configuration with every default filled in to FILE and exit",
    )
    run.set_defaults(handler=_run)

    explain = commands.add_parser("explain", help="show why a pod was (not) scheduled or preempted")
    explain.add_argument("pod", help="NAME or NAMESPACE/NAME")
    explain.add_argument(
        "-n", "--namespace", help="the pod's namespace (default: the context's namespace)"
    )
    explain.add_argument("--kubeconfig", type=Path)
    explain.add_argument("--context", help="the kubeconfig context (default: the current one)")
    explain.add_argument("--output", "-o", choices=["text", "json", "yaml"], default="text")
    explain.set_defaults(handler=explain_command)

    config = commands.add_parser("config", help="check a KubeSchedulerConfiguration file")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    validate = config_commands.add_parser(
        "validate",
        help="read FILE as `run --config` would; exit 0 if valid (warnings on stderr), else 2",
    )
    validate.add_argument("file", type=Path, metavar="FILE")
    validate.set_defaults(handler=_validate_config)
    schema = config_commands.add_parser(
        "schema",
        help="print the configuration's JSON Schema, for editors (yaml-language-server $schema)",
    )
    schema.set_defaults(handler=_print_config_schema)

    add_completion_command(commands, parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return exit_codes.run_parsed(build_parser(), argv)


def entry() -> NoReturn:
    """The ``kopf-scheduler`` console command: :func:`main`, then :func:`exit_codes.leave`."""
    exit_codes.leave(main())


if __name__ == "__main__":
    entry()
