"""Protocol checks answered once per class, for the hot paths of a scheduling cycle.

Python 3.11 lists a runtime-checkable Protocol's members anew on every ``isinstance`` call. A
failed attempt asks such questions of every cycle-state value it clones and every batch Filter
it runs, once per node in preemption's dry runs, and in profiles of failing attempts these
checks took a tenth of the time. Whether a class satisfies a Protocol of methods does not change,
so it is asked once per class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


def _subclass_satisfies(cls: type, protocol: type) -> bool:
    return issubclass(cls, protocol)


class_satisfies: Callable[[type, type], bool] = functools.cache(_subclass_satisfies)
"""Whether instances of a class satisfy a runtime-checkable Protocol of methods only (one with
data members cannot be asked of a class)."""
