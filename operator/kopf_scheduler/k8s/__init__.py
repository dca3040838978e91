"""The kubernetes-asyncio adapter: the ``ports`` Protocols implemented against a real API server.

Nothing outside this package (and the operator wiring) sees kubernetes-asyncio or aiohttp: requests
carry raw JSON dicts, and failures surface as ``ports.ApiError`` and its subclasses.

Typical wiring::

    api = await make_api(config.client_connection.kubeconfig or None,
                         config.client_connection.qps, config.client_connection.burst)
    binder, status_writer, deleter = ApiBinder(api), ApiPodStatusWriter(api), ApiPodDeleter(api)
    events = ApiEventRecorder(api); await events.start()
    elector = LeaderElector(api.with_limiter(limiter_for(qps, burst)), "kube-system",
                            "my-scheduler", f"{socket.gethostname()}_{os.getpid()}", ...)
"""

from typing import TYPE_CHECKING

from kopf_scheduler.k8s.binder import ApiBinder
from kopf_scheduler.k8s.client import Api, ListResult, load_configuration, make_api
from kopf_scheduler.k8s.deleter import ApiPodDeleter
from kopf_scheduler.k8s.errors import ClientConfigError, TransportError
from kopf_scheduler.k8s.event_recorder import ApiEventRecorder
from kopf_scheduler.k8s.lease import LeaderElectionRecord, LeaderElector
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.pod_status_writer import ApiPodStatusWriter
from kopf_scheduler.k8s.ratelimit import RateLimiter, TokenBucket, Unlimited, limiter_for
from kopf_scheduler.k8s.real_clocks import MonotonicClock, WallClock
from kopf_scheduler.k8s.retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy

__all__ = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "Api",
    "ApiBinder",
    "ApiEventRecorder",
    "ApiPodDeleter",
    "ApiPodStatusWriter",
    "ClientConfigError",
    "LeaderElectionRecord",
    "LeaderElector",
    "ListResult",
    "MonotonicClock",
    "PrometheusMetrics",
    "RateLimiter",
    "RetryPolicy",
    "TokenBucket",
    "TransportError",
    "Unlimited",
    "WallClock",
    "limiter_for",
    "load_configuration",
    "make_api",
]

if TYPE_CHECKING:
    from kopf_scheduler import ports

    def _implements_the_ports(
        api: Api,
    ) -> tuple[ports.Binder, ports.PodStatusWriter, ports.PodDeleter, ports.EventRecorder]:
        # Never called: mypy checks here that the adapters satisfy the Protocols.
        return ApiBinder(api), ApiPodStatusWriter(api), ApiPodDeleter(api), ApiEventRecorder(api)

    def _implements_metrics() -> ports.Metrics:
        return PrometheusMetrics()
