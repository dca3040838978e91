"""Command line: ``python -m e2e.localcluster up|down|status|env|build|helm|real-node|...``.

Run from the repository root. The state directory defaults to
``~/.cache/kopf-scheduler/cluster`` and can be moved with ``LOCALCLUSTER_DIR``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

from . import build, realnode
from .cluster import ClusterError, LocalCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.localcluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", help="build if needed, start the cluster, create nodes")
    up.add_argument("--nodes", type=int, default=3, help="number of fake nodes (default 3)")
    up.add_argument(
        "--with-kube-scheduler",
        action="store_true",
        help="also start the upstream kube-scheduler (scheduler name default-scheduler)",
    )
    up.add_argument(
        "--fresh", action="store_true", help="fail instead of reusing a running cluster"
    )
    up.add_argument(
        "--real-node",
        action="store_true",
        help="also start the real node (kubelet + containerd, as root; see README.md)",
    )
    up.add_argument(
        "--image",
        action="append",
        default=[],
        help="with --real-node: a Docker image to import into its containerd (repeatable; "
        "default: kopf-scheduler:<version> when Docker has it)",
    )

    down = commands.add_parser("down", help="stop every process started by `up`, remove state")
    down.add_argument("--keep-logs", action="store_true", help="keep <state>/logs")
    down.add_argument("--timeout", type=float, default=10, help="seconds before SIGKILL")

    commands.add_parser("status", help="print the recorded processes and their health (JSON)")
    commands.add_parser("env", help="print `export KUBECONFIG=...` for eval")
    commands.add_parser("build", help="only build the binaries that are missing")
    commands.add_parser("helm", help="build helm if it is missing and print its path")
    commands.add_parser("promtool", help="build promtool if it is missing and print its path")
    commands.add_parser("prometheus", help="build prometheus if it is missing and print its path")
    commands.add_parser("start-kube-scheduler", help="start upstream kube-scheduler")
    commands.add_parser("stop-kube-scheduler", help="stop upstream kube-scheduler")
    real = commands.add_parser(
        "real-node", help="start, import images into, or stop the real node of a running cluster"
    )
    real.add_argument("action", choices=("up", "down", "status", "import", "build"))
    real.add_argument(
        "--image", action="append", default=[], help="as for `up --real-node` (repeatable)"
    )
    kubectl = commands.add_parser("kubectl", help="run the built kubectl as the admin")
    kubectl.add_argument("args", nargs=argparse.REMAINDER)

    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (ClusterError, build.BuildError) as error:
        print(f"localcluster: error: {error}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "build":
        started = time.monotonic()
        bins = build.ensure_built(sys.stderr)
        print(f"binaries ready in {time.monotonic() - started:.0f}s:", file=sys.stderr)
        for path in bins.all():
            print(path)
        return 0
    if args.command == "promtool":
        print(build.ensure_promtool(sys.stderr))
        return 0
    if args.command == "prometheus":
        print(build.ensure_prometheus(sys.stderr))
        return 0
    if args.command == "helm":
        print(build.ensure_helm(sys.stderr))
        return 0
    if args.command == "real-node" and args.action == "build":
        print(build.ensure_kubelet(sys.stderr))
        return 0
    if args.command == "up":
        cluster = LocalCluster.up(
            args.nodes, with_kube_scheduler=args.with_kube_scheduler, reuse=not args.fresh
        )
        if args.real_node:
            realnode.RealNode(cluster).up(_images(args.image))
        print(f"kubeconfig: {cluster.kubeconfig}")
        print(f"kubectl:    {cluster.binaries.kubectl}")
        print("run:        eval $(python -m e2e.localcluster env)")
        return 0

    cluster = LocalCluster()
    if args.command == "down":
        if not cluster.processes() and not cluster.state_dir.exists():
            print("localcluster: nothing to stop", file=sys.stderr)
            return 0
        cluster.down(timeout=args.timeout, keep_logs=args.keep_logs)
        print(f"localcluster: stopped; removed state in {cluster.state_dir}", file=sys.stderr)
        return 0
    if args.command == "status":
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return 0 if cluster.is_running() else 3
    if args.command == "env":
        if not cluster.is_running():
            raise ClusterError(f"no running cluster in {cluster.state_dir}")
        print(f"export KUBECONFIG={shlex.quote(str(cluster.kubeconfig))}")
        print(f'export PATH={shlex.quote(str(cluster.binaries.kubectl.parent))}:"$PATH"')
        return 0
    if not cluster.is_running():
        raise ClusterError(f"no running cluster in {cluster.state_dir}")
    if args.command == "start-kube-scheduler":
        cluster.start_kube_scheduler()
        return 0
    if args.command == "stop-kube-scheduler":
        cluster.stop_kube_scheduler()
        return 0
    if args.command == "real-node":
        node = realnode.RealNode(cluster)
        if args.action == "up":
            node.up(_images(args.image))
        elif args.action == "import":
            node.import_images(_images(args.image))
        elif args.action == "down":
            node.down()
            print("localcluster: real node stopped and removed", file=sys.stderr)
        else:
            print(json.dumps(node.status(), indent=2))
            return 0 if node.is_running() else 3
        return 0
    if args.command == "kubectl":
        extra = args.args[1:] if args.args[:1] == ["--"] else args.args
        proc = cluster.kubectl(*extra, check=False)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        return proc.returncode
    raise AssertionError(args.command)


def _images(given: list[str]) -> list[str]:
    """The images to import: those given, else the project's image when Docker has it."""
    if given:
        return given
    image = realnode.project_image()
    return [image] if realnode.docker_has(image) else []


if __name__ == "__main__":
    sys.exit(main())
