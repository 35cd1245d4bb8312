"""Ray: envs in Ray actors, on this machine or across a cluster, with the Multiprocessing API.

Placement. ``num_workers`` actors each host ``num_envs / num_workers`` consecutive envs: the slice
runner Serial uses for Python envs (Gymnasium, PettingZoo, PufferEnv), or one native vector for
``shoal.native.NativeEnv`` classes, stepped by shoal's thread pool inside the actor
(``max_num_threads`` threads per actor; default: its share of its node's free CPUs). An actor asks
Ray for one CPU per thread. Where the actors go (``placement``, ``exclude_driver_node``,
``ray_actor_options``) is planned over each node's free CPUs and reserved in one placement group
(ray_placement.py); actors that do not fit are an APIUsageError at once, with every node's CPUs,
unless ``overwork=True`` (then the CPUs are shared out fractionally). ``worker_nodes`` says where
each actor runs.

Data. Each actor owns one byte block carved into its rows' buffers (observations, final
observations, actions, rewards, terminals, truncations, masks), so a step returns that one array.
Ray hands it to the caller as a read-only view of the object store (no copy beyond Ray's own), and
the caller copies it once into its preallocated buffers: ``vecenv.buf`` (every row) or, for
non-contiguous batches (``zero_copy=False``), a batch buffer. Returned arrays keep shoal's dtypes
and shapes. ``vecenv.final_observations`` holds the final observations of the rows last returned.

Seeds. Actor ``w`` resets its sub-vector with ``offset_seed(seed, k)`` where ``k`` is the global
index of its first env, so every env sees the stream it sees under Serial (bit-identical results).

Batching (PufferLib 3.0 semantics, as Multiprocessing): all actors (full sync); the first ready
actor (one per batch); aligned blocks of consecutive actors (``zero_copy=True``); the first ready
actors in any order (``zero_copy=False``); ``sync_traj=True`` returns actors in the order they were
sent.

Connection. A process already connected to Ray (``ray.init`` by the user) keeps that connection
(``ray_address`` is then not used); otherwise ``ray_address`` joins that cluster, and no address
starts a local Ray instance. ``close()`` kills the actors it created and
stops only what it started: the local instance (when no other shoal vector still uses it), or this
process's connection to a joined cluster. A cluster it joined keeps running.

Faults. An actor that dies raises ``WorkerError`` from the pending call (Ray reports the death,
typically within a second) and closes the vector; an exception in env code raises ``EnvError``
naming the worker and the env with the actor's traceback, after which ``reset()`` is required.
``timeout`` bounds each call (a late actor is killed: ``WorkerError``; looked for every 0.1 s even
while other actors answer); without a ``timeout`` a call in flight for a second gets a liveness check,
and an actor silent for 5 s is lost (a frozen node). ``on_worker_failure="restart"`` replaces a lost
actor instead, on a node away from the failure (ray_recovery.py); ``"elastic"`` lets the others step on
while the replacement starts (ray_elastic.py). Creation has a limit (caller_side/faults.py); a forked child cannot drive the
actors (caller_side/ownership.py). After an
interrupted call the next reset forgets the calls in flight: an actor runs its calls in order, so
their results can only precede the reset's, and none is read.

The class mixes in ray_actors.py (the actors' CPUs, start, handshake, kill and replacement) and
ray_results.py (the calls in flight: waiting, liveness and deadlines, results and failures).
"""

from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from ..buffers import Buffers
from ..errors import APIUsageError
from ..interrupts import guarded, signals_held
from ..native import check_threads, is_native_env, native_env_class
from ..validation import check_bool, check_ray_address
from .base import EnvLists
from .caller_side.faults import CLOSE_TIMEOUT_S
from .caller_side.ray_data_path import RayDataPath
from .caller_side.ray_session import Actors, connect
from .caller_side.worker_backend import WorkerBackend
from .closing import BoundedClose, raise_failures
from .ray_actors import RayActors
from .ray_elastic import ELASTIC, ElasticWorkers, check_ray_on_worker_failure
from .ray_placement import WorkerNode, check_actor_options, check_exclude_driver_node, check_placement
from .ray_recovery import Heartbeat, NodeHistory
from .ray_results import WAIT_S, RayResults
from .wire.blocks import block_buffers
from .wire.step_rows import StepRows

__all__ = ["RESULT_FIELDS", "WAIT_S", "Ray", "import_ray"]

RESULT_FIELDS = ("observations", "final_observations", "rewards", "terminals", "truncations", "masks")


