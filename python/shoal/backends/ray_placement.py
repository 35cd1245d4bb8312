"""Where the Ray backend's actors run: the cluster's nodes, a plan of one bundle per actor, and the
placement group that reserves it before any actor starts.

The plan reads each alive node's *free* CPUs (what other work, another vector included, has not
taken), lays the actors out the way the placement mode says ("spread": as evenly as the nodes
allow, "pack": as few nodes as possible, "strict_spread": one node each), and sizes each actor's
bundle from the node it lands on: a native actor's threads are its share of that node's free CPUs.
A plan that does not fit is an immediate APIUsageError with a table of every node's free and total
CPUs, instead of actors that wait out the creation limit for CPUs that never come free.
``ray_actor_options`` go to every actor as given (resources, runtime_env, label_selector, ...); a
``scheduling_strategy`` of the user's replaces the placement group (Ray then places the actors).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import APIUsageError
from ..validation import check_bool

PLACEMENTS = ("spread", "pack", "strict_spread")
_PG_STRATEGY = {"spread": "SPREAD", "pack": "PACK", "strict_spread": "STRICT_SPREAD"}
# Options shoal sets itself: the CPUs follow the threads (or overwork), restarts are shoal's policy.
_OWN_OPTIONS = ("num_cpus", "max_restarts", "max_task_retries", "placement_group", "concurrency_groups")
# How long a plan that does not fit looks again: the CPUs of actors just killed (a vector closed a
# moment ago) take a moment to show as free.
SETTLE_S = 3.0
# How long a placement group that the plan says fits may take to be reserved.
RESERVE_TIMEOUT_S = 15.0
# The label Ray gives every node: its id (a bundle's selector pins it to the node the plan chose).
NODE_LABEL = "ray.io/node-id"
# Ray takes fractions of a CPU down to 1e-4.
_CPU_GRAIN = 1e-4


class WorkerNode(NamedTuple):
    """The node a worker (actor) runs on: Ray's node id and the node's address."""

    node_id: str
    address: str


@dataclass
class Node:
    """One alive node of the cluster as the plan sees it."""

    node_id: str
    address: str
    free_cpus: float
    total_cpus: float
    driver: bool
    resources: dict  # the node's total resources, custom ones included


@dataclass
class Plan:
    """Where each actor goes: its CPUs and threads, and the placement group that holds its bundle
    (None where the user's scheduling_strategy places the actors)."""

    cpus: list[float]
    threads: list[int]
    placement_group: object = None
    where: list[str] | None = None  # the node id of each actor's bundle


def check_placement(placement) -> str:
    if placement not in PLACEMENTS:
        raise APIUsageError(f"placement must be one of {list(PLACEMENTS)}, got {placement!r}")
    return placement


def check_actor_options(options) -> dict:
    """A dict of Ray actor options, without the ones shoal sets itself."""
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise APIUsageError(
            "ray_actor_options must be a dict of Ray actor options such as "
            f"{{'resources': {{'trainer': 1}}, 'runtime_env': {{...}}}}; got {options!r}"
        )
    own = sorted(set(options) & set(_OWN_OPTIONS))
    if own:
        raise APIUsageError(
            f"ray_actor_options may not set {own}: shoal sets each actor's CPUs from max_num_threads "
            "(or overwork=True) and replaces failed actors itself (on_worker_failure)"
        )
    return dict(options)


def check_exclude_driver_node(value) -> bool:
    return check_bool(value, "exclude_driver_node")


def cluster_nodes(ray) -> list[Node]:
    """The alive nodes with their free and total CPUs (free: what no actor, task or placement
    group holds now)."""
    try:  # the free resources per node have no public API in Ray 2.x
        from ray._private import state

        free = state.available_resources_per_node()
    except (ImportError, AttributeError):  # a Ray without it: totals (a busy node then fails to reserve)
        free = {info["NodeID"]: info.get("Resources", {}) for info in ray.nodes()}
    driver = ray.get_runtime_context().get_node_id()
    nodes = []
    for info in ray.nodes():
        if not info.get("Alive"):
            continue
        node_id = info["NodeID"]
        nodes.append(
            Node(
                node_id,
                info.get("NodeManagerAddress", "?"),
                free.get(node_id, {}).get("CPU", 0.0),
                info.get("Resources", {}).get("CPU", 0.0),
                node_id == driver,
                info.get("Resources", {}),
            )
        )
    return nodes


def node_table(nodes: list[Node]) -> str:
    """One line per node: its id, address, free and total CPUs (the driver's node marked)."""
    lines = [
        f"  node {n.node_id[:12]} ({n.address}{', driver' if n.driver else ''}): "
        f"{n.free_cpus:g} of {n.total_cpus:g} CPUs free"
        for n in nodes
    ]
    return "\n".join(lines) if lines else "  (no alive node)"


def assign(free: list[float], needs: list[float], mode: str) -> list[int] | None:
    """The node index of each actor (needing ``needs[i]`` CPUs) over nodes with ``free`` CPUs laid
    out by ``mode``; None if they do not fit."""
    left, count, where = list(free), [0] * len(free), []
    for need in needs:
        fits = [n for n in range(len(left)) if left[n] + 1e-9 >= need]
        if mode == "strict_spread":
            fits = [n for n in fits if count[n] == 0]
        if not fits:
            return None
        if mode == "pack":  # the node already used most, then the one with most room (fewest nodes)
            n = min(fits, key=lambda n: (-count[n], -left[n]))
        else:  # the node used least, then the one with most room
            n = min(fits, key=lambda n: (count[n], -left[n]))
        left[n] -= need
        count[n] += 1
        where.append(n)
    return where


def plan_cpus(
    nodes: list[Node],
    num_workers: int,
    threads: int | None,
    max_threads: int,
    mode: str,
    exclude_driver: bool,
    overwork: bool,
) -> tuple[list[float], list[int], list[str]] | None:
    """(CPUs, threads, node ids) of each actor, or None if they do not fit. ``threads`` None: a native actor's
    share of its node's free CPUs (at most ``max_threads``); otherwise each actor asks for
    ``threads`` CPUs, and with ``overwork`` for the largest fraction that fits."""
    free = [0.0 if (exclude_driver and n.driver) else n.free_cpus for n in nodes]
    if threads is None:  # one CPU each to lay them out, then each node's free CPUs shared out
        where = assign(free, [1.0] * num_workers, mode)
        if where is None:
            return _overworked(nodes, free, num_workers, mode, 1, overwork)
        on_node = [where.count(n) for n in range(len(free))]
        per = [max(1, min(max_threads, int(free[n] // on_node[n]))) for n in where]
        return [float(t) for t in per], per, [nodes[n].node_id for n in where]
    need = float(max(1, threads))
    where = assign(free, [need] * num_workers, mode)
    if where is not None:
        return [need] * num_workers, [threads] * num_workers, [nodes[n].node_id for n in where]
    return _overworked(nodes, free, num_workers, mode, threads, overwork)


def _overworked(nodes, free, num_workers, mode, threads, overwork):
    """With overwork=True: the largest equal share of a CPU per actor that fits (actors then share
    CPUs); otherwise None."""
    if not overwork:
        return None
    share = sum(free) / num_workers
    cpus = math.floor(share * 1e4) / 1e4 if share < 1 else float(math.floor(share))
    while cpus >= _CPU_GRAIN and (where := assign(free, [cpus] * num_workers, mode)) is None:
        cpus = math.floor(cpus / 2 * 1e4) / 1e4 if cpus <= 1 else float(math.ceil(cpus) - 1)
    if cpus < _CPU_GRAIN:
        return None
    return [cpus] * num_workers, [max(1, threads)] * num_workers, [nodes[n].node_id for n in where]


def reserve(
    ray, cpus: list[float], where: list[str], mode: str, options: dict, nodes: list[Node], exclude_driver: bool
):
    """The placement group of one bundle per actor (CPUs plus the actors' own resources), each on
    the node the plan chose (``where``: node ids), ready; an APIUsageError with the node table if
    Ray cannot reserve it in RESERVE_TIMEOUT_S."""
    from ray.util import placement_group, placement_group_table, remove_placement_group

    extra = dict(options.get("resources") or {})
    if options.get("num_gpus"):
        extra["GPU"] = options["num_gpus"]
    missing = sorted(name for name in extra if not any(name in n.resources for n in nodes))
    if missing:
        raise APIUsageError(f"no node of the Ray cluster has the resource(s) {missing} that ray_actor_options asks for")
    bundles = [{"CPU": c, **extra} for c in cpus]
    label = dict(options.get("label_selector") or {})
    kwargs = {}
    if "bundle_label_selector" in inspect.signature(placement_group).parameters:
        kwargs["bundle_label_selector"] = [{**label, NODE_LABEL: node_id} for node_id in where]
    elif label or exclude_driver:
        raise APIUsageError(
            f"this Ray ({ray.__version__}) cannot pin bundles to nodes (its placement groups take no "
            "bundle_label_selector): label_selector and exclude_driver_node need a newer Ray"
        )
    try:
        group = placement_group(bundles, strategy=_PG_STRATEGY[mode], **kwargs)
    except (ValueError, TypeError) as exc:
        raise APIUsageError(f"Ray refused the placement group {bundles}: {exc}") from exc
    if not group.wait(timeout_seconds=RESERVE_TIMEOUT_S):
        remove_placement_group(group)
        raise APIUsageError(
            f"Ray could not reserve {len(bundles)} bundle(s) {bundles[0]} (placement {mode!r}) within "
            f"{RESERVE_TIMEOUT_S:g} s; the cluster's nodes when shoal planned them:\n{node_table(nodes)}"
        )
    if not kwargs:  # Ray chose the nodes: where the bundles went
        where[:] = [
            placement_group_table(group)["bundles_to_node_id"].get(i, node_id) for i, node_id in enumerate(where)
        ]
    return group


def not_enough(
    num_workers: int, threads, native: bool, mode: str, exclude_driver: bool, nodes: list[Node]
) -> APIUsageError:
    """The error of a plan that does not fit: what was asked, every node's free CPUs, what to change."""
    if threads is None:
        each = "1 CPU (one thread at least)"
    else:
        each = f"{max(1, threads):g} CPU(s){' (max_num_threads)' if native else ''}"
    where = {"spread": "", "pack": "", "strict_spread": ", one actor per node"}[mode]
    driver = ", the driver's node excluded" if exclude_driver else ""
    return APIUsageError(
        f"num_workers ({num_workers}) actors of {each} do not fit the free CPUs of the Ray cluster "
        f"(placement {mode!r}{where}{driver}):\n{node_table(nodes)}\n"
        "Use fewer workers or threads, free CPUs (close other vectors), or set overwork=True to share "
        "the CPUs out."
    )


def actor_strategy(plan: Plan, w: int):
    """The scheduling strategy of actor w in its bundle of the plan's placement group."""
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return PlacementGroupSchedulingStrategy(plan.placement_group, placement_group_bundle_index=w)


def node_strategy(node_id: str):
    """A strategy that puts an actor on that node or nowhere (a replacement placed away from a failure)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)
