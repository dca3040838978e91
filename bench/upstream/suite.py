"""scheduler_perf's ``performance-config.yaml`` files as typed test cases, workloads and ops.

A file is a list of test cases; each has a ``workloadTemplate`` (the ops, in order) and
``workloads`` that fill the template's ``$param`` references with their ``params``. Loading keeps
everything the file says: a key this module does not know, on a test case, a workload or an op,
is kept and listed by name (``unknown_keys``), and an op kind it does not know stays an
:class:`Op` with its fields, so that nothing in the suite is dropped without being reported.

Template paths are written relative to the config's directory (upstream runs each config's test
from there); they are resolved to absolute paths when the file is loaded.

Parameter substitution follows upstream's ops: a field ``<name>Param`` whose value is ``$p``
sets ``<name>`` to the workload's ``p`` (``countParam`` → ``count``, ``durationParam`` →
``duration``, ``maxClaimsPerNodeParam`` → ``maxClaimsPerNode``). ``createPodSets`` is unrolled
into one ``createPods`` per namespace before the ops are numbered, as upstream unrolls it.
Workload labels are the test case's plus the workload's own, as upstream filters them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from e2e.localcluster.versions import KUBERNETES_VERSION, cache_root

CONFIG_NAME = "performance-config.yaml"
CONFIG_DIRECTORIES = (
    "misc",
    "affinity",
    "topology_spreading",
    "volumes",
    "dra",
    "event_handling",
)
"""The six configs the runner reads by default, relative to the suite's directory."""

LABEL_INTEGRATION = "integration-test"
LABEL_PERFORMANCE = "performance"
THROUGHPUT_METRIC = "SchedulingThroughput"
DEFAULT_DATA_BUCKET = "Average"
PER_TEST_TIMEOUT = 1800.0
"""Seconds upstream gives one workload's test (``scheduler_perf.go``: 30 minutes, set up
included); the runner gives each scheduler's run of a workload as long for its ops, and a
scheduler that cannot finish in that time fails the workload, as it would in upstream's CI."""

TEST_CASE_KEYS = frozenset(
    {
        "name",
        "featureGates",
        "metricsCollectorConfig",
        "workloadTemplate",
        "workloads",
        "schedulerConfigPath",
        "defaultPodTemplatePath",
        "labels",
        "defaultThresholdMetricSelector",
    }
)
WORKLOAD_KEYS = frozenset(
    {"name", "params", "labels", "threshold", "thresholdMetricSelector", "featureGates"}
)

OP_FIELDS: Mapping[str, frozenset[str]] = {
    "createNodes": frozenset(
        {
            "count",
            "countParam",
            "nodeTemplatePath",
            "nodeAllocatableStrategy",
            "labelNodePrepareStrategy",
            "uniqueNodeLabelStrategy",
        }
    ),
    "createNamespaces": frozenset({"prefix", "count", "countParam", "namespaceTemplatePath"}),
    "createPods": frozenset(
        {
            "count",
            "countParam",
            "steadyState",
            "duration",
            "durationParam",
            "collectMetrics",
            "namespace",
            "podTemplatePath",
            "skipWaitToCompletion",
            "persistentVolumeTemplatePath",
            "persistentVolumeClaimTemplatePath",
        }
    ),
    "createPodSets": frozenset({"count", "countParam", "namespacePrefix", "createPodsOp"}),
    "deletePods": frozenset(
        {"namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"}
    ),
    "createAny": frozenset({"namespace", "templatePath", "count", "countParam"}),
    "updateAny": frozenset(
        {"namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources"}
    ),
    "churn": frozenset({"mode", "number", "intervalMilliseconds", "namespace", "templatePaths"}),
    "barrier": frozenset({"namespaces", "labelSelector", "stageRequirement"}),
    "sleep": frozenset({"duration", "durationParam"}),
    "startCollectingMetrics": frozenset({"name", "namespaces", "labelSelector"}),
    "stopCollectingMetrics": frozenset(),
    "createResourceClaims": frozenset({"count", "countParam", "namespace", "templatePath"}),
    "createResourceDriver": frozenset(
        {"driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes"}
    ),
    "allocResourceClaims": frozenset({"namespace"}),
}
"""The fields of every op kind scheduler_perf v1.34.10 defines (``opcode`` aside)."""

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class SuiteError(ValueError):
    """A config that cannot be read, or a workload whose parameters do not fill its template."""


