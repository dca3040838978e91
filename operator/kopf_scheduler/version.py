"""The version of kopf-scheduler, as the installed package's metadata states it.

``pyproject.toml`` is the one place the version is written. Building or installing the package
copies it into the distribution's metadata, and everything that shows a version reads it from
there: ``kopf-scheduler --version``, the API client's User-Agent, and the image build, which
checks its OCI version label against it.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "kopf-scheduler"
UNKNOWN = "0+unknown"
"""What a source tree that was never installed reports: it has no metadata to read."""


def installed_version(distribution: str = DISTRIBUTION) -> str:
    """The version recorded in ``distribution``'s metadata, or :data:`UNKNOWN`."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return UNKNOWN


VERSION = installed_version()
