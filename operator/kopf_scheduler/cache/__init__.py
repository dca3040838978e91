"""The scheduler's view of the cluster: nodes with their pods, assumed pods, and snapshots.

The cache is updated from watch events and from the scheduler's own assumptions (a pod counted on
its chosen node before the binding is confirmed). Each scheduling cycle reads an immutable-by-
convention snapshot taken at its start, refreshed incrementally from the nodes that changed.
"""
