"""The Ray backend's placement plan and replacement choice as plain functions (no Ray needed): which
node each actor goes to for each mode, threads per node, free CPUs rather than totals, and that a
replacement keeps off nodes that failed."""

import pytest

from shoal.backends.ray_placement import Node, assign, check_actor_options, check_placement, node_table, plan_cpus
from shoal.backends.ray_recovery import NodeHistory, replacement_node
from shoal.errors import APIUsageError


def nodes(*free, total=None, driver=0) -> list[Node]:
    """Nodes n0, n1, ... with these free CPUs (and as many in total unless ``total`` says)."""
    total = total or free
    return [
        Node(f"n{i}", f"10.0.0.{i}", float(f), float(t), i == driver, {"CPU": t})
        for i, (f, t) in enumerate(zip(free, total))
    ]


@pytest.mark.parametrize(
    ("mode", "free", "where"),
    [
        ("spread", [2, 2, 2], [0, 1, 2]),
        ("spread", [1, 3], [1, 0, 1]),  # the node with most room first, then evenly
        ("pack", [2, 1, 3], [2, 2, 2]),
        ("pack", [2, 1, 2], [0, 0, 2]),
        ("strict_spread", [1, 1, 1], [0, 1, 2]),
    ],
)
def test_each_mode_lays_actors_out_as_it_says(mode, free, where):
    assert assign([float(f) for f in free], [1.0] * len(where), mode) == where


def test_strict_spread_beyond_the_nodes_does_not_fit():
    assert assign([4.0, 4.0], [1.0] * 3, "strict_spread") is None


def test_threads_are_sized_per_node_from_its_free_cpus():
    """Uneven nodes of 1 and 3 CPUs, the driver's (2 CPUs) excluded: one actor on each, 1 and 3 threads."""
    cpus, threads, where = plan_cpus(nodes(2, 1, 3), 2, None, 8, "spread", True, False)
    assert sorted(zip(where, threads)) == [("n1", 1), ("n2", 3)]
    assert cpus == [float(t) for t in threads]


def test_threads_are_capped_by_the_envs_of_an_actor():
    _, threads, _ = plan_cpus(nodes(8), 1, None, 2, "spread", False, False)
    assert threads == [2]


def test_fixed_threads_that_fit_no_node_do_not_fit_even_if_the_total_does():
    """2 actors of 2 CPUs over free CPUs (1, 3): 4 in total, but the 1-CPU node holds none."""
    assert plan_cpus(nodes(0, 1, 3), 2, 2, 8, "spread", False, False) is None


def test_free_cpus_count_not_totals():
    """A second vector beside a first: every CPU taken, though the totals are 6."""
    assert plan_cpus(nodes(0, 0, 0, total=(2, 1, 3)), 1, None, 1, "spread", False, False) is None


def test_overwork_shares_cpus_out_in_the_largest_fraction_that_fits():
    cpus, threads, where = plan_cpus(nodes(1, 1), 4, 1, 1, "spread", False, True)
    assert cpus == [0.5] * 4 and threads == [1] * 4 and sorted(where) == ["n0", "n0", "n1", "n1"]


def test_the_node_table_lists_free_and_total_cpus():
    table = node_table(nodes(0, 3, total=(2, 3)))
    assert "n0 (10.0.0.0, driver): 0 of 2 CPUs free" in table and "n1 (10.0.0.1): 3 of 3 CPUs free" in table


def test_bad_placement_and_actor_options_are_usage_errors():
    with pytest.raises(APIUsageError, match="placement must be one of"):
        check_placement("SPREAD")
    with pytest.raises(APIUsageError, match="may not set"):
        check_actor_options({"max_restarts": 3})
    with pytest.raises(APIUsageError, match="must be a dict"):
        check_actor_options(["resources"])
    assert check_actor_options({"resources": {"trainer": 1}}) == {"resources": {"trainer": 1}}


def test_a_replacement_keeps_off_nodes_that_failed():
    history = NodeHistory()
    cluster = nodes(1, 1, 2)
    assert replacement_node(cluster, history, 1.0).node_id == "n2"  # most free CPUs
    history.failed("n2")
    assert replacement_node(cluster, history, 1.0).node_id in ("n0", "n1")
    history.failed("n0")
    history.failed("n1")
    assert replacement_node(cluster, history, 1.0) is None  # every node failed a moment ago
    # unless one answers a probe: the least-failed of those with room
    assert replacement_node(cluster, history, 1.0, lambda node: node != "n0").node_id == "n2"
    assert replacement_node(cluster, history, 1.0, lambda node: False) is None


def test_a_node_failed_long_ago_is_used_again_least_failed_first():
    history = NodeHistory(quarantine_s=0.0)
    history.failed("n0")
    history.failed("n0")
    history.failed("n1")
    assert replacement_node(nodes(1, 1), history, 1.0).node_id == "n1"


def test_a_replacement_needs_a_node_with_its_cpus_free():
    assert replacement_node(nodes(1, 1), NodeHistory(), 2.0) is None
