"""The campaign's report in two pages: ``docs/fidelity.md`` says where fidelity stands (what is
compared, the figures, the chart, one line per scenario that differs), and the details page
beside it (``docs/results/fidelity-campaign.md``) holds every difference with its values and its
scenario, for whoever follows a line of the first."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .campaign import ScenarioResult
from .chart import IMAGE
from .compare import AspectResult, Verdict
from .normalise import ASPECTS
from .scenario import dump

INTRO = """\
# Fidelity against kube-scheduler v1.34.10

kopf-scheduler promises the decisions kube-scheduler v1.34.10 makes. The differential suite
(`differential/`) holds it to that: it draws a scenario from a seed (nodes with sizes, zones,
labels, taints and pod limits; running pods with priorities, grace periods, start times and
PDBs; pending pods that arrive in waves with requests, priorities, node affinity, inter-pod
(anti-)affinity, topology spread, tolerations, host ports and volumes), plays it on the local
control plane once with kube-scheduler v1.34.10 (`default-scheduler`, default configuration)
and once with kopf-scheduler (same back-off; its nomination hygiene off, since it clears a
bound pod's `nominatedNodeName` on purpose), and compares what `kubectl` shows afterwards:

| aspect | what is compared |
|---|---|
| placements | the final node of every pod (or pending, or deleted) |
| victims | the pods that were preempted |
| nominations | every `nominatedNodeName` a pod showed, in order |
| conditions | the final `PodScheduled` condition, message included |
| events | each pod's distinct `FailedScheduling`, `Preempted`, `Scheduled` Events, repeats marked |
| disruption_targets | the `DisruptionTarget` condition of each victim |
| claims | the volume each claim was bound to |
| allocations | the node, devices and users of each ResourceClaim |

Every run starts its waves 0.2 s past a whole second of the wall clock: the API server keeps
deletion and start times to the second and kwok removes a terminating pod on the second, so the
point within a second where a run began would otherwise decide races that are not about
scheduling (whether a victim is still there, which of two victims started first). A scenario
whose first wave is a backlog (pods there before the scheduler starts) is decided as soon as the
scheduler starts, so there each scheduler is started ahead of that point by its own start-up
time (measured on its previous run: about 0.3 s for kube-scheduler, 1.5 to 2.5 s for ours) and
the waves follow its first decision on the backlog. Timing the waves from each scheduler's
readiness instead gave ours' backlog victims a second less before the next wave, since
kube-scheduler reports ready a few hundred milliseconds after its first decisions.

Names, UIDs, the namespace and the scheduler's name are normalised away. Where ours differs,
both run the scenario again (upstream up to five times, ours twice), and each pod that differs
is judged on its own: *upstream-nondeterministic* when upstream's runs disagree on it
(kube-scheduler picks at random among equally good nodes, and timing decides some races, for
example whether a retry comes before or after a victim is gone); *ours-nondeterministic* when
upstream agrees with itself and one of our runs matched it but another did not; a *true
divergence* when every upstream run agrees and none of ours matches. A difference can cascade:
once one pod lands elsewhere, later decisions see another cluster, so the first difference in
a scenario is the one to read.

Races that have shown up as differences so far, each with both schedulers following the same
rules: when a preemptor's nomination changes, the update requeues the preemptor itself, and
whether its retry takes its snapshot before or after the victim's deletion is visible decides
between a second `Preempted` event for the same victim and a `FailedScheduling` "not eligible
due to a terminating pod on the nominated node". When two victims are removed in the same
second, whether a preemptor is tried between the two removals decides whether it records a "not
eligible" attempt, and, when another pod is waiting for the same node, which of the two gets it
(kube-scheduler runs its preemptor's cycle between the two removals in 9 of 10 runs of the saved
case `preemptor-tried-between-victims-removals`; our watch reader applies one event, then lets
the cycle it woke run).

A campaign runs each scenario a few times, enough to name a race, not to say how often each
side lands where. `python -m differential rates SCENARIO --runs 20` plays a scenario 20 times
with each scheduler in turn and counts, per pod, how often each outcome came out. Measured on
this 2-CPU machine for the scenarios of the last two campaigns (seeds 51–150 and 151–250 of the
`preemption` profile) that show these races, as the runs off kube-scheduler's usual outcome; the
rows of 2026-11-29 at 15ee315 with two other control planes sharing the machine, the last two
(at e7657ce) with one control plane and nothing else running:

| scenario | pods, aspect | the race | kube-scheduler | ours |
|---|---|---|---|---|
| preemption-55 | `p01-web`, events | "not eligible" between two removals | 8 of 20 | 8 of 20 |
| preemption-55 | `p04-batch`, events | the same, for the other preemptor | 10 of 20 | 1 of 20 |
| preemption-55 | the victims on node-3 | which pods there are the victims | 0 of 20 | 1 of 20 |
| preemption-102 | `p03-web`, `p05-batch`, placements | who gets node-2 | 4 of 20 | 8 of 20 |
| preemption-116 | `p02-web`, events | a second `Preempted` | 0 of 20 | 11 of 20 |
| preemption-116, after e7657ce | `p02-web`, events | a second `Preempted` | 4 of 20 | 1 of 20 |
| preemption-178, 10 runs | `p05-db`, placements | tried between two removals | 3 of 10 | 5 of 10 |
| preemption-wide-26, 10 runs | `p06-batch`, placements | a tie of scores | 3 of 10 | 3 of 10 |

Before the waves of a backlog scenario followed each scheduler's first decision, the first race
was one-sided in preemption-55: kube-scheduler recorded the "not eligible" attempt for `p01-web`
in 5 of 5 runs and ours in 0 of 2, which counted as a true divergence. Preemption-116 was
one-sided for a reason of order, found in kube-scheduler's own log (`--v=5`): when `p05-db`
preempts `p02-web` on node-3, the scheduling goroutine patches `p05-db`'s status (its nomination
moving from node-2 to node-3) while the preemption goroutine is still starting, so that patch
reaches the API server before the victim's `DisruptionTarget` patch and its deletion. The
nomination's change requeues `p05-db` itself, and its retry takes its snapshot before the
deletion arrives, preempts `p02-web` once more and records the second `Preempted` event. Ours
started the victim's writes first, so the nomination often arrived after them and the retry
found the victim terminating. Since e7657ce the background preemption lets the status patch go
out first; `python -m differential rates preemption-116 --runs 20` at e7657ce (2026-11-29
23:04–23:22 UTC, one control plane, nothing else running) gives the row above: ours off the usual
outcome in 1 run of 20, kube-scheduler in 4. The rows of preemption-55 and -102 were measured
before that change. Preemption-178, the one true divergence of the campaign of seeds 151–250,
is a race too: its five kube-scheduler runs agreed by chance, and 3 of 10 go the other way. When
the victims on node-1 and node-2 go in the same second, `p05-db`, nominated to node-1, takes
node-2 if it is tried between the two removals, and `p03-web`, which was waiting for node-2,
preempts on node-3 instead. Where ours is still off more often than kube-scheduler (preemption-102
and -178), the race is which waiting pod a removal lets in first, and a cycle of ours, with the
API writes and watch events that come with it on the same thread, takes tens of milliseconds on
this machine where kube-scheduler's take a few; the campaign's verdict on such races depends on
which way two runs of ours happened to go.

