"""The live cluster as a scenario, for the commands that only look at it.

``simulate --from-cluster``, ``simulate --compare-config --from-cluster`` and
``capacity --from-cluster`` all start the same way: check the kubeconfig, list what the chosen
plugins read (LIST requests only, see ``service/whatif.py``), close the connection. The ways
this goes wrong are the same too, and each must end in one line with the documented exit code:
a kubeconfig, context or added file that is wrong is bad input (2); an API server that refuses
or cannot be reached is a failure at run time (1). Kubernetes' client and the operator's
modules are imported only when a command asks for the cluster, so that the offline commands
start without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from pathlib import Path

from kopf_scheduler import exit_codes
from kopf_scheduler.config.kubeconfig import check_kubeconfig
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.sim.scenario import Scenario, ScenarioError


def read_live_cluster(
    kubeconfig: Path | None,
    context: str | None,
    configs: Sequence[SchedulerConfig],
    added: Sequence[str] = (),
) -> tuple[Scenario, list[str]]:
    """The cluster's current state with the ``added`` files' objects, and the added pods' keys.

    A kind only some plugin reads (PodGroups, the DRA objects) is listed when one of
    ``configs`` enables that plugin. Raises
    ``exit_codes.CommandError`` with the message and the exit code when it cannot be done.
    """
    from kopf_scheduler.k8s.errors import ClientConfigError
    from kopf_scheduler.ports import ApiError
    from kopf_scheduler.service.startup import describe
    from kopf_scheduler.service.whatif import named_plugins

    plugins = set().union(*(named_plugins(config) for config in configs))
    path = str(kubeconfig) if kubeconfig else None
    try:
        check_kubeconfig(path, context_name=context)
        return asyncio.run(_list(path, context, plugins, added))
    except (ScenarioError, ValueError, ClientConfigError) as error:
        raise exit_codes.CommandError(exit_codes.USAGE, str(error)) from None
    except ApiError as error:
        raise exit_codes.CommandError(exit_codes.RUNTIME, describe(error)) from None


async def _list(
    kubeconfig: str | None, context: str | None, plugins: Collection[str], added: Sequence[str]
) -> tuple[Scenario, list[str]]:
    from kopf_scheduler.k8s.client import make_api
    from kopf_scheduler.service.whatif import cluster_scenario

    api = await make_api(kubeconfig, context=context)
    try:
        return await cluster_scenario(api, list(added), set(plugins))
    finally:
        await api.close()
