"""Route structlog through stdlib logging so tests print nothing unless pytest captures it, and
run every asynchronous test on the simulation's event loop: simulations need it (it tells them
when no task can run), and for everything else it is the standard selector loop.
"""

from collections.abc import Callable, Mapping

import pytest

from kopf_scheduler.logs import configure_logging
from kopf_scheduler.sim.loop import SimulationLoop

configure_logging("warning", "console")


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], SimulationLoop]]:
    return {"simulation-loop": SimulationLoop}
