"""A lab that plays nothing, for the bookkeeping around runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from differential.record import OURS, RunRecord
from differential.runner import RunnerError
from differential.scenario import Scenario

from tests.builders import make_pod


class FakeLab:
    """Plays nothing: each run binds p01 to the node the script gives for that side and run."""

    def __init__(
        self, upstream_nodes: list[str], our_nodes: list[str], fail: str | None = None
    ) -> None:
        self.upstream_nodes = list(upstream_nodes)
        self.our_nodes = list(our_nodes)
        self.fail = fail
        self.runs: list[tuple[str, int]] = []
        self.staged = 0

    @contextlib.contextmanager
    def stage(self, scenario: Scenario) -> Iterator[None]:
        self.staged += 1
        yield

    def run(self, scenario: Scenario, side: str, attempt: int) -> RunRecord:
        self.runs.append((side, attempt))
        if self.fail == side:
            raise RunnerError("timed out after 60s waiting for kwok")
        node = (self.our_nodes if side == OURS else self.upstream_nodes)[attempt - 1]
        pod = make_pod("p01-web", f"ns-{side}-{attempt}").node(node).obj()
        return RunRecord(
            scenario=scenario.name,
            side=side,
            scheduler_name="s",
            namespace=f"ns-{side}-{attempt}",
            settled=side != OURS,
            seconds=1.0,
            pods=[pod],
        )