def import_ray():
    """The ray module, or an APIUsageError naming the optional extra that installs it."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise APIUsageError(
            "backend Ray needs the optional dependency ray: pip install 'ray>=2.9' "
            f"(or, in shoal's source folder, pip install '.[ray]'); importing it failed: {exc}"
        ) from exc
    return ray


# ---------------------------------------------------------------------------------------------------
# Caller side
# ---------------------------------------------------------------------------------------------------


class Ray(RayResults, RayActors, WorkerBackend):
    """Envs in ``num_workers`` Ray actors; results bit-identical, env by env, to Serial.

    ``worker_pids`` / ``worker_hosts`` / ``worker_nodes``: process id, host name and (node id,
    address) of each actor, in worker order.
    ``max_num_threads``: the most pool threads of an actor, ``worker_threads`` each actor's (native
    envs; None for Python envs).
    ``timeout`` and ``on_worker_failure``: as Multiprocessing's (an actor is a worker), plus "elastic".
    """

    def _build(
        self,
        envs: EnvLists,
        num_envs: int,
        seed: int,
        *,
        ray_address: str | None = None,
        max_num_threads=None,
        timeout: float | None = None,
        on_worker_failure: str = "raise",
        placement: str = "spread",
        exclude_driver_node: bool = False,
        ray_actor_options: dict | None = None,
        compiled_graphs: bool = False,
        **worker_options,
    ) -> None:
        env_creators, env_args, env_kwargs = envs
        # Cores are the cluster's, checked once connected; worker_layout checks the rest now.
        self._configure_workers(num_envs, seed, worker_options, limit_to_cores=False)
        elastic = check_ray_on_worker_failure(on_worker_failure) == ELASTIC
        # The shared layer knows raise and restart; elastic is Ray's own (ray_elastic.py).
        self._configure_failures(timeout, "restart" if elastic else on_worker_failure)
        self.on_worker_failure = on_worker_failure
        check_ray_address(ray_address)
        self.native = is_native_env(env_creators[0])
        if self.native:
            native_env_class(env_creators, env_args, env_kwargs, "Ray")
            if max_num_threads not in (None, "auto"):
                max_num_threads = check_threads(max_num_threads)
        elif max_num_threads is not None:
            raise APIUsageError(
                "max_num_threads sets the native thread pool of each Ray actor and applies to "
                "native envs (shoal.native.NativeEnv classes) only; Python envs run one per "
                f"actor thread. Got max_num_threads={max_num_threads!r} with "
                f"{getattr(env_creators[0], '__name__', env_creators[0])!r}"
            )
        self.ray_address = ray_address
        self.placement = check_placement(placement)
        self.compiled_graphs = check_bool(compiled_graphs, "compiled_graphs")
        self.exclude_driver_node = check_exclude_driver_node(exclude_driver_node)
        self._actor_options = check_actor_options(ray_actor_options)

        ray = self._ray = import_ray()
        from ray.exceptions import GetTimeoutError, RayActorError, RayError

        self._GetTimeoutError, self._RayActorError, self._RayError = GetTimeoutError, RayActorError, RayError

        self._probe_driver(env_creators[0], env_args[0], env_kwargs[0])
        driver, rows, shape = self.driver_env, self.rows_per_worker, self._env_shape
        actors = self._actors = Actors(ray)
        self._finalizer = weakref.finalize(self, actors.shutdown)
        try:
            actors.connected = connect(ray, ray_address)
            graphs = self.compiled_graphs and self.workers_per_batch == self.num_workers
            self._data_path = RayDataPath(
                ray, shape.observation_space, shape.action_space, self.num_agents, self.num_workers, graphs
            )
            plan = self._plan = self._plan_cpus(ray, max_num_threads)
            actors.placement_group = plan.placement_group
            self.max_num_threads = max(plan.threads) if self.native else None
            self.worker_threads = list(plan.threads) if self.native else None
            self._history = NodeHistory()  # failures per node: replacements go elsewhere
            self._heartbeat = Heartbeat(ray)
            self._elastic = ElasticWorkers(self) if elastic else None
            caller_path = [os.path.abspath(p) for p in sys.path if p]
            # What each actor is built from, kept: a restart builds the actor again. The slices are
            # pickled here, so the actor can extend its import path before it unpickles.
            self._actor_args = [
                (
                    envs.pickled("backend Ray needs picklable env creators"),
                    caller_path,
                    self.native,
                    plan.threads[w],
                    shape,
                    self._emulate,
                    rows,
                    self._data_path.rows_spec,
                    w * rows,
                )
                for w, envs in enumerate(self._env_slices(env_creators, env_args, env_kwargs))
            ]
            for w, args in enumerate(self._actor_args):
                actors.handles.append(self._host(w).remote(*args))
            self._handles = actors.handles
            self.worker_pids, self.worker_hosts = [0] * self.num_workers, [""] * self.num_workers
            self.worker_nodes = [WorkerNode("", "")] * self.num_workers
            self._set_internal_envs(self._await_ready(list(range(self.num_workers))))
        except BaseException:
            with signals_held():  # a second interrupt does not cut the teardown short
                self._finalizer()
                driver.close()
            raise
        self.buf = self._data_path.buf  # the rows actors on this node step in (caller_side/ray_data_path.py)
        self._refs: list = [None] * self.num_workers  # in-flight call of each actor
        self._blocks: list = [None] * self.num_workers
        self._init_batches()
        self._data_path.prepare(self._handles)
        self._lost_block = self._elastic.lost_block() if self._elastic is not None else None

    @property
    def worker_paths(self) -> list[str]:
        """How each actor's steps travel, as it stands now: "graph" (a compiled graph) or "calls",
        and "shared rows" (it steps in this process's rows) or "rows copied" (its rows come back)."""
        return self._data_path.describe()

    # -- the API -----------------------------------------------------------------------------------

    def _send_batch(self, actions) -> None:
        shared, rows = self.buf.actions, self.rows_per_worker
        for i, w in enumerate(self._batch):
            worker_actions = shared[self._worker_rows[w]]
            np.copyto(worker_actions, actions[i * rows : (i + 1) * rows], casting="unsafe")
            # Ray serializes the actions as the call starts, so the rows may be reused right away.
            if self._elastic is not None and w in self._elastic:  # lost: answered without it
                self._dispatch(w, self._elastic.call(w, None))
                continue
            self._dispatch(w, self._data_path.step(w, self._handles[w], worker_actions))

    @guarded
    def recv(self):
        batch, infos = self._take_batch()
        if self._copy_mode:
            for i, w in enumerate(batch):
                d = slice(i * self.rows_per_worker, (i + 1) * self.rows_per_worker)
                self._unpack(w, self._batch_buf, d)
                self._batch_ids[d] = self._worker_ids[w]
            return self._batch_result(infos)
        for w in batch:
            self._unpack(w, self.buf, self._worker_rows[w])
        return self._block_result(batch[0] // self.workers_per_batch, infos)

    def _unpack(self, w: int, dst: Buffers, rows: slice) -> None:
        """Copies actor w's last result into rows of dst: a step's outputs (StepRows) or a reset's whole
        block (read-only views of Ray's memory), or, from an actor that steps in this process's rows
        (None), nothing unless dst is a batch buffer."""
        block, self._blocks[w] = self._blocks[w], None
        if block is None:  # the actor stepped in this process's rows
            if dst is not self.buf:
                for name in RESULT_FIELDS:
                    np.copyto(getattr(dst, name)[rows], getattr(self.buf, name)[self._worker_rows[w]])
            return
        if isinstance(block, StepRows):  # a step's outputs
            block.copy_into(dst, rows)
            return
        src = block_buffers(block, self.single_observation_space, self.single_action_space, self.rows_per_worker)[0]
        for name in RESULT_FIELDS:
            np.copyto(getattr(dst, name)[rows], getattr(src, name))

    # -- hand-off ----------------------------------------------------------------------------------

    def _dispatch_reset(self, w: int, seed: int) -> None:
        self._blocks[w] = None
        if self._elastic is not None and w in self._elastic:  # lost: answered without it
            self._dispatch(w, self._elastic.call(w, seed))
            return
        self._dispatch(w, self._handles[w].reset.remote(seed))

    def _dispatch(self, w: int, ref) -> None:
        self._deadlines.dispatched(w)
        self._refs[w] = ref
        self._dispatched(w)

    def _origin(self, w: int) -> str:
        node = self.worker_nodes[w]
        return f"Ray actor {w} (pid {self.worker_pids[w]} on {self.worker_hosts[w]}, node {node.node_id[:12]} at {node.address})"

    def _resync(self) -> None:
        # An actor runs its calls in order, so a reset sent now lands after anything in flight;
        # forgetting the old calls' references drops their results.
        self._busy, self._refs, self._needs_resync = [], [None] * self.num_workers, False
        self._data_path.actors_changed()  # graphs torn down: no step of theirs runs beside the reset

    def _close(self) -> None:
        driver = BoundedClose("driver env", self.driver_env)  # closes while the actors do
        # Graphs of live actors end before the actors do; a stuck actor's would wait for its step.
        self._data_path.actors_changed([w for w in range(self.num_workers) if w not in self._actors.kill_now])
        failures = self._finalizer() or []
        self._data_path.close()
        raise_failures(type(self).__name__, failures + driver.wait(CLOSE_TIMEOUT_S))
