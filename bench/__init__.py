"""Benchmarks of kopf-scheduler beside the upstream kube-scheduler.

The six scenarios of ``/work/shared/docs/performance.md`` (scheduler_perf shapes) run two ways:
in-process on the in-memory cluster (the algorithm's own speed, :mod:`bench.inprocess`) and end
to end on the local control plane with kwok nodes, ours and upstream one after the other on
identical cluster states (:mod:`bench.e2e`). ``python -m bench`` runs a profile and records the
results (:mod:`bench.report`), and draws the end-to-end ratios as a chart (:mod:`bench.chart`).
"""
