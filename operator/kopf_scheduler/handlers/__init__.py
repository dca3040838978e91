"""kopf wiring: watch pods, nodes, PDBs, PriorityClasses and namespaces, hand raw dicts inward.

kopf runs standalone (no peering: leader election uses our own Lease), posts no events of its own
and writes nothing to the watched objects; the handlers here only forward each event's raw
object to :class:`kopf_scheduler.informer.handlers.EventHandlers`.
"""
