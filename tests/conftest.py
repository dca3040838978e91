"""Route structlog through stdlib logging so tests print nothing unless pytest captures it."""

from kopf_scheduler.logs import configure_logging

configure_logging("warning", "console")
