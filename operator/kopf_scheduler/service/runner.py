"""``kopf-scheduler run``: the scheduler as a process in a cluster, hosted by kopf.

Everything the process reads from files is checked before anything starts: the configuration,
the kubeconfig and the serving certificate (a bad file stops here with one line naming the
field, exit 2). Then the process is built whole (``service/operator_assembly.py``) and run
(``service/process.py``): the secure port first (a taken port stops here, exit 1), then kopf,
until a signal or a component that ended on its own (exit 1).
"""

from __future__ import annotations

import asyncio
import signal
import sys

import structlog

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.config.loader import LoadedConfig, check_config_file, default_config
from kopf_scheduler.gc_tuning import tune_for_large_heap
from kopf_scheduler.k8s.client import make_api
from kopf_scheduler.k8s.errors import ClientConfigError
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.service import kopf_shutdown
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.process import EXIT_RUNTIME
from kopf_scheduler.service.run_options import RunOptions
from kopf_scheduler.service.serving_cert import ServingCertError, server_ssl_context
from kopf_scheduler.service.startup import StartupError

__all__ = ["RunOptions", "run"]

logger = structlog.get_logger("kopf_scheduler.service")

EXIT_CONFIG = 2


async def run(options: RunOptions) -> int:
    configure_logging(options.log_level, options.log_format)
    kopf_shutdown.install(asyncio.get_running_loop())
    if options.tune_gc:
        tune_for_large_heap()
    try:
        loaded = (
            check_config_file(options.config_path)
            if options.config_path
            else LoadedConfig(default_config())
        )
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    config = loaded.config
    for warning in loaded.warnings:
        logger.warning("config_warning", field=warning.field, reason=warning.reason)
    try:
        ssl_context = server_ssl_context(
            options.tls_cert_file, options.tls_private_key_file, bind_address=options.health_host
        )
    except ServingCertError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    kubeconfig = options.kubeconfig or config.client_connection.kubeconfig or None
    metrics = PrometheusMetrics()
    try:
        check_kubeconfig(kubeconfig)
        api = await make_api(
            kubeconfig,
            config.client_connection.qps,
            config.client_connection.burst,
            metrics=metrics,
        )
    except (ConfigError, ClientConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    operator = build_operator(config, options, api, metrics=metrics, ssl_context=ssl_context)
    # Until kopf installs its own handlers, a signal stops the operator before kopf starts.
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, operator.stop.set)
    try:
        return await operator.run()
    except StartupError as error:
        await api.close()
        print(f"error: {error}", file=sys.stderr)
        return EXIT_RUNTIME
