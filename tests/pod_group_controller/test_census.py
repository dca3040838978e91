"""Counting each group's member pods from pod watch events."""

from __future__ import annotations

from kopf_scheduler.pod_group_controller.census import GroupCounts, PodGroupCensus
from tests.pod_group_controller.support import raw_pod


def census_and_changes() -> tuple[PodGroupCensus, list[str]]:
    changes: list[str] = []
    return PodGroupCensus(changes.append), changes


def test_counts_members_by_phase_and_binding() -> None:
    census, _ = census_and_changes()
    census.observe("ADDED", raw_pod("a", phase="Pending"))
    census.observe("ADDED", raw_pod("b", phase="Pending", node="n1"))
    census.observe("ADDED", raw_pod("c", phase="Running", node="n1"))
    census.observe("ADDED", raw_pod("d", phase="Running", node="n2"))
    census.observe("ADDED", raw_pod("e", phase="Succeeded", node="n2"))
    census.observe("ADDED", raw_pod("f", phase="Failed", node="n3"))

    assert census.counts("team/gang") == GroupCounts(
        pods=6, scheduled=5, running=2, succeeded=1, failed=1, occupied_by="team/trainer"
    )


def test_a_group_is_the_label_in_the_pods_own_namespace() -> None:
    census, _ = census_and_changes()
    census.observe("ADDED", raw_pod("a", namespace="team"))
    census.observe("ADDED", raw_pod("a", namespace="other"))
    census.observe("ADDED", raw_pod("b", namespace="other"))

    assert census.counts("team/gang").pods == 1
    assert census.counts("other/gang").pods == 2


def test_pods_of_no_group_are_neither_counted_nor_reported() -> None:
    census, changes = census_and_changes()
    census.observe("ADDED", raw_pod("web", group=None))
    census.observe("ADDED", raw_pod("empty", group=""))
    census.observe("DELETED", raw_pod("web", group=None))

    assert changes == []
    assert census.counts("team/gang") == GroupCounts()


def test_a_phase_or_binding_change_is_reported_and_anything_else_is_not() -> None:
    census, changes = census_and_changes()
    census.observe("ADDED", raw_pod("a"))
    unrelated = raw_pod("a")
    unrelated["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    census.observe("MODIFIED", unrelated)
    census.observe("MODIFIED", raw_pod("a", node="n1"))
    census.observe("MODIFIED", raw_pod("a", node="n1", phase="Running"))

    assert changes == ["team/gang", "team/gang", "team/gang"]
    assert census.counts("team/gang").running == 1


def test_a_deleted_member_leaves_and_the_last_one_takes_its_group_along() -> None:
    census, changes = census_and_changes()
    census.observe("ADDED", raw_pod("a"))
    census.observe("ADDED", raw_pod("b"))
    census.observe("DELETED", raw_pod("a"))
    assert census.counts("team/gang").pods == 1

    census.observe("DELETED", raw_pod("b"))

    assert census.counts("team/gang") == GroupCounts()
    assert changes == ["team/gang"] * 4


def test_a_relabelled_pod_moves_between_groups_and_both_are_reported() -> None:
    census, changes = census_and_changes()
    census.observe("ADDED", raw_pod("a", group="first"))
    census.observe("MODIFIED", raw_pod("a", group="second"))
    census.observe("MODIFIED", raw_pod("a", group=None))

    assert census.counts("team/first").pods == 0
    assert census.counts("team/second").pods == 0
    assert changes == ["team/first", "team/first", "team/second", "team/second"]


def test_occupied_by_is_the_first_members_owners_sorted() -> None:
    census, _ = census_and_changes()
    census.observe("ADDED", raw_pod("first", owners=("zeta", "alpha")))
    census.observe("ADDED", raw_pod("second", owners=("other",)))
    census.observe("MODIFIED", raw_pod("first", owners=("zeta", "alpha"), phase="Running"))

    assert census.counts("team/gang").occupied_by == "team/alpha,team/zeta"

    census.observe("DELETED", raw_pod("first"))

    assert census.counts("team/gang").occupied_by == "team/other"


def test_a_first_member_without_owners_leaves_occupied_by_empty() -> None:
    census, _ = census_and_changes()
    census.observe("ADDED", raw_pod("bare", owners=()))
    census.observe("ADDED", raw_pod("owned"))

    assert census.counts("team/gang").occupied_by == ""


def test_malformed_pods_are_taken_as_far_as_they_can_be_read() -> None:
    census, _ = census_and_changes()
    census.observe("ADDED", {"metadata": "nonsense"})
    census.observe("ADDED", {"metadata": {"name": "x", "labels": ["not", "a", "map"]}})
    odd = raw_pod("odd")
    odd["status"] = None
    odd["spec"] = {"nodeName": 7}
    odd["metadata"]["ownerReferences"] = [None, {"name": "job"}]
    census.observe("ADDED", odd)

    assert census.counts("team/gang") == GroupCounts(pods=1, occupied_by="team/job")
