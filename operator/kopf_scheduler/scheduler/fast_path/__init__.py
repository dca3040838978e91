"""A vectorised Filter/Score/selection path that makes the same decisions as the per-node one.

:class:`FastPath` keeps numpy columns mirroring the snapshot (:mod:`.mirror`) and serves the
attempts it can prove equivalent (:mod:`.profile` says which plugins it models); the scheduling
algorithm falls back to the per-node plugin calls for everything else. :mod:`.victims` speeds up
preemption dry runs the same way.
"""

from kopf_scheduler.scheduler.fast_path.engine import FastPath, FilterResult, ScoreResult

__all__ = ["FastPath", "FilterResult", "ScoreResult"]
