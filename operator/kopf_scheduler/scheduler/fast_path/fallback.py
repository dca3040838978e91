"""The signal that an attempt falls outside what the vectorised path models.

Any part of the fast path raises :class:`Fallback` when it meets something it cannot reproduce
exactly (an unmodelled plugin or argument, an amount too large for exact arithmetic, a missing
plugin state); the caller then runs the per-node path for the attempt.
"""


class Fallback(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The attempt needs the per-node path."""
