"""The configuration ours runs with in the differential suite: what the comparison assumes of it."""

from __future__ import annotations

import yaml
from differential.runner import OUR_CONFIG, SCHEDULER_NAME

from kopf_scheduler.config.loader import check_config


def test_ours_runs_with_upstreams_back_off_and_without_nomination_hygiene() -> None:
    loaded = check_config(yaml.safe_load(OUR_CONFIG))
    config = loaded.config
    assert not loaded.warnings
    assert [profile.scheduler_name for profile in config.profiles] == [SCHEDULER_NAME]
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    # kube-scheduler v1.34 leaves a bound pod's nominatedNodeName in place; hygiene clears it.
    assert config.extensions.nomination_hygiene is False
