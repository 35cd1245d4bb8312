"""Multiprocessing's failed workers: found (dead or late), replaced; the resync after an interrupted call."""

from __future__ import annotations

import multiprocessing.connection

from ..errors import EnvError, WorkerError
from .caller_side.faults import CLOSE_TIMEOUT_S, deadline_reason, exit_reason
from .worker_side.process_worker import BUSY, IDLE, INFOS, MESSAGE, RESET


class ProcessRecovery:
    """Multiprocessing's failures and recovery (WorkerBackend's hooks): a dead or late worker raises
    WorkerError or is replaced in the same rows; a resync drops whatever was in flight."""

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
