"""``on_worker_failure="elastic"`` (Ray): the healthy actors keep stepping while a lost one's
replacement starts elsewhere.

A lost worker (dead, late, or silent to a liveness check) is not waited for: its replacement starts
on a healthy node (ray_recovery.py) and, until it has built its envs, each call to the lost worker
is answered at once by a stand-in result: its rows carry ``masks`` False (ignore them), zero
observations and rewards, ``truncations`` True, and its infos one ``{"worker_lost": {...}}`` entry
naming the worker, its envs, why, and for how long. The first call after the replacement is ready
resets its envs (from ``restart_seed``, or from a reset's own seed when that call is a reset) and
answers with those rows, as ``on_worker_failure="restart"`` does (truncated, a ``worker_restart``
entry). A replacement that fails, or is not ready within the creation limit, is retried on another
node; when no healthy node is left or the attempts run out, the vector closes with a WorkerError.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import APIUsageError, WorkerError
from ..seeding import offset_seed, restart_seed
from .caller_side.deadlines import FAILURE_POLICIES
from .caller_side.restart import mark_restarted, restart_info
from .ray_recovery import ATTEMPTS
from .wire.blocks import block_buffers, block_size

ELASTIC = "elastic"
RAY_FAILURE_POLICIES = (*FAILURE_POLICIES, ELASTIC)


def check_ray_on_worker_failure(policy) -> str:
    if policy not in RAY_FAILURE_POLICIES:
        raise APIUsageError(f"on_worker_failure must be one of {list(RAY_FAILURE_POLICIES)}, got {policy!r}")
    return policy


@dataclass
class Pending:
    """A lost worker's replacement while it starts."""

    reason: str
    since: float  # when the worker was lost
    not_before: float = 0.0  # when its replacement may start
    attempts: int = 0
    handle: object = None
    ready: object = None  # the ref of its ready() call
    started: float = 0.0
    stand_in: object = None  # the ref of the stand-in result (put once)
    node: object = None  # where the replacement starts (ray_placement.Node)


