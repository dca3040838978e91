"""The ``kubectl-kopf_scheduler`` executable: ``explain``, ``pending``, ``whatif``, ``capacity``,
``version``.

Every command takes kubectl's flags where kubectl users put them, after the command:
``-n/--namespace`` (default: the namespace of the kubeconfig's context, as kubectl), ``--context``,
``--kubeconfig`` and ``-o``. ``explain``, ``whatif`` and ``capacity`` are ``kopf-scheduler
explain``, ``kopf-scheduler simulate --from-cluster --add`` and ``kopf-scheduler capacity
--from-cluster``; ``pending`` is here alone. The exit codes are
:mod:`kopf_scheduler.exit_codes`'s. ``kubectl_complete-kopf_scheduler`` answers kubectl's own
completion of plugin commands (kubectl 1.26 and later) from the same parser.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import yaml

from kopf_scheduler import exit_codes
from kopf_scheduler.capacity_cli import add_capacity_options
from kopf_scheduler.completion import add_completion_command, candidates, command_tree
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.kubectl.pending import pending_pods, render_table
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.version import VERSION

PROGRAM = "kubectl-kopf_scheduler"
DEFAULT_SCHEDULER_NAME = "kopf-scheduler"
NO_FILE_COMPLETION = ":4"
FILE_COMPLETION = ":0"
"""The directives that end a kubectl plugin completion answer (cobra's ShellCompDirective)."""


def _kubectl_flags(parser: argparse.ArgumentParser, *, namespaced: bool = True) -> None:
    if namespaced:
        parser.add_argument(
            "-n", "--namespace", help="the namespace (default: the kubeconfig context's)"
        )
    parser.add_argument("--context", help="the kubeconfig context (default: the current one)")
    parser.add_argument("--kubeconfig", type=Path, help="the kubeconfig (default: $KUBECONFIG)")


def _kubeconfig(args: argparse.Namespace) -> str | None:
    return str(args.kubeconfig) if args.kubeconfig else None


def _explain(args: argparse.Namespace) -> int:
    from kopf_scheduler.cli import explain_command

    return explain_command(args)


def _whatif(args: argparse.Namespace) -> int:
    from kopf_scheduler.cli import simulate_command

    args.from_cluster = True
    args.scenario = []
    return simulate_command(args)


def _capacity(args: argparse.Namespace) -> int:
    from kopf_scheduler.capacity_cli import capacity_command

    args.from_cluster = True
    args.scenario = []
    return capacity_command(args)


def _version(args: argparse.Namespace) -> int:
    if args.output == "json":
        print(json.dumps({"kopfScheduler": VERSION}))
    elif args.output == "yaml":
        print(yaml.safe_dump({"kopfScheduler": VERSION}), end="")
    else:
        print(f"kopf-scheduler {VERSION}")
    return 0


def _pending(args: argparse.Namespace) -> int:
    configure_logging("warning", "console")
    try:
        namespace = check_kubeconfig(_kubeconfig(args), context_name=args.context)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_codes.USAGE
    if args.namespace:
        namespace = args.namespace
    return asyncio.run(_list_pending(args, None if args.all_namespaces else namespace))


async def _list_pending(args: argparse.Namespace, namespace: str | None) -> int:
    from kopf_scheduler.k8s.client import make_api
    from kopf_scheduler.k8s.errors import ClientConfigError
    from kopf_scheduler.ports import ApiError
    from kopf_scheduler.service.startup import describe

    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    try:
        api = await make_api(_kubeconfig(args), context=args.context)
    except ClientConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_codes.USAGE
    try:
        listed = await api.list(path, {"fieldSelector": "spec.nodeName="})
    except ApiError as error:
        print(f"error: {describe(error)}", file=sys.stderr)
        return exit_codes.RUNTIME
    finally:
        await api.close()
    pods = pending_pods(listed.items, args.scheduler_name or [DEFAULT_SCHEDULER_NAME], time.time())
    if args.output == "json":
        print(json.dumps({"items": [pod.as_dict() for pod in pods]}, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump({"items": [pod.as_dict() for pod in pods]}, sort_keys=False), end="")
    elif not pods:
        where = "any namespace" if namespace is None else f"namespace {namespace}"
        print(f"No pending pods in {where}.", file=sys.stderr)
    else:
        print(render_table(pods, all_namespaces=namespace is None), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="kopf-scheduler's commands for kubectl: kubectl kopf-scheduler COMMAND",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    explain = commands.add_parser("explain", help="why a pod was (not) scheduled or preempted")
    explain.add_argument("pod", help="NAME (in --namespace) or NAMESPACE/NAME")
    _kubectl_flags(explain)
    explain.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text")
    explain.set_defaults(handler=_explain)

    pending = commands.add_parser(
        "pending", help="this scheduler's pending pods, how long they waited and the top reason"
    )
    _kubectl_flags(pending)
    pending.add_argument(
        "-A", "--all-namespaces", action="store_true", help="pending pods of every namespace"
    )
    pending.add_argument(
        "--scheduler-name",
        action="append",
        help=f"the profile's schedulerName; may be repeated (default: {DEFAULT_SCHEDULER_NAME})",
    )
    pending.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table")
    pending.set_defaults(handler=_pending)

    whatif = commands.add_parser(
        "whatif",
        help="where would these pods go, and whom would they preempt (read-only, in memory)",
    )
    whatif.add_argument("add", nargs="+", type=Path, metavar="FILE", help="pods to add (YAML/JSON)")
    _kubectl_flags(whatif, namespaced=False)
    whatif.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration file")
    whatif.add_argument("--seed", type=int, default=0, help="seed for every random choice")
    whatif.add_argument(
        "--explain", action="store_true", help="include every node's reasons and scores"
    )
    whatif.add_argument(
        "-o", "--output", choices=["table", "json", "yaml", "html"], default="table"
    )
    whatif.set_defaults(handler=_whatif)

    capacity = commands.add_parser(
        "capacity",
        help="how many more copies of a pod fit (--podspec), or which nodes could go (--drain)",
    )
    add_capacity_options(capacity)
    capacity.set_defaults(handler=_capacity)

    version = commands.add_parser("version", help="the version of kopf-scheduler")
    version.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text")
    version.set_defaults(handler=_version)

    add_completion_command(commands, parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return exit_codes.run_parsed(build_parser(), argv)


def entry() -> NoReturn:
    """The ``kubectl-kopf_scheduler`` console command: :func:`main`, then
    :func:`exit_codes.leave`."""
    exit_codes.leave(main())


def _files(prefix: str) -> list[str]:
    """Nothing: kubectl's shell completes files itself when told to (:data:`FILE_COMPLETION`)."""
    del prefix
    return []


def complete(argv: Sequence[str] | None = None) -> int:
    """``kubectl_complete-kopf_scheduler WORD... CURRENT``: the candidates, one a line, then the
    directive kubectl expects (files from the shell where a path is due)."""
    words = list(sys.argv[1:] if argv is None else argv)
    tree = command_tree(build_parser())
    found = candidates(tree, words, _files)
    wants_files = candidates(tree, words, lambda prefix: [os.curdir]) != found
    print("\n".join([*found, FILE_COMPLETION if wants_files else NO_FILE_COMPLETION]))
    return 0