def suite_dir() -> Path:
    """scheduler_perf's directory in the Go module cache that ``make cluster-up`` fills."""
    module = cache_root() / "go" / "mod" / "k8s.io" / f"kubernetes@v{KUBERNETES_VERSION}"
    return module / "test" / "integration" / "scheduler_perf"


def default_configs(root: Path | None = None) -> list[Path]:
    base = root or suite_dir()
    return [base / directory / CONFIG_NAME for directory in CONFIG_DIRECTORIES]


def go_duration_seconds(text: str) -> float:
    """A Go duration (``10s``, ``1m30s``, ``500ms``) in seconds."""
    stripped = text.strip()
    sign = -1.0 if stripped.startswith("-") else 1.0
    body = stripped.lstrip("+-")
    if body == "0":
        return 0.0
    parts = _GO_DURATION.findall(body)
    if not parts or "".join(number + unit for number, unit in parts) != body:
        raise SuiteError(f"not a Go duration: {text!r}")
    return sign * sum(float(number) * _GO_UNITS[unit] for number, unit in parts)


@dataclass(frozen=True)
class ThresholdSelector:
    """What a workload's threshold is compared with (upstream's thresholdMetricSelector)."""

    name: str = THROUGHPUT_METRIC
    data_bucket: str = DEFAULT_DATA_BUCKET
    labels: Mapping[str, str] = field(default_factory=dict)
    expect_lower: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> ThresholdSelector:
        return cls(
            name=str(raw.get("name", THROUGHPUT_METRIC)),
            data_bucket=str(raw.get("dataBucket", DEFAULT_DATA_BUCKET)),
            labels={str(k): str(v) for k, v in (raw.get("labels") or {}).items()},
            expect_lower=bool(raw.get("expectLower", False)),
        )


@dataclass(frozen=True)
class Threshold:
    """A plain value, or values by topic with the plain one as the fallback; 0 means none."""

    value: float = 0.0
    by_topic: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Any) -> Threshold:
        if raw is None:
            return cls()
        if isinstance(raw, Mapping):
            return cls(by_topic={str(k): float(v) for k, v in raw.items()})
        return cls(value=float(raw))

    def get(self, topic: str = "") -> float:
        return self.by_topic.get(topic, self.value)


@dataclass(frozen=True)
class Op:
    """One op of a workload template: its position, kind and fields as written (paths
    resolved), or after a workload's parameters were substituted (:meth:`Workload.ops`)."""

    index: int
    opcode: str
    fields: Mapping[str, Any]

    @property
    def known(self) -> bool:
        return self.opcode in OP_FIELDS

    @property
    def unknown_fields(self) -> tuple[str, ...]:
        allowed = OP_FIELDS.get(self.opcode)
        if allowed is None:
            return ()
        return tuple(sorted(name for name in self.fields if name not in allowed))

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def path(self, name: str) -> Path | None:
        value = self.fields.get(name)
        return Path(value) if value else None

    def count(self, default: int = 0) -> int:
        return int(self.fields.get("count", default) or 0)

    def seconds(self, name: str = "duration") -> float:
        value = self.fields.get(name)
        return go_duration_seconds(str(value)) if value else 0.0

    @property
    def collects_metrics(self) -> bool:
        return bool(self.fields.get("collectMetrics")) or self.opcode == "stopCollectingMetrics"


