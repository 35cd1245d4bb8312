"""Multiprocessing: one OS process per worker, each running Serial's slice runner over its envs.

Memory. Every buffer (observations, final observations, actions, rewards, terminals, truncations,
masks) and the per-worker control bytes live in ONE shared mapping (wire/shared_mapping.py): an
unlinked file (a memfd on Linux), so nothing named can leak, released in C with its last view (no
finalizer an interrupt could cut): the memory goes away with the last process that maps it. Workers
write results straight into their rows.

Hand-off protocol (per worker ``w``; no busy-waiting beyond a bounded spin):

* caller -> worker: the caller writes the actions into the shared rows, sets ``state[w] = BUSY``
  and ``command[w]``, then posts ``command_sems[w]`` once per command. The worker waits for that
  semaphore: ``WORKER_SPIN_S`` of try-acquire + sched_yield, then a blocking acquire that wakes every
  ``PARENT_CHECK_S`` to exit if the caller died.
* worker -> caller: the worker writes its results, sets ``state[w]`` to IDLE (nothing to say),
  INFOS (its pickled infos are in its shared mailbox, ``MAILBOX_BYTES``) or MESSAGE (large infos or an
  error follow on its pipe), posts the shared ``done_sem``, then sends a pipe message if any. So a
  step costs no system call beyond the semaphore posts and the wake-ups of sleepers.
* the caller scans ``state`` of its outstanding workers; while a batch is incomplete it takes one
  ``done_sem`` count per completion the batch still lacks: ``RECV_SPIN_S`` of try-acquire +
  sched_yield, then blocking acquires of ``LIVENESS_CHECK_S`` with a liveness check of the
  outstanding workers after each (a dead worker is a WorkerError within that time).
* ``done_sem`` stays balanced: each completion the caller observes consumes one count (possibly
  later: ``_owed``), and a count taken while waiting pre-pays the next observed completion. So a count
  left in the semaphore always means a completion the caller has not seen: no lost wake-up, no drift.
  A wait that times out looks at the state words again, so a count lost with a dead worker (or taken
  by an interrupted wait) costs one ``LIVENESS_CHECK_S`` at most, never a hang.

Faults. Each wait is cut at ``LIVENESS_CHECK_S`` and at the earliest deadline of the busy workers
(``timeout``), and while batches keep coming from other workers the busy ones are looked at every
``LIVENESS_CHECK_S`` all the same (deadlines.Watch): a worker that died or is late is killed and
either raises WorkerError (the vector closes, killing the workers still in flight rather than
awaiting them) or is replaced (``on_worker_failure="restart"``: same rows, new process, envs reset
from the restart seed). Creation, first or replacement, has a limit too (caller_side/faults.py), and only
the creating process may drive the workers (caller_side/ownership.py). A call left by an unplanned exception (Ctrl-C) marks the vector for a resync: the next
reset waits for every worker to leave BUSY, reads and drops any unread pipe message (each carries the
worker's ``done_counts`` entry, so the caller knows which ones it has read), replaces a worker whose
message was half read, and empties ``done_sem``, so no old step can come back.

Batching (PufferLib 3.0 semantics): all workers (full sync); one worker per batch; contiguous blocks
of workers returned as views (``zero_copy=True``); the first ready workers copied into a batch buffer
(``zero_copy=False``); ``sync_traj=True`` returns workers in the order they were sent.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import sys
import time
import weakref

import numpy as np

from ..buffers import check_estimate, out_of_memory, python_vector_estimate
from ..errors import WorkerError
from ..interrupts import guarded, signals_held
from .base import EnvLists
from .caller_side.faults import (
    CLOSE_TIMEOUT_S,
    LIVENESS_CHECK_S,
    creation_reason,
    creation_timeout,
    exit_reason,
)
from .caller_side.process_pool import ProcessPool
from .caller_side.worker_backend import WorkerBackend
from .closing import BoundedClose, raise_failures
from .multiprocessing_completions import RECV_SPIN_S, ProcessCompletions
from .multiprocessing_recovery import ProcessRecovery
from .start_methods import check_start_method
from .wire.shared_mapping import SharedMapping
from .worker_side.process_worker import (
    CLOSE,
    IDLE,
    STEP,
    WORKER_SPIN_S,
    WorkerSpec,
    carve,
    shared_views,
    worker_main,
)

__all__ = ["CLOSE_TIMEOUT_S", "RECV_SPIN_S", "Multiprocessing", "default_start_method"]


# ---------------------------------------------------------------------------------------------------
# Caller side
# ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def parents_garbage_left_behind(forking: bool):
    """A forked worker never collects the objects it inherits (gc.freeze across the fork): a cycle the
    caller had not collected yet would otherwise be finalized in the worker, where a finalizer that
    talks to a library's threads or sockets (Ray's, gRPC's, which a fork does not carry over) can crash
    it. The caller's own collection goes on as before (gc.unfreeze right after)."""
    if not forking:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def default_start_method() -> str:
    return "fork" if sys.platform.startswith("linux") else "spawn"


