"""Numpy columns over a snapshot's nodes, for plugins that Filter and Score all nodes at once.

The batch Filter and Score methods of :mod:`kopf_scheduler.framework.interfaces` read these
instead of walking NodeInfo objects: :mod:`.mirror` keeps one column per node attribute in step
with the snapshot, :mod:`.pod_counts` and :mod:`.term_census` index the pods on the nodes, and
:class:`.columns.NodeColumns` bundles them with the masks several plugins share. They sit below
the plugins so that a plugin carries its own whole-node arithmetic, and the scheduler only asks
which plugins have it.
"""