@dataclass(frozen=True)
class Workload:
    """One size of a test case: its parameters, labels (the test case's included), threshold
    and feature gates (the test case's, overridden by the workload's own)."""

    name: str
    test_case: TestCase
    params: Mapping[str, Any]
    labels: tuple[str, ...]
    threshold: Threshold
    threshold_selector: ThresholdSelector
    feature_gates: Mapping[str, bool]
    unknown_keys: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.test_case.name}/{self.name}"

    @property
    def size(self) -> int:
        """The sum of its whole-number parameters: about how many nodes and pods it makes,
        by which ``--smallest-first`` orders a long run."""
        return sum(
            value
            for value in self.params.values()
            if isinstance(value, int) and not isinstance(value, bool)
        )

    def ops(self) -> list[Op]:
        """The test case's ops as they run for this workload (:func:`unroll`)."""
        return unroll(self.test_case.ops, self.params)


@dataclass(frozen=True)
class TestCase:
    name: str
    config: Path
    labels: tuple[str, ...]
    feature_gates: Mapping[str, bool]
    ops: tuple[Op, ...]
    raw_workloads: tuple[Mapping[str, Any], ...]
    scheduler_config: Path | None = None
    default_pod_template: Path | None = None
    metrics_collector_config: Mapping[str, Any] | None = None
    default_threshold_selector: ThresholdSelector | None = None
    unknown_keys: tuple[str, ...] = ()

    __test__ = False  # not a pytest class, despite its name

    @property
    def workloads(self) -> list[Workload]:
        return [self._workload(raw) for raw in self.raw_workloads]

    def _workload(self, raw: Mapping[str, Any]) -> Workload:
        selector = raw.get("thresholdMetricSelector")
        return Workload(
            name=str(raw["name"]),
            test_case=self,
            params=dict(raw.get("params") or {}),
            labels=(*self.labels, *(str(label) for label in raw.get("labels") or ())),
            threshold=Threshold.parse(raw.get("threshold")),
            threshold_selector=(
                ThresholdSelector.parse(selector)
                if selector is not None
                else self.default_threshold_selector or ThresholdSelector()
            ),
            feature_gates={**self.feature_gates, **_gates(raw.get("featureGates"))},
            unknown_keys=tuple(sorted(set(raw) - WORKLOAD_KEYS)),
        )


def _gates(raw: Any) -> dict[str, bool]:
    return {str(name): bool(value) for name, value in (raw or {}).items()}