A tie can pass for a rule too. In the campaign of seeds 1–100 of the `preemption-wide` profile
(2026-11-30, at c1e87ae), `p06-batch` of preemption-wide-26 went to node-3 in all five
kube-scheduler runs and to node-2 in both of ours, so the campaign counts a true divergence.
kube-scheduler's own log at `--v=10` gives both nodes the same total, 410 (NodeResourcesFit 14
and 54, NodeResourcesBalancedAllocation 96 and 56, TaintToleration 300 each; the same figures
`kopf-scheduler simulate --explain` prints for that state), and kube-scheduler breaks a tie at
random (`selectHost`, reservoir sampling), as ours does. `python -m differential rates
preemption-wide-26 --runs 10` puts it on node-2 in 7 runs and on node-3 in 3, on both sides
alike. Five upstream runs agree on one of two tied nodes once in sixteen scenarios, and two of
ours then land on the other one time in four, so a campaign of a hundred scenarios with many
tied decisions shows such a row now and then; `rates` tells it from a rule. That campaign found
no other difference that was not a race: 90 scenarios identical, 5 upstream-nondeterministic, 4
ours-nondeterministic. The saved case `plain-pods-beside-three-preemptors` holds a scenario of
the shape the profile was made for (three preemptors and plain pods with memory requests in one
wave on eight full nodes), as kube-scheduler played it in every run.

Profiles: `mixed` (every filter and score, volumes included), `preemption` (full nodes,
bursts of high-priority pods, PDBs, ReadWriteOncePod claims), `preemption-wide` (the same on six
to eight nodes, with more pending pods in three or four waves and plain pods asking for memory
among the preemptors) and `devices` (GPUs handed out through DRA claims).
"""

CHART = f"""\
The identical column as a share of the scenarios, for this campaign and the ones this file \
recorded before it (its versions in git; `python -m differential chart` draws it again):

