from kopf_scheduler.informer.workloads import WorkloadIndex
from tests.builders import make_pod


def _owned(builder, kind: str, name: str, api_version: str = "apps/v1"):
    raw = builder.obj()
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "controller": True, "uid": "x"}
    ]
    from kopf_scheduler.model.pod import Pod

    return Pod(raw)


def test_services_and_controller_selectors() -> None:
    index = WorkloadIndex()
    index.on_service(
        "ADDED",
        {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}},
    )
    index.on_service(
        "ADDED",
        {
            "metadata": {"name": "other", "namespace": "default"},
            "spec": {"selector": {"app": "db"}},
        },
    )
    index.on_service(
        "ADDED", {"metadata": {"name": "headless", "namespace": "default"}, "spec": {}}
    )
    index.on_service(
        "ADDED",
        {
            "metadata": {"name": "web", "namespace": "elsewhere"},
            "spec": {"selector": {"app": "web"}},
        },
    )
    index.on_controller(
        "ReplicaSet",
        "ADDED",
        {
            "metadata": {"name": "web-abc", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web", "hash": "abc"}}},
        },
    )
    pod = _owned(make_pod("web-abc-1").labels(app="web", hash="abc"), "ReplicaSet", "web-abc")
    selectors = index.selectors_for(pod)
    assert [s.match_labels for s in selectors] == [{"app": "web"}, {"app": "web", "hash": "abc"}]


def test_no_workload_means_no_selector() -> None:
    index = WorkloadIndex()
    assert index.selectors_for(make_pod("bare").labels(app="web").pod()) == []


def test_deleted_service_is_forgotten_and_unknown_owner_kind_ignored() -> None:
    index = WorkloadIndex()
    raw = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    index.on_service("ADDED", raw)
    index.on_service("DELETED", raw)
    pod = _owned(make_pod("p").labels(app="web"), "Job", "j", "batch/v1")
    assert index.selectors_for(pod) == []
