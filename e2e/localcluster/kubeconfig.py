"""Kubeconfig files that reach a cluster as one user with a bearer token.

The local control plane writes one for its admin and one for the scheduler, the benchmarks one
for each scheduler they compare, and the e2e suite one for a ServiceAccount; they differ only in
the cluster entry, the user and the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def write_token_kubeconfig(
    path: Path, cluster: Mapping[str, Any], user: str, token: str, name: str
) -> Path:
    """Write a kubeconfig readable by its owner only: ``user`` with ``token`` on ``cluster``.

    ``cluster`` is the kubeconfig's cluster entry (``server`` and the CA); ``name`` names the
    cluster and the context, which is the current one.
    """
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": dict(cluster)}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