![Per aspect, the per cent of scenarios identical to kube-scheduler, campaign by campaign]\
({IMAGE.as_posix()})"""

RERUN = """\
## Running it

```bash
make differential SEEDS=1-50            # every profile, writes this file (about 1 min a scenario)
make differential-ci                    # the saved cases and a few seeds, for CI
.venv/bin/python -m differential show preemption-7     # a scenario as YAML
.venv/bin/python -m differential run preemption-7      # one scenario, the comparison printed
.venv/bin/python -m differential reduce preemption-7 --aspect events --out differential/cases/x.yaml
.venv/bin/python -m differential rates preemption-55 --runs 20   # how often each way a race goes
.venv/bin/python -m differential chart                 # images/fidelity-aspects.svg again
```

The suite starts a control plane of its own without any other node (`DIFFERENTIAL_CLUSTER_DIR`,
default `~/.cache/kopf-scheduler/differential`), because `FailedScheduling` messages count
every node of the cluster. Raw records of every run are kept under `--out` (default
`/tmp/kopf-differential`) for a closer look.
"""


@dataclass
class CampaignInfo:
    command: str
    date: str
    seconds: float
    upstream_runs: int
    ours_runs: int


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def _verb(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def _value(value: Any) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, list):
        return "\n".join(f"  - {item}" for item in value) if value else "  (none)"
    return str(value)


def _side(name: str, runs: int, values: list[Any]) -> list[str]:
    if len(values) == 1:
        agree = f" ({runs} runs agree)" if runs > 1 else ""
        return [f"  {name}{agree}:", *("  " + line for line in _value(values[0]).splitlines())]
    lines = []
    for index, value in enumerate(values, start=1):
        lines.append(f"  {name}, outcome {index} of {runs} runs:")
        lines.extend("  " + line for line in _value(value).splitlines())
    return lines


def _aspect_block(result: AspectResult) -> list[str]:
    lines = []
    for difference in result.differences:
        lines += [f"- `{difference.key}`: {difference.verdict.value}", "", "  ```"]
        lines += _side("upstream", result.upstream_runs, difference.upstream)
        lines += _side("ours", result.ours_runs, difference.ours)
        lines.append("  ```")
    return lines


_SECTIONS = (
    (Verdict.DIVERGENCE, "True divergences"),
    (Verdict.OURS_NONDETERMINISTIC, "Ours-nondeterministic"),
    (Verdict.UPSTREAM_NONDETERMINISTIC, "Upstream-nondeterministic"),
)


def _heading(result: ScenarioResult, verdict: Verdict) -> str:
    return f"{result.scenario.name}: {', '.join(r.aspect for r in result.comparison.of(verdict))}"


def anchor(heading: str) -> str:
    """The fragment a Markdown renderer (GitHub's) gives a heading: lower case, punctuation
    other than hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _scenario_block(result: ScenarioResult, verdict: Verdict) -> list[str]:
    lines = [f"### {_heading(result, verdict)}", ""]
    lines += [f"Reproduce: `.venv/bin/python -m differential run {result.scenario.name}`", ""]
    for aspect_result in result.comparison.of(verdict):
        lines += [f"**{aspect_result.aspect}**", "", *_aspect_block(aspect_result), ""]
    return [
        *lines,
        "<details><summary>the scenario</summary>",
        "",
        "```yaml",
        dump(result.scenario).rstrip(),
        "```",
        "",
        "</details>",
        "",
    ]


def _by_verdict(results: Sequence[ScenarioResult]) -> dict[Verdict, list[ScenarioResult]]:
    found: dict[Verdict, list[ScenarioResult]] = {verdict: [] for verdict in Verdict}
    for result in results:
        if result.error is None:
            found[result.comparison.verdict].append(result)
    return found


def render(results: Sequence[ScenarioResult], info: CampaignInfo, details: str) -> str:
    """The summary page; ``details`` is the details page's path relative to it."""
    played = [r for r in results if r.error is None]
    errors = [r for r in results if r.error is not None]
    by_verdict = _by_verdict(results)
    counts = {verdict: len(found) for verdict, found in by_verdict.items()}
    lines = [INTRO, "## Latest campaign", ""]
    lines.append(f"- Command: `{info.command}`")
    lines.append(
        f"- {info.date}: {len(results)} scenarios in {_duration(info.seconds)}, "
        f"up to {info.upstream_runs} upstream and {info.ours_runs} runs of ours each"
    )
    upstream_nd = counts[Verdict.UPSTREAM_NONDETERMINISTIC]
    ours_nd = counts[Verdict.OURS_NONDETERMINISTIC]
    divergent = counts[Verdict.DIVERGENCE]
    lines.append(
        f"- **{counts[Verdict.IDENTICAL]} of {len(played)} scenarios identical** in every "
        f"aspect; {upstream_nd} {_verb(upstream_nd, 'differs', 'differ')} only where upstream "
        f"disagrees with itself; {ours_nd} only where our runs disagree among themselves (and "
        f"one matched upstream); {divergent} {_verb(divergent, 'shows', 'show')} a true "
        "divergence" + (f"; {len(errors)} could not be played" if errors else "") + "."
    )
    unsettled = [r for r in played if r.unsettled]
    if unsettled:
        lines.append(
            "- Runs that hit the time limit before coming to rest (compared as they were): "
            + ", ".join(f"{r.scenario.name} ({', '.join(r.unsettled)})" for r in unsettled)
        )
    lines += ["", "| aspect | " + " | ".join(v.value for v in Verdict) + " |"]
    lines.append("|---" * (len(Verdict) + 1) + "|")
    for aspect in ASPECTS:
        per_aspect = {verdict: 0 for verdict in Verdict}
        for result in played:
            per_aspect[result.comparison.aspects[aspect].verdict] += 1
        lines.append(f"| {aspect} | " + " | ".join(str(n) for n in per_aspect.values()) + " |")
    lines += ["", CHART, "", "## The scenarios that differ", ""]
    lines.append(
        f"Each with the values that differ and the scenario itself in [the details]({details})."
    )
    for verdict, title in _SECTIONS:
        lines += [
            "",
            f"**{title}**: "
            + (
                ", ".join(
                    f"[{_heading(r, verdict)}]({details}#{anchor(_heading(r, verdict))})"
                    for r in by_verdict[verdict]
                )
                or "none."
            ),
        ]
    if errors:
        lines += [
            "",
            "**Could not be played**: "
            + ", ".join(f"{r.scenario.name} ({json.dumps(r.error)})" for r in errors),
        ]
    lines += ["", RERUN]
    return "\n".join(lines).rstrip() + "\n"


def render_details(results: Sequence[ScenarioResult], info: CampaignInfo, summary: str) -> str:
    """The details page; ``summary`` is the summary page's path relative to it."""
    by_verdict = _by_verdict(results)
    lines = [
        f"# The campaign of {info.date} in detail",
        "",
        f"Every scenario of `{info.command}` that did not come out identical, with the values "
        f"that differ and the scenario itself; the figures are in [the summary]({summary}).",
    ]
    for verdict, title in _SECTIONS:
        lines += ["", f"## {title}", ""]
        if not by_verdict[verdict]:
            lines.append("None.")
        for result in by_verdict[verdict]:
            lines += _scenario_block(result, verdict)
    errors = [r for r in results if r.error is not None]
    if errors:
        lines += ["", "## Scenarios that could not be played", ""]
        lines += [f"- {r.scenario.name}: {json.dumps(r.error)}" for r in errors]
    return "\n".join(lines).rstrip() + "\n"


def summary(result: ScenarioResult) -> str:
    """One line: the scenario, its verdict and the aspects behind it."""
    if result.error is not None:
        return f"{result.scenario.name}: could not be played: {result.error}"
    comparison = result.comparison
    verdict = comparison.verdict
    aspects = [r.aspect for r in comparison.of(verdict)] if verdict is not Verdict.IDENTICAL else []
    detail = f" in {', '.join(aspects)}" if aspects else ""
    runs = f"{len(result.upstream)} upstream, {len(result.ours)} ours"
    unsettled = f", unsettled: {', '.join(result.unsettled)}" if result.unsettled else ""
    timing = f"{runs}, {result.seconds:.0f}s{unsettled}"
    return f"{result.scenario.name}: {verdict.value}{detail} ({timing})"


def aspect_details(result: AspectResult) -> str:
    return "\n".join([f"{result.aspect}: {result.verdict.value}", *_aspect_block(result)])


def details(result: ScenarioResult) -> str:
    """Every aspect that is not identical, with the values that differ."""
    lines = [summary(result)]
    if result.error is None:
        for aspect_result in result.comparison.aspects.values():
            if aspect_result.verdict is Verdict.IDENTICAL:
                continue
            lines.append(aspect_details(aspect_result))
    return "\n".join(lines)
