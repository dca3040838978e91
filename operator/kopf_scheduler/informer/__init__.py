"""Watch events in, scheduler state out: the stores (listers) and the event handlers.

The operator feeds this from kopf watch events, the simulator from its in-memory cluster; both
hand over raw dicts and get the same routing into the cache and the queue that upstream's
``eventhandlers.go`` performs.
"""
