"""``python -m kopf_scheduler`` is the ``kopf-scheduler`` command."""

from kopf_scheduler.cli import entry

entry()
