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

import multiprocessing
import multiprocessing.connection
import os
import pickle
import sys
import time
import weakref

import numpy as np

from ..buffers import check_estimate, out_of_memory, python_vector_estimate
from ..errors import EnvError, WorkerError
from ..interrupts import guarded, signals_held
from .base import EnvLists
from .caller_side.faults import (
    CLOSE_TIMEOUT_S,
    LIVENESS_CHECK_S,
    creation_reason,
    creation_timeout,
    deadline_reason,
    exit_reason,
)
from .caller_side.process_pool import ProcessPool
from .caller_side.worker_backend import WorkerBackend
from .closing import BoundedClose, raise_failures
from .start_methods import check_start_method
from .wire.info_tables import unpack
from .wire.shared_mapping import SharedMapping
from .worker_side.process_worker import (
    BUSY,
    CLOSE,
    IDLE,
    INFOS,
    MESSAGE,
    RESET,
    STEP,
    WORKER_SPIN_S,
    WorkerSpec,
    carve,
    sched_yield,
    shared_views,
    worker_main,
)

# The caller polls this long for a completion before it sleeps on the done semaphore.
RECV_SPIN_S = 0.0002


# ---------------------------------------------------------------------------------------------------
# Caller side
# ---------------------------------------------------------------------------------------------------


def default_start_method() -> str:
    return "fork" if sys.platform.startswith("linux") else "spawn"


