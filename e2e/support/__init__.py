"""Building blocks of the end-to-end suite: a kubectl wrapper, pod watches, object builders,
the scheduler processes (or the in-cluster Deployment) under test, and per-test isolation.

Everything asserts through what ``kubectl`` shows, because that is what a cluster admin sees.
"""

SCHEDULER_NAME = "kopf-scheduler"
"""``spec.schedulerName`` the scheduler under test serves."""

SYSTEM_NAMESPACE = "kopf-scheduler"
"""Namespace of the ServiceAccount, the leader-election Role and the Lease (manifests/base)."""

LEASE_NAME = "kopf-scheduler"
"""Name of the leader-election Lease (``leaderElection.resourceName``)."""