class Multiprocessing(ProcessCompletions, ProcessRecovery, WorkerBackend):
    """Envs in worker processes (a slice of envs each) over shared memory; four batching modes.

    ``num_workers`` processes (default: physical cores) each own ``num_envs / num_workers`` envs.
    ``recv()`` returns ``batch_size`` envs' rows (``agents_per_batch``), ``send()`` steps exactly
    those. Results are bit-identical, env by env, to Serial with the same seed.

    ``timeout``: seconds a worker has, from dispatch, to finish a step or reset (None: no limit).
    ``on_worker_failure``: a worker that dies or misses its deadline raises WorkerError and closes the
    vector (``"raise"``), or is replaced and its envs reset (``"restart"``; see backends/caller_side/restart.py),
    at most ``max_restarts`` times per worker within ``restart_window`` seconds, then WorkerError.
    """

    python_envs_here = True

    def _build(
        self,
        envs: EnvLists,
        num_envs: int,
        seed: int,
        *,
        start_method: str | None = None,
        timeout: float | None = None,
        on_worker_failure: str = "raise",
        **worker_options,
    ) -> None:
        env_creators, env_args, env_kwargs = envs
        self._configure_workers(num_envs, seed, worker_options)
        self._configure_failures(timeout, on_worker_failure)
        if start_method is None:
            start_method = default_start_method()
        check_start_method(start_method)
        self.start_method = start_method
        self._context = context = multiprocessing.get_context(start_method)
        pool = self._pool = ProcessPool(CLOSE)
        self._finalizer = weakref.finalize(self, pool.shutdown)
        self.driver_env = None
        self._ready: list[int] = []  # internal env counts of the workers that reported ready
        try:
            self._probe_driver(env_creators[0], env_args[0], env_kwargs[0])
            shape = self._env_shape
            nbytes = carve(None, shape, self.num_agents, self.num_workers)[1]
            # Before the slices are copied, the arena zeroed and the envs built: a vector that cannot fit
            # fails here, with the estimate, instead of at the workers' creation limit.
            rows = f"{self.num_agents:,}"
            estimate = python_vector_estimate(
                num_envs, rows, nbytes, shape.observation_space, shape.action_space, (self.agents_per_batch,)
            )
            check_estimate(estimate, num_envs)
            slices = self._env_slices(env_creators, env_args, env_kwargs)
            if start_method == "fork":
                self._payloads: list = slices  # kept: a restart starts the worker again
            else:
                remedy = f"start_method={start_method!r} needs picklable env creators (or start_method='fork')"
                self._payloads = [envs.pickled(remedy) for envs in slices]
            # The mapping's file has a name until it is unlinked, and a semaphore too; and every view of
            # the mapping is recorded where _abandon_construction drops it: no interrupt in between.
            with signals_held():
                try:
                    pool.raw = SharedMapping(max(nbytes, 1), keep_fd=start_method != "fork")
                except MemoryError:
                    raise out_of_memory(nbytes, num_envs, "shared memory") from None
                pool.done_sem = context.Semaphore(0)
                self._shared = shared_views(pool.raw, shape, self.num_agents, self.num_workers)
            shared = self._shared
            shared.buf.masks[:] = True
            self.buf = shared.buf
            self._state, self._command, self._seeds = shared.state, shared.command, shared.seeds
            self._mailboxes, self._mail_sizes = shared.mailboxes, shared.mail_sizes
            self._done_counts = shared.done_counts
            pool.command = self._command
            self._state[:] = IDLE
            self._started = [0.0] * self.num_workers  # when each worker's process was started
            for w in range(self.num_workers):
                self._start_worker(w)
            for w in range(self.num_workers):
                self._ready.append(self._handshake(w))
            self._set_internal_envs(self._ready)
        except BaseException:
            shared = None  # this frame outlives the call in the traceback: it must not keep the mapping
            self._abandon_construction()
            raise
        self._shared = None
        self._processes, self._conns, self._command_sems = pool.processes, pool.conns, pool.command_sems
        self._done_sem = pool.done_sem

        self._owed = 0  # observed completions whose done_sem count is not taken yet
        self._batch_block = 0  # zero copy: the block of workers last returned by recv
        # Pipe bookkeeping, so that a resync knows whether a worker's last message is still unread:
        self._consumed = [0] * self.num_workers  # done count of the last message read from each worker
        self._reading = [False] * self.num_workers  # a read was under way (interrupted mid-message?)
        self._init_batches()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers, in worker order (empty once closed)."""
        return [p.pid for p in self._pool.processes]

    def _origin(self, w: int) -> str:
        return f"worker {w} (pid {self._pool.processes[w].pid})"

    def _abandon_construction(self) -> None:
        """make() failed or was interrupted: ready workers are asked to close, the others killed (one
        building its envs would read CLOSE only once done), the driver env closed, nothing kept."""
        with signals_held():
            self._pool.kill_now.update(range(len(self._ready), len(self._pool.processes)))
            self._finalizer()
            # The traceback keeps this half-built object until the garbage collector breaks its cycles:
            # the views go now, and with the last of them the shared mapping.
            self._shared = self.buf = None
            self._state = self._command = self._seeds = self._mailboxes = self._mail_sizes = None
            self._done_counts = None
            if self.driver_env is not None:
                BoundedClose("driver env", self.driver_env).wait(CLOSE_TIMEOUT_S)

    def _start_worker(self, w: int) -> None:
        """Starts the process of worker w and records it, its pipe's receiving end and its command
        semaphore as entry w of the pool's lists. Signals are held meanwhile (Ctrl-C, or another signal's
        handler that raises): an interrupt between creating a pipe, a semaphore or a process and
        recording it would leak that one."""
        with signals_held():
            self._start_recorded(w)

    def _start_recorded(self, w: int) -> None:
        context, pool = self._context, self._pool
        receiver, sender = context.Pipe(duplex=False)
        sem = context.Semaphore(0)
        spec = WorkerSpec(
            w,
            self.rows_per_worker,
            self.num_agents,
            self.num_workers,
            self._env_shape,
            self._emulate,
            os.getpid(),
            WORKER_SPIN_S,
        )
        process = context.Process(
            target=worker_main,
            name=f"shoal-worker-{w}",
            daemon=True,
            args=(spec, pool.raw, self._payloads[w], sender, sem, pool.done_sem),
        )
        try:
            with parents_garbage_left_behind(self.start_method == "fork"):
                process.start()
        finally:
            sender.close()
            if process.pid is None:
                receiver.close()
        self._started[w] = time.monotonic()
        if w < len(pool.processes):
            pool.processes[w], pool.conns[w], pool.command_sems[w] = process, receiver, sem
        else:
            pool.processes.append(process)
            pool.conns.append(receiver)
            pool.command_sems.append(sem)

    def _handshake(self, w: int) -> int:
        """Waits for worker w to build its envs; returns its number of internal envs."""
        conn, process = self._pool.conns[w], self._pool.processes[w]
        deadline = self._started[w] + creation_timeout(self.timeout)
        while not conn.poll(max(0.0, min(LIVENESS_CHECK_S, deadline - time.monotonic()))):
            if process.exitcode is not None:
                raise WorkerError(
                    f"worker {w} (pid {process.pid}) {exit_reason(process.exitcode)} while "
                    f"creating envs {self._env_range(w)}"
                )
            if time.monotonic() >= deadline:
                process.kill()
                elapsed = time.monotonic() - self._started[w]
                raise WorkerError(
                    f"worker {w} (pid {process.pid}) {creation_reason(elapsed, creation_timeout(self.timeout))} "
                    f"while creating envs {self._env_range(w)}"
                )
        try:
            kind, content = conn.recv()
        except (EOFError, OSError) as exc:
            process.join(1.0)
            reason = "closed its pipe" if process.exitcode is None else exit_reason(process.exitcode)
            hint = (
                ""
                if self.start_method == "fork"
                else " (with spawn/forkserver the main module is "
                "imported again in each worker: guard the program with `if __name__ == '__main__':`; "
                "the worker's own error is on stderr)"
            )
            raise WorkerError(
                f"worker {w} (pid {process.pid}) {reason} while creating envs {self._env_range(w)}{hint}"
            ) from exc
        if kind == "error":
            raise content.creation_error(w, self._env_range(w), self._origin(w))
        return content

    # -- the API -----------------------------------------------------------------------------------

    def _send_batch(self, actions) -> None:
        if self._copy_mode:
            shared = self.buf.actions
            rows = self.rows_per_worker
            for i, w in enumerate(self._batch):
                np.copyto(shared[w * rows : (w + 1) * rows], actions[i * rows : (i + 1) * rows], casting="unsafe")
        else:
            np.copyto(self._views[self._batch_block][7], actions, casting="unsafe")
        for w in self._batch:
            self._dispatch(w, STEP)

    @guarded
    def recv(self):
        batch, infos = self._take_batch()
        if self._copy_mode:
            src, dst, rows = self.buf, self._batch_buf, self.rows_per_worker
            for i, w in enumerate(batch):
                s, d = slice(w * rows, (w + 1) * rows), slice(i * rows, (i + 1) * rows)
                dst.observations[d] = src.observations[s]
                dst.final_observations[d] = src.final_observations[s]
                dst.rewards[d] = src.rewards[s]
                dst.terminals[d] = src.terminals[s]
                dst.truncations[d] = src.truncations[s]
                dst.masks[d] = src.masks[s]
                self._batch_ids[d] = self._worker_ids[w]
            return self._batch_result(infos)
        self._batch_block = batch[0] // self.workers_per_batch
        return self._block_result(self._batch_block, infos)

    def _close(self) -> None:
        driver = BoundedClose("driver env", self.driver_env)  # closes while the workers do
        failures = self._finalizer() or []
        # The shared block is unmapped once the last view of it is gone; returned arrays stay valid.
        self._views = self._batch_buf = None
        self._state = self._command = self._seeds = self._mailboxes = self._mail_sizes = None
        self._done_counts = None
        raise_failures(type(self).__name__, failures + driver.wait(CLOSE_TIMEOUT_S))
