import json

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from kopf_scheduler.service.health import HealthServer


async def test_endpoints() -> None:
    registry = CollectorRegistry()
    Counter("scheduler_schedule_attempts_total", "attempts", ["result"], registry=registry).labels(
        "scheduled"
    ).inc(3)
    synced = {"value": False}
    server = HealthServer(
        host="127.0.0.1",
        port=0,
        registry=registry,
        is_synced=lambda: synced["value"],
        is_leader=lambda: False,
    )
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/healthz") as response:
                assert response.status == 200
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                assert json.loads(await response.text()) == {"synced": False, "leader": False}
            synced["value"] = True
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200
            async with session.get(f"{base}/metrics") as response:
                text = await response.text()
                assert 'scheduler_schedule_attempts_total{result="scheduled"} 3.0' in text
    finally:
        await server.stop()
