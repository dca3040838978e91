"""The simulation's event loop: ``idle()`` completes once every task that can run has run.

The driver moves virtual time when that future completes, so it must complete neither while a
task still has a step to take (time would jump under a running binding) nor never (a simulation
would spin). A simulation started on another loop stops at once with a message that says how to
start it.
"""

from __future__ import annotations

import asyncio

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.loop import SimulationLoop
from kopf_scheduler.sim.runner import Simulation


async def test_idle_completes_after_every_runnable_step() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, SimulationLoop)
    steps: list[tuple[int, int]] = []
    gate = loop.create_future()

    async def worker(count: int) -> None:
        for step in range(count):
            steps.append((count, step))
            await asyncio.sleep(0)
        await gate

    workers = [asyncio.create_task(worker(count)) for count in (1, 7, 30)]
    await loop.idle()
    assert len(steps) == 1 + 7 + 30
    assert not any(task.done() for task in workers)
    gate.set_result(None)
    await asyncio.gather(*workers)


async def test_idle_completes_for_every_waiter_at_once() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, SimulationLoop)
    first, second = loop.idle(), loop.idle()
    await asyncio.wait([first, second])
    assert first.done() and second.done()


def test_a_simulation_on_another_loop_is_refused_with_a_hint() -> None:
    simulation = Simulation(default_config())
    with pytest.raises(RuntimeError, match=r"sim\.loop\.run\(\)"):
        asyncio.run(simulation.run_until_quiet())


def test_run_returns_what_the_coroutine_returns() -> None:
    async def answer() -> str:
        return type(asyncio.get_running_loop()).__name__

    assert sim_loop.run(answer()) == "SimulationLoop"
