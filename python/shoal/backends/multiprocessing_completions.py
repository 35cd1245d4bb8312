"""Multiprocessing's half of the hand-off protocol (multiprocessing.py): dispatch, completions, done_sem."""

from __future__ import annotations

import pickle
import time

from .caller_side.faults import LIVENESS_CHECK_S
from .wire.info_tables import unpack
from .worker_side.process_worker import BUSY, INFOS, MESSAGE, RESET, sched_yield

# The caller polls this long for a completion before it sleeps on the done semaphore.
RECV_SPIN_S = 0.0002


class ProcessCompletions:
    """Multiprocessing's dispatch and completions: a worker goes BUSY with a command, and back to ready
    once its state word says it is done (its infos read); ``_owed`` keeps done_sem balanced."""

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
