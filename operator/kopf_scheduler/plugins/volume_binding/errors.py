"""The one error type of volume binding: a condition that is neither a fit nor a misfit.

Upstream returns a Go error in these cases (a claim the cache lost, a class that vanished, an
in-tree volume that cannot be translated, a failed API write, a binding the PV controller
undid); the plugin turns it into an Error status whose message is the error's text. The texts
are what users read in pod conditions and events, so they are kept exactly as upstream words
them.
"""

from __future__ import annotations


class VolumeBindingError(Exception):
    """Carries the user-visible message as its only argument."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
