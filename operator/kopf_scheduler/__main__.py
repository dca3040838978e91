"""``python -m kopf_scheduler`` is the ``kopf-scheduler`` command."""

import sys

from kopf_scheduler.cli import main

sys.exit(main())
