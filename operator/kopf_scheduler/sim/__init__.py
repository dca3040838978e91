"""The in-memory cluster: the same scheduler, driven against simulated nodes, pods and volumes.

It serves the ``simulate`` command (policy trials, what-if questions, the demo), end-to-end tests
of the scheduling path without an API server, and the in-process benchmarks. Time is virtual:
grace periods and backoffs pass instantly, and the same input and seed give the same output. It
runs on an event loop of its own (``loop.py``) that says when no task can run.
"""
