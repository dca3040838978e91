"""How many more copies of a workload fit: the real scheduler, one copy at a time, until one fails.

The cluster state (a scenario, or a read-only snapshot of a live cluster) is loaded into the
simulator and settled first, pending pods included, as the cluster would be before the copies
arrive. Then copies of the templates are created in turn (template 1, 2, …, 1, 2, …, as
cluster-capacity does with several pod specs), each run until nothing more can happen, and the
first copy that stays unscheduled ends the count. A gang template's copy is a whole PodGroup
with ``minMember`` pods and counts only when every member is bound.

A single template whose copies only compete for node room is filled wave by wave first
(:mod:`.capacity_fill`): the same end state in a few Filter passes over all nodes instead of a
scheduling cycle per copy; the copy that stops the count is still scheduled for real.

Without preemption (the default, and cluster-capacity's answer) the profiles' PostFilter plugins
are switched off, so a copy only takes room that is free. With preemption, a copy may evict
pods of lower priority as the scheduler would, and the count says what fits at that price.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.config.types import PluginRef, PluginSet, SchedulerConfig
from kopf_scheduler.gc_tuning import frozen_while_working
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.sim.capacity_fill import admitted_copy, fill_by_waves, wave_obstacle
from kopf_scheduler.sim.node_matrix import NodeMatrix
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import Scenario
from kopf_scheduler.sim.templates import PodTemplate
from kopf_scheduler.sim.utilisation import Utilisation, node_utilisation

STOP_UNSCHEDULABLE = "Unschedulable"
"""The copy found no node (cluster-capacity's ``failType`` for this stop)."""
STOP_LIMIT = "LimitReached"
"""``--max-limit`` copies were placed."""

COSCHEDULING = "Coscheduling"


class CapacityError(ValueError):
    """The templates cannot be counted on this cluster with this configuration."""


@dataclass
class TemplateCount:
    template: PodTemplate
    copies: int = 0
    """Copies placed whole (pods, or gangs for a gang template) and still there at the end."""
    nodes: Counter[str] = field(default_factory=Counter)
    """Pods of this template per node at the end."""
    placed: list[list[str]] = field(default_factory=list)
    """The pods of each copy that was placed: with preemption, a later copy of a template of
    higher priority may evict one again."""
    fail_summary: Counter[str] = field(default_factory=Counter)
    """For the template whose copy stopped the count: each reason with its number of nodes."""
    matrix: NodeMatrix | None = None
    """Every attempt of this template's copies, node by node and plugin by plugin (only when
    asked for: ``count_copies(..., matrix=True)``)."""


@dataclass
class CapacityResult:
    counts: list[TemplateCount]
    stop_type: str
    stop_message: str
    preempted: list[str] = field(default_factory=list)
    """Pods evicted to make room for copies (only with preemption)."""

    @property
    def total(self) -> int:
        return sum(count.copies for count in self.counts)


def without_preemption(config: SchedulerConfig) -> SchedulerConfig:
    """``config`` with every profile's PostFilter plugins disabled."""
    off = PluginSet(disabled=(PluginRef("*"),))
    return dataclasses.replace(
        config,
        profiles=tuple(
            dataclasses.replace(profile, plugins={**profile.plugins, "postFilter": off})
            for profile in config.profiles
        ),
    )


def check_templates(
    config: SchedulerConfig, scenario: Scenario, templates: Sequence[PodTemplate]
) -> None:
    """CapacityError when a template cannot be scheduled by ``config`` at all: a scheduler it
    names is no profile, its namespace is not in the cluster, a gang without Coscheduling."""
    profiles = {profile.scheduler_name: profile for profile in config.profiles}
    namespaces = {n["metadata"]["name"] for n in scenario.namespaces}
    for template in templates:
        where = f"{template.source}: {template.name}"
        name = (template.pod.get("spec") or {}).get("schedulerName")
        profile = profiles.get(name) if name else config.profiles[0]
        if profile is None:
            raise CapacityError(
                f"{where}: spec.schedulerName {name!r} is no profile of the configuration "
                f"(profiles: {', '.join(profiles)})"
            )
        if namespaces and template.namespace not in namespaces:
            raise CapacityError(f"{where}: namespace {template.namespace!r} does not exist")
        enabled = {ref.name for plugins in profile.plugins.values() for ref in plugins.enabled}
        if template.pod_group is not None and COSCHEDULING not in enabled:
            raise CapacityError(
                f"{where}: a PodGroup template needs a profile that enables {COSCHEDULING} "
                "(--config)"
            )


def fail_summary(record: AttemptRecord | None) -> Counter[str]:
    """Each reason of a failed attempt with the number of nodes that gave it."""
    summary: Counter[str] = Counter()
    if record is None:
        return summary
    listed = 0
    for verdict in record.nodes:
        listed += 1
        for reason in verdict.reasons:
            summary[reason] += 1
    if record.unlisted_status and record.num_all_nodes > listed:
        summary[record.unlisted_status] += record.num_all_nodes - listed
    return summary


def _condition_message(raw: Mapping[str, Any]) -> str:
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return ""


async def count_copies(
    config: SchedulerConfig,
    scenario: Scenario,
    templates: Sequence[PodTemplate],
    *,
    preemption: bool = False,
    max_limit: int = 0,
    seed: int = 0,
    matrix: bool = False,
) -> CapacityResult:
    """Place copies of ``templates`` in turn until one fails (or ``max_limit`` copies fit).

    With ``matrix``, each template's :class:`NodeMatrix` sums up the verdicts of its copies'
    attempts (reading every node's verdict costs time on large clusters, so only then).
    Runs on the simulation loop: ``sim.loop.run(count_copies(...))``.
    """
    check_templates(config, scenario, templates)
    simulation = Simulation(
        config if preemption else without_preemption(config), seed=seed, utilisation=False
    )
    with frozen_while_working():  # the scenario
        await simulation.run(scenario)
        with frozen_while_working():  # and the settled cluster
            return await _place_copies(
                simulation,
                templates,
                config.profiles[0].scheduler_name,
                preemption=preemption,
                max_limit=max_limit,
                matrix=matrix,
            )


async def _place_copies(
    simulation: Simulation,
    templates: Sequence[PodTemplate],
    default_profile: str,
    *,
    preemption: bool,
    max_limit: int,
    matrix: bool,
) -> CapacityResult:
    """Copies of ``templates`` in turn on the settled cluster until one fails."""
    cluster = simulation.cluster
    counts = [TemplateCount(template) for template in templates]
    before = node_utilisation(cluster.nodes, cluster.pods.values()) if matrix else {}
    if matrix:
        for count in counts:
            count.matrix = NodeMatrix.for_nodes(cluster.nodes)
    index = -1
    if len(counts) == 1 and not matrix and not max_limit:
        index += _fill_by_waves(simulation, counts[0], default_profile, preemption=preemption)
        await simulation.run_until_quiet()
    while True:
        index += 1
        if max_limit and index >= max_limit:
            return _result(
                simulation,
                counts,
                STOP_LIMIT,
                f"Maximum number of pods simulated: {max_limit}",
                before,
            )
        count = counts[index % len(counts)]
        objects, keys = count.template.copy_objects(index, cluster.pods)
        simulation.attempts.clear()
        for raw in objects:
            simulation.apply(_for_profile(raw, default_profile))
        await simulation.run_until_quiet()
        placed = [(cluster.pods[key]["spec"].get("nodeName") or "") for key in keys]
        failed = keys[placed.index("")] if not all(placed) else ""
        last = next((a for a in reversed(simulation.attempts) if a.pod == failed), None)
        if count.matrix is not None:
            copy_pods = set(keys)
            for attempt in simulation.attempts:
                if attempt.pod in copy_pods:
                    count.matrix.add_attempt(attempt, last=attempt is last)
        if not failed:
            count.placed.append(keys)
            continue
        count.fail_summary = fail_summary(last)
        message = _condition_message(cluster.pods[failed])
        if not message and last is not None:
            message = last.message
        return _result(simulation, counts, STOP_UNSCHEDULABLE, message, before)


def _for_profile(raw: dict[str, Any], default_profile: str) -> dict[str, Any]:
    """A copy's object; a pod that names no scheduler is meant for the configuration's first
    profile."""
    if raw["kind"] == "Pod" and not (raw.get("spec") or {}).get("schedulerName"):
        raw["spec"] = {**raw["spec"], "schedulerName": default_profile}
    return raw


def _fill_by_waves(
    simulation: Simulation, count: TemplateCount, default_profile: str, *, preemption: bool
) -> int:
    """Place the copies of a single template wave by wave when they only compete for node room
    (:mod:`.capacity_fill`); the number placed, zero when they must go one by one."""
    scheduler = simulation.start()
    cluster = simulation.cluster
    objects, _ = count.template.copy_objects(0, cluster.pods)
    if count.template.pod_group is not None:
        return 0
    first = _for_profile(objects[0], default_profile)
    framework = scheduler.profiles.get(first["spec"]["schedulerName"])
    if framework is None:
        return 0
    pending = [
        Pod(raw)
        for raw in cluster.pods.values()
        if not raw["spec"].get("nodeName")
        and raw["spec"].get("schedulerName") in scheduler.profiles
    ]
    copy_pod = admitted_copy(first, cluster.priority_classes)
    if wave_obstacle(framework, copy_pod, pending, preemption=preemption):
        return 0

    def place(node: str) -> None:
        objects, keys = count.template.copy_objects(len(count.placed), cluster.pods)
        raw = _for_profile(objects[0], default_profile)
        raw["spec"] = {**raw["spec"], "nodeName": node}
        simulation.apply(raw)
        count.placed.append(keys)

    return fill_by_waves(scheduler, framework, copy_pod, place)


def _result(
    simulation: Simulation,
    counts: list[TemplateCount],
    stop_type: str,
    message: str,
    before: Mapping[str, Utilisation],
) -> CapacityResult:
    cluster = simulation.cluster
    after = node_utilisation(cluster.nodes, cluster.pods.values()) if before else {}
    for count in counts:
        if count.matrix is not None:
            for name, row in count.matrix.rows.items():
                row.before, row.after = before.get(name), after.get(name)
        remaining = [keys for keys in count.placed if all(key in cluster.pods for key in keys)]
        count.copies = len(remaining)
        count.nodes = Counter(
            cluster.pods[key]["spec"]["nodeName"] for keys in remaining for key in keys
        )
    return CapacityResult(
        counts,
        stop_type,
        message,
        preempted=sorted(key for key in cluster.deleted if cluster.was_preempted(key)),
    )
