"""What one bound pod costs the queue while pods too large for any node wait in it.

Every pod the scheduler sees bound is an AssignedPodAdd event, offered to the pods waiting in
unschedulablePods. Pods too large for any node (scheduler_perf's churn of 9-CPU pods on 4-CPU
nodes in Unschedulable/5kNodes/20kInit/10kPods) were rejected by NodeResourcesFit, which never
registered that event, so none of them moves; what is measured is how long the queue takes to
find that out, per event. The real scheduler runs on the in-memory cluster: the large pods are
tried and rejected first, then the events are offered one after the other, timed by the wall
clock.

    PYTHONPATH=operator:. python -m bench.queue_moves [--waiting 1000] [--events 2000]

Run from a checkout of another revision (with this file copied in) to compare the two.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench import shapes
from bench.config import SCHEDULER_NAME, scheduler_config
from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.logs import configure_logging
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.sim.runner import Simulation

NODES = 10
NAMESPACE = "default"


async def offer_events(waiting: int, events: int) -> dict[str, float]:
    """Microseconds per AssignedPodAdd event with ``waiting`` large pods rejected."""
    sim = Simulation(parse_config(scheduler_config()), utilisation=False)
    scheduler = sim.start()
    nodes = [shapes.node(index) for index in range(NODES)]
    for node in nodes:
        sim.cluster.create(node)
    sim.cluster.create(shapes.priority_class())
    for index in range(waiting):
        sim.cluster.create(
            shapes.pod("large", f"large-{index}", NAMESPACE, SCHEDULER_NAME, "measure")
        )
    while scheduler.schedule_one():
        pass
    queue = scheduler.queue
    rejected = queue.pending_counts()["unschedulable"]
    names = [node["metadata"]["name"] for node in nodes]
    bound = [
        Pod(
            shapes.pod("default", f"bound-{i}", NAMESPACE, SCHEDULER_NAME, "init", names[i % NODES])
        )
        for i in range(events)
    ]
    started = time.perf_counter()
    for pod in bound:
        queue.assigned_pod_added(pod)
    seconds = time.perf_counter() - started
    return {
        "waiting": float(rejected),
        "still_waiting": float(queue.pending_counts()["unschedulable"]),
        "microseconds_per_event": round(seconds / events * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiting", type=int, default=1000, help="large pods rejected first")
    parser.add_argument("--events", type=int, default=2000, help="AssignedPodAdd events offered")
    args = parser.parse_args()
    configure_logging("warning", "console")
    figures = asyncio.run(offer_events(args.waiting, args.events))
    print(
        f"{figures['waiting']:.0f} pods waiting ({figures['still_waiting']:.0f} after): "
        f"{figures['microseconds_per_event']} µs per AssignedPodAdd event"
    )


if __name__ == "__main__":
    main()
