"""The fault-injection suite: the scheduler under the faults of real clusters (``-m faults``)."""
