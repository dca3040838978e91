"""The scheduling framework: statuses, cycle state, extension points, and the runtime running them.

Plugins implement the extension-point Protocols in :mod:`.interfaces`; :class:`.runtime.Framework`
runs them for one profile in configured order, with upstream's rules for stopping, skipping,
normalising and weighting.
"""
