"""kopf's watches of the low-volume kinds (namespaces, PDBs, PriorityClasses, workloads, storage).

kopf runs standalone (no peering: leader election uses our own Lease), posts no events of its own
and writes nothing to the watched objects; the handlers here only forward each event's raw
object to :class:`kopf_scheduler.informer.handlers.EventHandlers`. Pods and nodes, the busy
kinds, are watched by ``k8s/reflector.py`` instead.
"""