class Multiprocessing(WorkerBackend):
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

    # -- hand-off ----------------------------------------------------------------------------------

    def _dispatch_reset(self, w: int, seed: int) -> None:
        self._seeds[w] = seed
        self._dispatch(w, RESET)

    def _dispatch(self, w: int, command: int) -> None:
        self._deadlines.dispatched(w)
        # No call between the BUSY store and the post, so no signal handler can run in between
        # (CPython runs them at calls and backward jumps): a worker is BUSY only once it is woken.
        self._state[w] = BUSY
        self._command[w] = command
        self._command_sems[w].release()
        self._dispatched(w)

    def _next_batch(self) -> list[int]:
        while True:
            if self._busy:
                self._poll()
                if self._watch.due():
                    self._check_in_flight()
            batch = self._batches.select()
            if batch is not None:
                return batch
            if not self._busy:
                raise RuntimeError("Multiprocessing: no worker in flight and no batch ready (internal error)")
            # A batch needs workers_per_batch ready workers: sleep through the completions before that.
            for _ in range(min(len(self._busy), max(1, self._batches.missing))):
                if self._wait_for_completion():
                    break  # a worker is done or was replaced without a count: look again

    def _poll(self) -> None:
        """Moves completed workers from busy to ready, reading their messages (which may raise)."""
        state, busy = self._state, self._busy
        i = 0
        while i < len(busy):
            w = busy[i]
            s = state[w]
            if s == BUSY:
                i += 1
                continue
            del busy[i]
            self._take_count()
            if s == INFOS:
                self._worker_infos[w] = self._mail(w)
            elif s == MESSAGE and not self._read_message(w):
                continue  # the worker was replaced while its message was awaited
            self._batches.completed(w)

    def _mail(self, w: int) -> list:
        """The infos worker w left in its mailbox."""
        return unpack(pickle.loads(self._mailboxes[w, : self._mail_sizes[w]]))

    def _take_count(self) -> None:
        """Accounts for the done_sem count of a completion just observed."""
        if self._owed < 0:
            self._owed += 1  # pre-paid by _wait_for_completion
        elif not self._done_sem.acquire(False):
            self._owed += 1  # its count is posted right after its state; taken later

    def _wait_for_completion(self) -> bool:
        """Returns once a completion not yet observed has been posted, or a busy worker was seen done or
        replaced while asleep (True: no count was taken for it). Checks liveness and deadlines."""
        done = self._done_sem
        while self._owed > 0:  # counts of completions already seen: posted right after their state
            if done.acquire(True, LIVENESS_CHECK_S):
                self._owed -= 1
            else:
                self._owed = 0  # a worker stopped or died between its state and its post
        if not done.acquire(False):
            deadline = time.perf_counter() + RECV_SPIN_S
            while True:
                if time.perf_counter() >= deadline:
                    while not done.acquire(True, self._deadlines.wait_slice(self._busy, LIVENESS_CHECK_S)):
                        if self._check_busy():
                            return True
                    break
                sched_yield()
                if done.acquire(False):
                    break
        self._owed -= 1  # this count belongs to the next completion _poll observes
        return False

    def _check_busy(self) -> bool:
        """After a wait timed out: True if a busy worker is done (its count went astray) or failed and
        was replaced; raises WorkerError for a failure under on_worker_failure="raise"."""
        for w in list(self._busy):
            if self._state[w] != BUSY:
                return True
            reason = self._failure(w)
            if reason is not None:
                self._fail_or_restart(w, reason, in_flight=True)
                return True
        return False

    def _check_in_flight(self) -> None:
        """Every busy worker that died or is late fails now, even while the others keep answering."""
        for w in list(self._busy):
            if self._state[w] == BUSY:
                reason = self._failure(w)
                if reason is not None:
                    self._fail_or_restart(w, reason, in_flight=True)

    def _drain(self) -> None:
        while self._busy:
            self._poll()
            if self._busy:
                self._wait_for_completion()

    def _close(self) -> None:
        driver = BoundedClose("driver env", self.driver_env)  # closes while the workers do
        failures = self._finalizer() or []
        # The shared block is unmapped once the last view of it is gone; returned arrays stay valid.
        self._views = self._batch_buf = None
        self._state = self._command = self._seeds = self._mailboxes = self._mail_sizes = None
        self._done_counts = None
        raise_failures(type(self).__name__, failures + driver.wait(CLOSE_TIMEOUT_S))

    # -- failures and recovery ---------------------------------------------------------------------

    def _failure(self, w: int) -> str | None:
        """Why worker w has failed (dead, or past its deadline), or None."""
        if self._order.closed:
            raise self._closed_while_waiting()  # close() from another thread is reaping the workers
        process = self._processes[w]
        if process.exitcode is not None:
            return exit_reason(process.exitcode)
        late = self._deadlines.late([w])
        if late is not None:
            return deadline_reason(late[1], self.timeout)
        return None

    def _read_message(self, w: int) -> bool:
        """Reads worker w's pipe message; False if the worker failed meanwhile and was replaced."""
        conn = self._conns[w]
        while not conn.poll(self._deadlines.wait_slice([w], LIVENESS_CHECK_S)):
            reason = self._failure(w)
            if reason is not None:
                self._fail_or_restart(w, reason, in_flight=True)
                return False
        self._reading[w] = True
        try:
            kind, count, content = conn.recv()
        except (EOFError, OSError):
            self._processes[w].join(LIVENESS_CHECK_S)
            self._fail_or_restart(w, self._failure(w) or "closed its pipe unexpectedly", in_flight=True)
            return False
        self._consumed[w] = count
        self._reading[w] = False
        if kind == "error":
            raise content.step_error(w, self._env_range(w), self._origin(w))
        self._worker_infos[w] = content
        return True

    def _fail_or_restart(self, w: int, reason: str, in_flight: bool) -> None:
        """A dead or late worker (WorkerBackend._worker_failed); a replacement's reset is the result
        of its rows, and completes the batch it was in flight for."""
        infos = self._worker_failed(w, reason)
        if infos is not None:
            self._worker_infos[w] = infos
            if in_flight:
                self._batches.completed(w)

    def _reset_replacement(self, w: int, seed: int, reason: str):
        self._seeds[w] = seed
        self._state[w] = BUSY
        self._command[w] = RESET
        self._command_sems[w].release()
        failure = self._await(w)
        if failure is not None:
            self._fail(
                WorkerError(
                    f"{reason}; its replacement (pid {self._processes[w].pid}) {failure} while resetting envs "
                    f"{self._env_range(w)}. The vector env is closed."
                )
            )
        s = self._state[w]
        self._take_count()
        infos = []
        if s == INFOS:
            infos = self._mail(w)
        elif s == MESSAGE:
            if not self._read_message(w):
                return None
            infos = self._worker_infos[w]
        return infos, self.buf, self._worker_rows[w]

    def _kill_on_close(self, workers) -> None:
        self._pool.kill_now.update(workers)

    def _replace(self, w: int) -> None:
        if w in self._busy:
            self._busy.remove(w)
        pool = self._pool
        old = pool.processes[w]
        if old.exitcode is None:
            old.kill()
        old.join(CLOSE_TIMEOUT_S)
        pool.conns[w].close()
        self._state[w] = IDLE
        self._start_worker(w)
        self._handshake(w)
        if old.exitcode is not None:
            old.close()
        self._consumed[w] = 0
        self._reading[w] = False

    def _await(self, w: int) -> str | None:
        """Waits until worker w is not BUSY (watching its state word); the failure that ended the wait
        early, or None."""
        process, pause = self._processes[w], 0.0005
        while self._state[w] == BUSY:
            reason = self._failure(w)
            if reason is not None:
                return reason
            multiprocessing.connection.wait([process.sentinel], timeout=pause)  # returns at once on exit
            pause = min(2 * pause, 0.01)
        return None

    def _resync(self) -> None:
        """After an interrupted call: waits for every worker to finish what it was sent, drops each
        result and unread message, and rebalances done_sem, so that nothing in flight survives."""
        for w in range(self.num_workers):
            reason = self._await(w)
            if reason is not None:
                self._fail_or_restart(w, reason, in_flight=False)
            elif self._reading[w]:
                self._replace_or_fail(w)  # a message was half read: the pipe's framing is lost
            elif self._state[w] == MESSAGE and self._consumed[w] != self._done_counts[w]:
                try:
                    self._read_message(w)
                except WorkerError:
                    raise
                except EnvError:
                    pass  # an env failure of the step being dropped
        while self._done_sem.acquire(False):
            pass
        self._owed = 0
        self._busy = []
        self._needs_resync = False
