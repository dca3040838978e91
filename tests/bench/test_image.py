"""The image measurement's reading of ``docker stats``: the used part, in bytes, any unit."""

from __future__ import annotations

import pytest
from bench.image import memory_bytes


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param("87.1MiB / 23.4GiB", int(87.1 * 1024**2), id="mebibytes"),
        pytest.param("1.5GiB / 23.4GiB", int(1.5 * 1024**3), id="gibibytes"),
        pytest.param("512KiB / 1GiB", 512 * 1024, id="kibibytes"),
        pytest.param("900B / 1GiB", 900, id="bytes"),
        pytest.param("12.5MB / 1GB", 12_500_000, id="decimal-megabytes"),
    ],
)
def test_memory_is_the_used_part_in_bytes(usage: str, expected: int) -> None:
    assert memory_bytes(usage) == expected


def test_an_unknown_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown unit"):
        memory_bytes("12 parsecs / 1GiB")
