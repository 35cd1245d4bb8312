"""The processes, pipes, semaphores and shared memory of one Multiprocessing vector, and their
teardown. Knows nothing of the VecEnv, so a weakref.finalize can shut it down when the VecEnv is
collected or the interpreter exits."""

from __future__ import annotations

import multiprocessing.connection
import time

import numpy as np

from ...interrupts import signals_held
from .faults import CLOSE_TIMEOUT_S
from .ownership import Owner, forget_in_forked_children


class ProcessPool:
    """Worker ``w``'s process, the receiving end of its pipe and its command semaphore are entry ``w``
    of ``processes``, ``conns`` and ``command_sems`` (a process is recorded once it has started)."""

    def __init__(self, close_command: int):
        self.owner = Owner("Multiprocessing")
        self.close_command = close_command
        self.processes: list = []
        self.conns: list = []
        self.command_sems: list = []
        self.done_sem = None
        self.raw = None  # the shared mapping (wire/shared_mapping.py)
        self.command: np.ndarray | None = None
        self.kill_now: set[int] = set()  # workers known to be stuck: killed, not asked to close
        self.close_failures: list[str] = []
        forget_in_forked_children(self)

    def shutdown(self, timeout: float = CLOSE_TIMEOUT_S) -> list[str]:
        """Asks every worker to exit, kills those in ``kill_now`` at once and the others that do not
        exit in time, reaps all, frees everything. Returns the env close() failures the workers reported.
        An interrupt meanwhile (Ctrl-C, or another signal's handler) is held until the pool is gone (at
        most ``timeout`` and the reaping)."""
        if not self.owner.here:
            return []  # a forked child holds a copy of this object; its workers are not its own
        with signals_held():
            return self._shutdown(timeout)

    def _shutdown(self, timeout: float) -> list[str]:
        processes = self.processes
        alive = [i for i, p in enumerate(processes) if p.exitcode is None]
        for i in alive:
            if i in self.kill_now:
                processes[i].kill()
                continue
            if self.command is not None:
                self.command[i] = self.close_command
            self.command_sems[i].release()
        deadline = time.monotonic() + timeout
        while alive:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for i in alive:  # a worker blocked sending infos must be able to finish
                self._drain(i)
            multiprocessing.connection.wait([processes[i].sentinel for i in alive], timeout=min(remaining, 0.05))
            alive = [i for i in alive if processes[i].exitcode is None]
        for i in alive:  # still stepping, or an env's close() hangs: the process is killed, not awaited
            processes[i].kill()
        for p in processes:
            p.join(timeout=5.0)
            if p.exitcode is not None:
                p.close()
        for i in range(len(self.conns)):
            self._drain(i)  # close() failures sent just before exiting
            self.conns[i].close()
        self.processes, self.conns, self.command_sems = [], [], []
        if self.raw is not None:
            self.raw.release()  # the descriptor kept for spawning workers; the mapping goes with its views
        self.done_sem = self.raw = self.command = None
        return self.close_failures

    def _drain(self, i: int) -> None:
        conn = self.conns[i]
        try:
            while conn.poll(0):
                message = conn.recv()
                if message[0] == "closed":
                    self.close_failures.extend(message[1])
        except (EOFError, OSError):
            pass
