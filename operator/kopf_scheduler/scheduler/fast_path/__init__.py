"""A vectorised Filter/Score/selection path that makes the same decisions as the per-node one.

:class:`FastPath` keeps numpy columns mirroring the snapshot
(:mod:`kopf_scheduler.framework.node_columns`) and runs the plugins' batch Filter and Score over
them for the attempts where every plugin that runs has one; the scheduling algorithm falls back
to the per-node plugin calls for everything else. :mod:`.victim_search` speeds up preemption
dry runs the same way.
"""

from kopf_scheduler.scheduler.fast_path.engine import FastPath, FilterResult, ScoreResult

__all__ = ["FastPath", "FilterResult", "ScoreResult"]
