"""Many ``rng.randrange(n)`` draws at once, with exactly the same results and RNG consumption.

Host selection draws ``randrange(ties)`` for every node that ties the best total; with thousands
of equally good nodes that is hundreds of calls per pod. CPython's ``Random.randrange(n)`` for
``0 < n <= 2**32`` takes 32-bit Mersenne Twister outputs one at a time, keeps the top
``n.bit_length()`` bits of each, and stops at the first value below ``n``. ``getrandbits(32 * m)``
returns the next ``m`` outputs packed little-endian, so the same words can be fetched in bulk.
Fetching as many words as there are draws left never takes a word the one-by-one calls would not
have taken (every draw uses at least one), so the generator ends in the same state.

The bulk method is used only for a plain ``random.Random`` and only when a self-check at import
shows it reproduces ``randrange`` on this interpreter; otherwise draws go through ``randrange``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence

import numpy as np

_WORD_BITS = 32
_MAX_BULK_N = 2**32 - 1
_BULK_THRESHOLD = 64
"""Below this many draws, plain ``randrange`` calls are cheaper than packing words."""


def _bulk_draws(rng: random.Random, bounds: Sequence[int]) -> list[int]:
    results: list[int] = []
    append = results.append
    total = len(bounds)
    done = 0
    if not total:
        return results
    bound = bounds[0]
    shift = _WORD_BITS - bound.bit_length()
    while done < total:
        # One word per draw still to make: never more than the draws will consume.
        count = total - done
        packed = rng.getrandbits(_WORD_BITS * count).to_bytes(4 * count, "little")
        for word in np.frombuffer(packed, dtype="<u4").tolist():
            value = word >> shift
            if value < bound:
                append(value)
                done += 1
                if done == total:
                    break
                bound = bounds[done]
                shift = _WORD_BITS - bound.bit_length()
    return results


def _self_check() -> bool:
    if sys.byteorder != "little":
        return False
    sizes = [1, 2, 3, 5, 7, 64, 65, 100, 127, 128, 129, 1000, 4999, 5000, 2**31 + 1, 2**32 - 1]
    sizes += list(range(2, 300))
    for seed in (0, 1, 7, 2024):
        reference = random.Random(seed)
        bulk = random.Random(seed)
        expected = [reference.randrange(n) for n in sizes]
        if _bulk_draws(bulk, sizes) != expected or bulk.getstate() != reference.getstate():
            return False
    return True


BULK_AVAILABLE = _self_check()


def randrange_many(rng: random.Random, bounds: Sequence[int]) -> list[int]:
    """``[rng.randrange(n) for n in bounds]`` (all ``n`` positive), consuming ``rng`` alike."""
    if (
        len(bounds) >= _BULK_THRESHOLD
        and BULK_AVAILABLE
        and type(rng) is random.Random
        and max(bounds) <= _MAX_BULK_N
    ):
        return _bulk_draws(rng, bounds)
    return [rng.randrange(n) for n in bounds]
