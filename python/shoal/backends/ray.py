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
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
import weakref

import numpy as np

from ..buffers import Buffers
from ..errors import APIUsageError, EnvError, WorkerError
from ..native import check_threads, is_native_env, native_env_class
from ..validation import check_bool, check_ray_address
from .base import EnvLists
from .caller_side.faults import CLOSE_TIMEOUT_S, MIN_ACTOR_START_S, creation_timeout
from .caller_side.ray_data_path import RayDataPath
from .caller_side.ray_session import Actors, connect
from .caller_side.worker_backend import WorkerBackend
from .closing import BoundedClose, raise_failures
from .interrupts import guarded, signals_held
from .ray_elastic import ELASTIC, ElasticWorkers, check_ray_on_worker_failure
from .ray_placement import (
    SETTLE_S,
    Plan,
    WorkerNode,
    actor_strategy,
    check_actor_options,
    check_exclude_driver_node,
    check_placement,
    cluster_nodes,
    node_strategy,
    node_table,
    not_enough,
    plan_cpus,
    reserve,
)
from .ray_recovery import (
    ATTEMPTS,
    BACKOFF_S,
    HEARTBEAT_AFTER_S,
    RELEASE_WAIT_S,
    Heartbeat,
    NodeHistory,
    no_room,
    node_answers,
    replacement_node,
)
from .wire.blocks import block_buffers
from .wire.messages import Failure
from .wire.step_rows import StepRows
from .worker_side.ray_actor import HEALTH_GROUP, actor_class

# Granularity of the caller's waits on in-flight results (Ray itself reports actor deaths).
WAIT_S = 1.0
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


class Ray(WorkerBackend):
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

    # -- construction helpers ----------------------------------------------------------------------

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

    def _next_batch(self) -> list[int]:
        ray = self._ray
        if any(self._data_path.is_graph_ref(self._refs[w]) for w in self._busy):
            for w in list(self._busy):  # full sync through compiled graphs: each actor's result in turn
                self._complete(w, self._get_one(w))
        if (
            self.workers_per_batch == self.num_workers
            and len(self._busy) == self.num_workers
            and self.timeout is None
            and not any(self._data_path.is_graph_ref(self._refs[w]) for w in self._busy)
        ):
            # Full sync: one ray.get for every actor once all are in (a dead actor's result is its
            # error); calls still out after HEARTBEAT_AFTER_S go through the loop, which checks liveness.
            refs = [self._refs[w] for w in self._busy]
            if len(ray.wait(refs, num_returns=len(refs), timeout=HEARTBEAT_AFTER_S)[0]) == len(refs):
                self._collect(list(self._busy), ray.get)
        while True:
            if self._busy and self._watch.due():
                self._check_in_flight()  # even while the other actors keep answering
            batch = self._batches.select()
            if batch is not None:
                return batch
            if not self._busy:
                raise RuntimeError("Ray: no actor in flight and no batch ready (internal error)")
            if not self._collect_done(self._deadlines.wait_slice(self._busy, WAIT_S)):
                self._fail_late()

    def _check_in_flight(self) -> None:
        """Takes the results that are in (a dead actor's is its error), then fails a late actor."""
        self._collect_done(0)
        self._fail_late()

    def _collect_done(self, timeout: float) -> bool:
        """Collects every finished call, waiting up to ``timeout`` for one if none is; False if none."""
        ray, refs = self._ray, [self._refs[w] for w in self._busy]
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        if not done and timeout > 0:
            done, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if done:
            finished = set(done)
            self._collect([w for w in self._busy if self._refs[w] in finished], ray.get)
        return bool(done)

    def _fail_late(self) -> None:
        """Fails an actor past its deadline, else one that did not answer a liveness check."""
        late = self._deadlines.late(self._busy)
        if late is not None:
            self._complete(late[0], self._late(late[0]))
            return
        busy = self._busy if self._elastic is None else [w for w in self._busy if w not in self._elastic]
        silent = self._heartbeat.silent(busy, self._deadlines.started, self._ping)
        if silent is not None:
            self._complete(silent, self._failed_result(silent, self._heartbeat.reason()))

    def _silent(self, w: int):
        """Actor w's failed result if it did not answer a liveness check, else None (while its graph
        result is out)."""
        if self._heartbeat.silent([w], self._deadlines.started, self._ping) is None:
            return None
        return self._failed_result(w, self._heartbeat.reason())

    def _ping(self, w: int):
        return self._handles[w].ping.options(concurrency_group=HEALTH_GROUP).remote()

    def _collect(self, workers: list[int], get) -> None:
        """Moves finished actors from busy to ready with their results; raises their failures."""
        refs = [self._refs[w] for w in workers]
        try:
            results = get(refs)
        except self._RayError:
            results = None  # find which actor failed, below
        for i, w in enumerate(workers):
            self._complete(w, self._get_one(w) if results is None else results[i])

    def _complete(self, w: int, result: tuple) -> None:
        """Moves actor w from busy to ready with its result ``(block, infos, failure)``; raises its failure."""
        self._busy.remove(w)
        self._refs[w] = None
        block, infos, failure = result
        self._raise_failure(w, failure)
        self._blocks[w] = block
        self._worker_infos[w] = infos
        self._batches.completed(w)

    def _raise_failure(self, w: int, failure: Failure | None) -> None:
        if failure is not None:
            raise failure.step_error(w, self._env_range(w), self._origin(w))

    def _origin(self, w: int) -> str:
        node = self.worker_nodes[w]
        return f"Ray actor {w} (pid {self.worker_pids[w]} on {self.worker_hosts[w]}, node {node.node_id[:12]} at {node.address})"

    def _get_one(self, w: int):
        timeout = None
        if self.timeout is not None:
            timeout = max(0.0, self._deadlines.started[w] + self.timeout - time.monotonic())
        try:
            return self._data_path.get(w, self._refs[w], timeout, lambda: self._silent(w))
        except self._GetTimeoutError:
            return self._late(w)
        except self._RayActorError as exc:
            return self._failed_result(w, "died", detail=f"\n{exc}")
        except self._RayError as exc:
            # The actor lives but Ray could not deliver its result (e.g. infos that do not pickle).
            raise EnvError(
                f"worker {w} (envs {self._env_range(w)}): Ray could not return its result: "
                f"{type(exc).__name__}: {exc}\nCall reset() before stepping again."
            ) from exc

    def _drain(self) -> None:
        while self._busy:
            w = self._busy[0]
            failure = self._get_one(w)[2]
            self._busy.remove(w)
            self._refs[w] = None
            self._raise_failure(w, failure)

    def _late(self, w: int) -> tuple:
        return self._failed_result(w, self._deadlines.reason(w))

    def _failed_result(self, w: int, reason: str, detail: str = "") -> tuple:
        """A dead or late actor's result (WorkerBackend._worker_failed): its replacement's reset
        stands in for the lost call's, as ``(block, infos, None)``."""
        infos = self._worker_failed(w, reason, detail)
        if self._elastic is not None:
            return self._lost_block, infos, None
        return self._blocks[w], infos, None

    def _worker_failed(self, w: int, reason: str, detail: str = "") -> list | None:
        if self._elastic is None:
            return super()._worker_failed(w, reason, detail)
        if self._order.closed:
            raise self._closed_while_waiting()
        return self._elastic.lose(w, f"{self._origin(w)} {reason}")

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
