"""The scenarios shipped inside the package (``kopf_scheduler/scenarios/<name>.yaml``).

``simulate`` runs the preemption demo when it is given no scenario, so that the first command a
new user types shows a decision without a cluster; ``simulate --example NAME`` and
``simulate --compare-config`` reach the others by name.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

BUNDLED_EXAMPLES = ("preemption-demo", "gangs", "volumes", "workloads")
"""The examples ``simulate --example`` offers."""


def bundled_example(name: str) -> Path:
    """The path of a bundled example scenario."""
    return Path(str(resources.files("kopf_scheduler") / "scenarios" / f"{name}.yaml"))


def bundled_demo() -> Path:
    """The path of the bundled preemption demo scenario."""
    return bundled_example("preemption-demo")
