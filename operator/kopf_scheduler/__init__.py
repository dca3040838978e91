"""kopf-scheduler: a Kubernetes scheduler that makes kube-scheduler's decisions and explains them.

The package is split so that one scheduling path serves every caller: the core (``model``,
``cache``, ``framework``, ``plugins``, ``preemption``, ``queue``, ``scheduler``) is pure Python with
no Kubernetes client inside; the operator wiring and the in-memory simulator implement the
Protocols in ``ports`` around it.
"""

from kopf_scheduler.version import VERSION

__version__ = VERSION
