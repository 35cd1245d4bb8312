"""How the Multiprocessing backend finds a failed worker and recovers: a dead or late worker fails
the vector or is replaced on the same shared rows; an interrupted call is resynchronised (every
worker's result and unread message dropped, the done semaphore rebalanced)."""

from __future__ import annotations

import multiprocessing.connection

from ...errors import EnvError, WorkerError
from ...seeding import offset_seed, restart_seed
from ..restart import mark_restarted, restart_info
from .faults import CLOSE_TIMEOUT_S, LIVENESS_CHECK_S, MISSED_DEADLINE, deadline_reason, exit_reason
from .process_worker import BUSY, IDLE, INFOS, MESSAGE, RESET


class ProcessRecovery:
    """Failure and recovery methods of Multiprocessing (a mixin: it reads the backend's state)."""

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
                self._worker_failed(w, reason, in_flight=True)
                return False
        self._reading[w] = True
        try:
            kind, count, content = conn.recv()
        except (EOFError, OSError):
            self._processes[w].join(LIVENESS_CHECK_S)
            self._worker_failed(w, self._failure(w) or "closed its pipe unexpectedly", in_flight=True)
            return False
        self._consumed[w] = count
        self._reading[w] = False
        if kind == "error":
            raise content.step_error(w, self._env_range(w), self._origin(w))
        self._worker_infos[w] = content
        return True

    def _worker_failed(self, w: int, reason: str, in_flight: bool) -> None:
        """A dead or late worker: WorkerError (the vector closes), or its replacement (restart)."""
        process = self._processes[w]
        if self.on_worker_failure == "raise":
            self._kill_on_close([w])
            late, pid = reason.startswith(MISSED_DEADLINE), process.pid
            self._fail(
                lambda: WorkerError(
                    f"worker {w} (pid {pid}) "
                    f"{self._deadlines.reason(w) if late else reason}; it held envs {self._env_range(w)}. "
                    "The vector env is closed."
                )
            )
        self._restart(w, f"worker {w} (pid {process.pid}) {reason}", in_flight)

    def _restart(self, w: int, reason: str, in_flight: bool) -> None:
        """Replaces worker w and resets its envs with the restart seed; its rows and infos say so."""
        if w in self._busy:
            self._busy.remove(w)
        self._replace(w)
        self._restarts[w] += 1
        self._seeds[w] = offset_seed(restart_seed(self._reset_seed, self._restarts[w]), self._first_envs[w])
        self._deadlines.dispatched(w)
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
                return
            infos = self._worker_infos[w]
        mark_restarted(self.buf, self._worker_rows[w])
        envs = range(*self._layout.env_slice(w).indices(self.num_envs))
        self._worker_infos[w] = [*infos, restart_info(w, envs, self._restarts[w], reason)]
        if in_flight:
            self._batches.completed(w)

    def _kill_on_close(self, workers) -> None:
        self._pool.kill_now.update(workers)

    def _replace(self, w: int) -> None:
        """Kills worker w's process (if alive) and starts a new one on the same shared rows."""
        pool = self._pool
        old = pool.processes[w]
        if old.exitcode is None:
            old.kill()
        old.join(CLOSE_TIMEOUT_S)
        pool.conns[w].close()
        self._state[w] = IDLE
        try:
            self._start_worker(w)
            self._handshake(w)
        except EnvError as exc:  # WorkerError included
            self._fail(WorkerError(f"worker {w} could not be restarted: {exc}"))
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
                self._worker_failed(w, reason, in_flight=False)
            elif self._reading[w]:
                self._replace(w)  # a message was half read: the pipe's framing is lost
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
