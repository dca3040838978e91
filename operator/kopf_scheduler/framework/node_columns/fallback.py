"""The signal that an attempt falls outside what the whole-node-array arithmetic models.

A plugin's batch Filter or Score, or the engine running them, raises :class:`Fallback` when it
meets something it cannot reproduce exactly (an unmodelled argument, an amount too large for
exact arithmetic, a missing plugin state); the scheduler then runs the per-node path, the
plugins' own ``filter`` and ``score``, for the attempt.
"""


class Fallback(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The attempt needs the per-node path."""
