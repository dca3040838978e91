"""kube-scheduler's own benchmark suite, read as it is and run against both schedulers.

Our shapes S1–S7 and D1 restate scheduler_perf in our words; this package runs scheduler_perf's
``performance-config.yaml`` files themselves (from the Go module cache of k8s.io/kubernetes
v1.34.10), unmodified, on the local control plane: each workload once with kube-scheduler and
once with kopf-scheduler, with upstream's SchedulingThroughput figures and thresholds, so that
the comparison is made on the suite kube-scheduler's maintainers hold their scheduler to.

:mod:`.suite` reads the files into typed test cases, workloads and ops; :mod:`.gotemplate`
renders their object templates; :mod:`.support` says which ops the runner carries out;
:mod:`.manifests` turns templates into objects for kwok nodes; :mod:`.podstate` and
:mod:`.throughput` observe and measure; :mod:`.ops` carries out the ops; :mod:`.runner` runs
workloads in turn and :mod:`.cli` is ``python -m bench upstream``.
"""
