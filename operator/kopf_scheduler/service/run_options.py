"""What ``kopf-scheduler run`` is told on its command line, beside the configuration file.

The command reads the files these name before anything starts (``service/runner.py``); the
composition root builds the process's identity, Lease and secure port from the rest
(``service/operator_assembly.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kopf_scheduler.service.health import PROBE_PATHS


@dataclass
class RunOptions:
    config_path: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None
    health_host: str = "0.0.0.0"
    health_port: int = 10259
    log_format: str | None = None
    log_level: str = "info"
    identity: str | None = None
    tune_gc: bool = False
    """Apply :mod:`kopf_scheduler.gc_tuning` (the ``run`` command does; tests leave it off)."""
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    """The serving certificate and key; a self-signed pair is made when neither is given."""
    always_allow_paths: tuple[str, ...] = PROBE_PATHS
    """Paths served without authentication; add ``/metrics`` to serve it to anyone."""