def _resolve_paths(fields: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """Fields named ``*Path`` / ``*Paths`` made absolute against ``base``; nested op specs
    (``createPodSets``' ``createPodsOp``) too."""
    resolved: dict[str, Any] = {}
    for name, value in fields.items():
        if name.endswith("Path") and isinstance(value, str):
            resolved[name] = str((base / value).resolve())
        elif name.endswith("Paths") and isinstance(value, list):
            resolved[name] = [str((base / str(item)).resolve()) for item in value]
        elif isinstance(value, Mapping) and name.endswith("Op"):
            resolved[name] = _resolve_paths(value, base)
        else:
            resolved[name] = value
    return resolved


def _param(params: Mapping[str, Any], reference: Any, where: str) -> Any:
    if not isinstance(reference, str) or not reference.startswith("$"):
        raise SuiteError(f"{where}: {reference!r} is not a $parameter")
    name = reference[1:]
    if name not in params:
        raise SuiteError(f"{where}: parameter {name} is undefined")
    return params[name]


def substitute(op: Op, params: Mapping[str, Any]) -> Op:
    """``op`` with its ``*Param`` fields filled from ``params``."""
    fields = dict(op.fields)
    for name, reference in op.fields.items():
        if name.endswith("Param") and reference not in (None, ""):
            where = f"op {op.index} ({op.opcode}) {name}"
            fields[name.removesuffix("Param")] = _param(params, reference, where)
    return Op(op.index, op.opcode, fields)


def nested_op_fields(op: Op) -> dict[str, Any]:
    """The fields of the ``createPods`` op a ``createPodSets`` op holds (its opcode aside)."""
    return {k: v for k, v in (op.get("createPodsOp") or {}).items() if k != "opcode"}


def unroll(ops: Sequence[Op], params: Mapping[str, Any]) -> list[Op]:
    """The ops as upstream runs them: parameters substituted, each ``createPodSets`` replaced
    by its ``createPods`` op once per namespace ``<namespacePrefix>-<i>``, and every op
    numbered by its place in that list (the number default namespaces are named after)."""
    flat: list[tuple[str, dict[str, Any]]] = []
    for op in ops:
        concrete = substitute(op, params)
        if concrete.opcode == "createPodSets":
            prefix = concrete.get("namespacePrefix", "")
            for i in range(concrete.count()):
                flat.append(
                    ("createPods", {**nested_op_fields(concrete), "namespace": f"{prefix}-{i}"})
                )
        else:
            flat.append((concrete.opcode, dict(concrete.fields)))
    return [substitute(Op(i, opcode, fields), params) for i, (opcode, fields) in enumerate(flat)]


def _op(index: int, raw: Any, base: Path, where: str) -> Op:
    if not isinstance(raw, Mapping) or "opcode" not in raw:
        raise SuiteError(f"{where}: op {index} has no opcode")
    fields = {str(k): v for k, v in raw.items() if k != "opcode"}
    return Op(index, str(raw["opcode"]), _resolve_paths(fields, base))


def _test_case(raw: Any, config: Path) -> TestCase:
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise SuiteError(f"{config}: a test case without a name")
    base = config.parent
    name = str(raw["name"])
    selector = raw.get("defaultThresholdMetricSelector")
    scheduler_config = raw.get("schedulerConfigPath")
    default_pod = raw.get("defaultPodTemplatePath")
    return TestCase(
        name=name,
        config=config,
        labels=tuple(str(label) for label in raw.get("labels") or ()),
        feature_gates=_gates(raw.get("featureGates")),
        ops=tuple(
            _op(index, op, base, f"{config.name}: {name}")
            for index, op in enumerate(raw.get("workloadTemplate") or ())
        ),
        raw_workloads=tuple(raw.get("workloads") or ()),
        scheduler_config=(base / scheduler_config).resolve() if scheduler_config else None,
        default_pod_template=(base / default_pod).resolve() if default_pod else None,
        metrics_collector_config=raw.get("metricsCollectorConfig"),
        default_threshold_selector=(
            ThresholdSelector.parse(selector) if selector is not None else None
        ),
        unknown_keys=tuple(sorted(set(raw) - TEST_CASE_KEYS)),
    )


def load(config: Path) -> list[TestCase]:
    """The test cases of one ``performance-config.yaml``."""
    try:
        raw = yaml.safe_load(config.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SuiteError(f"{config}: {error}") from error
    if not isinstance(raw, list):
        raise SuiteError(f"{config}: expected a list of test cases")
    return [_test_case(item, config.resolve()) for item in raw]


def load_all(configs: Sequence[Path]) -> list[TestCase]:
    return [test_case for config in configs for test_case in load(config)]


def select(
    test_cases: Sequence[TestCase], names: Sequence[str] = (), labels: Sequence[str] = ()
) -> list[Workload]:
    """The workloads that carry every label in ``labels`` and, when ``names`` are given, whose
    name, test case name or ``TestCase/workload`` id is among them."""
    chosen = []
    for test_case in test_cases:
        for workload in test_case.workloads:
            if not all(label in workload.labels for label in labels):
                continue
            if names and not {workload.id, workload.name, test_case.name} & set(names):
                continue
            chosen.append(workload)
    return chosen


def unknown_names(test_cases: Sequence[TestCase], names: Sequence[str]) -> list[str]:
    """The names among ``names`` that no workload answers to (a misspelt ``--workload``)."""
    known = {
        name
        for test_case in test_cases
        for workload in test_case.workloads
        for name in (workload.id, workload.name, test_case.name)
    }
    return [name for name in names if name not in known]
