"""How the simulator's commands (``simulate``, ``capacity``, ``--compare-config``) print their
answer in the format ``--output`` names.

Each format has a renderer that returns the whole text. JSON comes without a final newline, as
``json.dumps`` makes it; the tables, YAML and HTML end with theirs, so nothing is added to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def print_rendered(value: T, output: str, renderers: Mapping[str, Callable[[T], str]]) -> None:
    """Print ``value`` with the renderer of format ``output``, the ``"table"`` one for a format
    without a renderer of its own."""
    text = renderers.get(output, renderers["table"])(value)
    if output == "json":
        print(text)
    else:
        print(text, end="")