class ElasticWorkers:
    """The lost workers of one Ray vector (``vec``) and their replacements."""

    def __init__(self, vec):
        self.vec = vec
        self.lost: dict[int, Pending] = {}

    def __contains__(self, w: int) -> bool:
        return w in self.lost

    def lose(self, w: int, reason: str) -> list:
        """Worker w failed: kill it, start its replacement; the infos of the lost call."""
        vec = self.vec
        vec._kill(w)
        vec._history.failed(vec.worker_nodes[w].node_id)
        backoff = vec._restart_budget.charge(w)  # the shared restart budget (caller_side/restart.py)
        if backoff is None:
            vec._kill_on_close([w])
            vec._fail(
                WorkerError(
                    f"{reason}; it held envs {vec._env_range(w)}. It was not replaced: it was replaced "
                    f"{vec._restart_budget.spent(w)} times already, the most {vec._restart_budget.describe()} "
                    "allows. The vector env is closed."
                )
            )
        now = time.monotonic()
        pending = self.lost[w] = Pending(reason, now, not_before=now + backoff)
        if backoff <= 0:
            self._start(w, pending)
        return self._lost_infos(w, pending)

    def lost_block(self) -> np.ndarray:
        """A worker's rows as a stand-in result carries them."""
        vec = self.vec
        space, actions, rows = vec.single_observation_space, vec.single_action_space, vec.rows_per_worker
        block = np.zeros(max(block_size(space, actions, rows), 1), dtype=np.uint8)
        buf = block_buffers(block, space, actions, rows)[0]
        buf.masks[:] = False
        buf.truncations[:] = True
        return block

    def call(self, w: int, seed: int | None):
        """The ref that answers a call to lost worker w (a step, or a reset with ``seed``): its
        rejoining replacement's reset, or a stand-in result while it starts."""
        vec, pending = self.vec, self.lost[w]
        if pending.handle is None:  # backing off (the restart budget's delay)
            if time.monotonic() >= pending.not_before:
                self._start(w, pending)
        elif self._is_ready(w, pending):
            return self._rejoin(w, pending, seed)
        if pending.stand_in is None:
            pending.stand_in = vec._ray.put((self.lost_block(), self._lost_infos(w, pending), None))
        return pending.stand_in

    # -- inside ---------------------------------------------------------------------------------------

    def _lost_infos(self, w: int, pending: Pending) -> list:
        envs = range(*self.vec._layout.env_slice(w).indices(self.vec.num_envs))
        return [{"worker_lost": {"worker": w, "envs": list(envs), "reason": pending.reason}}]

    def _start(self, w: int, pending: Pending) -> None:
        """Starts an attempt at a replacement on a healthy node; a WorkerError when none is left."""
        vec = self.vec
        if pending.attempts >= ATTEMPTS:
            vec._fail(WorkerError(f"worker {w}: {ATTEMPTS} replacement attempts failed, each on another node"))
        pending.attempts += 1
        try:
            node, strategy = vec._replacement_node(w)
        except WorkerError as exc:
            vec._fail(exc)
        pending.handle = vec._host(w, strategy).remote(*vec._actor_args[w])
        vec._actors.starting.append(pending.handle)  # a close() meanwhile kills it too
        pending.ready, pending.started = pending.handle.ready.remote(), time.monotonic()
        pending.node = node

    def _is_ready(self, w: int, pending: Pending) -> bool:
        """Whether the replacement has built its envs; a failed or overdue one is retried elsewhere."""
        vec = self.vec
        done = vec._ray.wait([pending.ready], timeout=0)[0]
        if not done:
            if time.monotonic() - pending.started > vec._creation_limit():
                self._retry(w, pending)
            return False
        try:
            pid, host, count, failure, node_id = vec._ray.get(pending.ready)
        except vec._RayError:
            self._retry(w, pending)
            return False
        vec._ready_count(w, vec._origin(w), count, failure)  # an env that cannot be built: EnvError
        vec._actors.starting.remove(pending.handle)
        vec._handles[w] = pending.handle
        vec.worker_pids[w], vec.worker_hosts[w] = pid, host
        vec.worker_nodes[w] = vec._worker_node(node_id)
        return True

    def _retry(self, w: int, pending: Pending) -> None:
        vec = self.vec
        vec._ray.kill(pending.handle, no_restart=True)
        vec._actors.starting.remove(pending.handle)
        vec._history.failed(pending.node.node_id)
        pending.stand_in = None
        self._start(w, pending)

    def _rejoin(self, w: int, pending: Pending, seed: int | None):
        """Resets the ready replacement (synchronously: one reset of a fresh actor) and answers
        the call with its rows, marked as a restart's."""
        vec = self.vec
        del self.lost[w]
        vec._restarts[w] += 1
        if seed is None:
            seed = offset_seed(restart_seed(vec._reset_seed, vec._restarts[w]), vec._first_envs[w])
        try:
            block, infos, failure = vec._ray.get(vec._handles[w].reset.remote(seed), timeout=vec._creation_limit())
        except vec._RayError as exc:
            pending.reason = f"its replacement failed its first reset: {type(exc).__name__}: {exc}"
            self.lost[w] = pending
            self._retry(w, pending)
            return self.call(w, seed)
        if failure is not None:
            vec._fail(
                WorkerError(f"worker {w} could not rejoin: {failure.step_error(w, vec._env_range(w), vec._origin(w))}")
            )
        block = block.copy()  # Ray's is a read-only view of the object store
        mark_restarted(
            block_buffers(block, vec.single_observation_space, vec.single_action_space, vec.rows_per_worker)[0],
            slice(None),
        )
        envs = range(*vec._layout.env_slice(w).indices(vec.num_envs))
        lost_for = time.monotonic() - pending.since
        reason = f"{pending.reason} (its rows were masked for {lost_for:.1f} s)"
        return vec._ray.put((block, [*infos, restart_info(w, envs, vec._restarts[w], reason)], None))
