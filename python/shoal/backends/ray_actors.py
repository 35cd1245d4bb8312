"""Ray's actors: their CPUs planned, the actors started and awaited (the handshake), killed, and replaced."""

from __future__ import annotations

import contextlib
import dataclasses
import time

from ..errors import APIUsageError, WorkerError
from .caller_side.faults import MIN_ACTOR_START_S, creation_timeout
from .ray_placement import (
    SETTLE_S,
    Plan,
    WorkerNode,
    actor_strategy,
    cluster_nodes,
    node_strategy,
    node_table,
    not_enough,
    plan_cpus,
    reserve,
)
from .ray_recovery import ATTEMPTS, BACKOFF_S, RELEASE_WAIT_S, no_room, node_answers, replacement_node
from .wire.blocks import block_buffers
from .worker_side.ray_actor import actor_class


class RayActors:
    """Ray's actor lifecycle (and WorkerBackend's replacement hooks): each actor's CPUs and threads
    (ray_placement.py), its options, the wait for its envs, its kill, and a replacement on a healthy
    node (ray_recovery.py)."""

    def _plan_cpus(self, ray, max_num_threads) -> Plan:
        """Each actor's CPUs and threads, reserved in one placement group (unless the user's
        scheduling_strategy places the actors); an APIUsageError with the node table if they do not fit."""
        threads = None if self.native and max_num_threads in (None, "auto") else (max_num_threads if self.native else 1)
        deadline = time.monotonic() + SETTLE_S
        while True:
            nodes = cluster_nodes(ray)
            fit = plan_cpus(
                nodes,
                self.num_workers,
                threads,
                self.envs_per_worker,
                self.placement,
                self.exclude_driver_node,
                self.overwork,
            )
            if fit is not None:
                break
            if time.monotonic() >= deadline:  # CPUs a closed vector held are free within a moment
                raise not_enough(
                    self.num_workers, threads, self.native, self.placement, self.exclude_driver_node, nodes
                )
            time.sleep(0.25)
        self._addresses = {n.node_id: n.address for n in nodes}
        cpus, per_actor, where = fit
        if "scheduling_strategy" in self._actor_options:
            return Plan(cpus, per_actor)  # the user's strategy places the actors
        return Plan(
            cpus,
            per_actor,
            reserve(ray, cpus, where, self.placement, self._actor_options, nodes, self.exclude_driver_node),
            where,
        )

    def _host(self, w: int, strategy=None):
        """The actor class with actor w's options: its CPUs, its bundle (or ``strategy``), the user's options."""
        plan = self._plan
        if strategy is None and plan.placement_group is not None:
            strategy = actor_strategy(plan, w)
        options = {**self._actor_options, "num_cpus": plan.cpus[w], "max_restarts": 0, "max_task_retries": 0}
        if strategy is not None:
            options["scheduling_strategy"] = strategy
        try:
            return actor_class(self._ray).options(**options)
        except (ValueError, TypeError) as exc:
            raise APIUsageError(f"Ray refused the actor options {self._actor_options}: {exc}") from exc

    def _await_ready(self, workers: list[int]) -> list[int]:
        """The handshake, at construction and for a replacement: waits for the actors of ``workers``
        to build their envs; records their pids and hosts, returns their internal env counts."""
        ray, handles = self._ray, self._handles
        refs = [handles[w].ready.remote() for w in workers]
        limit = creation_timeout(self.timeout, MIN_ACTOR_START_S)
        try:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=limit)
        except self._RayError as exc:
            raise WorkerError(f"Ray could not start the actors: {exc}") from exc
        if len(ready) < len(refs):
            for w, ref in zip(workers, refs):
                if ref not in ready:
                    self._kill(w)
            raise WorkerError(
                f"{len(refs) - len(ready)} of {len(refs)} Ray actors had not built their envs within the "
                f"creation limit ({limit:g} s) and were killed; the cluster's nodes now:\n"
                f"{node_table(cluster_nodes(ray))}"
            )
        counts = []
        for w, ref in zip(workers, refs):
            try:
                pid, host, count, failure, node_id = ray.get(ref)
            except self._RayError as exc:
                raise WorkerError(f"Ray actor {w} died while creating envs {self._env_range(w)}: {exc}") from exc
            self.worker_pids[w], self.worker_hosts[w] = pid, host
            self.worker_nodes[w] = self._worker_node(node_id)
            counts.append(self._ready_count(w, self._origin(w), count, failure))
        return counts

    def _kill_on_close(self, workers) -> None:
        self._actors.kill_now.update(workers)
        self._actors.failed = True  # and the shutdown of shoal's Ray instance does not hold the error up

    def _kill(self, w: int) -> None:
        with contextlib.suppress(Exception):  # already gone
            self._ray.kill(self._handles[w], no_restart=True)

    def _address_of(self, node_id: str) -> str:
        if node_id not in self._addresses:
            self._addresses.update((n["NodeID"], n.get("NodeManagerAddress", "?")) for n in self._ray.nodes())
        return self._addresses.get(node_id, "?")

    def _worker_node(self, node_id: str) -> WorkerNode:
        return WorkerNode(node_id, self._address_of(node_id))

    def _creation_limit(self) -> float:
        return creation_timeout(self.timeout, MIN_ACTOR_START_S)

    def _replacement_node(self, w: int, error=None):
        """(node, scheduling strategy) of worker w's replacement: a healthy node (ray_recovery.py),
        in w's own bundle where the node is the bundle's (its CPUs are held for w, not free); a
        WorkerError if no node has room."""
        plan, cpus = self._plan, self._plan.cpus[w]
        bundle_node = plan.where[w] if plan.where is not None else None
        # Ray frees a dead actor's CPUs only once it has seen the death (a second or more on a busy
        # machine): a node that lacks room now is asked again until RELEASE_WAIT_S has passed.
        deadline = time.monotonic() + RELEASE_WAIT_S
        while True:
            nodes = cluster_nodes(self._ray)
            seen = [
                dataclasses.replace(n, free_cpus=n.free_cpus + cpus) if n.node_id == bundle_node else n for n in nodes
            ]
            node = replacement_node(seen, self._history, cpus, lambda node_id: node_answers(self._ray, node_id))
            if node is not None:
                break
            if time.monotonic() > deadline:
                raise WorkerError(
                    no_room(w, cpus, nodes, self._history) + (f"\nlast attempt: {error}" if error else "")
                )
            time.sleep(0.25)
        self._addresses[node.node_id] = node.address
        strategy = actor_strategy(plan, w) if node.node_id == bundle_node else node_strategy(node.node_id)
        return node, strategy

    def _replace(self, w: int) -> None:
        """A new actor for worker w on a healthy node (ray_recovery.py), retried elsewhere after a back-off."""
        self._kill(w)
        self._history.failed(self.worker_nodes[w].node_id)
        error = None
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)])
            node, strategy = self._replacement_node(w, error)
            self.worker_nodes[w] = WorkerNode(node.node_id, node.address)
            self._handles[w] = self._host(w, strategy).remote(*self._actor_args[w])
            try:
                self._await_ready([w])
                return
            except WorkerError as exc:  # the actor died or did not start there: that node is suspect too
                self._kill(w)
                self._history.failed(node.node_id)
                error = exc
        raise WorkerError(f"{ATTEMPTS} replacement attempts failed, each on another node; the last: {error}")

    def _reset_replacement(self, w: int, seed: int, reason: str):
        try:
            block, infos, failure = self._ray.get(self._handles[w].reset.remote(seed), timeout=self.timeout)
        except self._RayError as exc:
            self._fail(WorkerError(f"worker {w} could not be restarted: {type(exc).__name__}: {exc}"))
        if failure is not None:
            self._fail(
                WorkerError(
                    f"worker {w} could not be restarted: {failure.step_error(w, self._env_range(w), self._origin(w))}"
                )
            )
        self._blocks[w] = block = block.copy()  # Ray's is a read-only view of the object store
        buffers = block_buffers(block, self.single_observation_space, self.single_action_space, self.rows_per_worker)[0]
        return infos, buffers, slice(None)
