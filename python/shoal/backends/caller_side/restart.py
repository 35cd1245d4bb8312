"""``on_worker_failure="restart"``: what a replaced worker's rows and infos say (Multiprocessing, Ray).

A worker that died or missed its deadline is replaced; its envs are rebuilt and reset with
``restart_seed(seed, restarts)`` (shoal.seeding), where ``restarts`` counts that worker's
replacements. In the batch that would have held the lost step, its rows carry the first observation
of the new episode, reward 0, ``terminals`` False and ``truncations`` True (the old episode was cut
short; its last observation died with the worker, so ``final_observations`` are zeros there), and
``infos`` gain one ``{"worker_restart": {...}}`` entry that names the worker, its envs, the restart
count and the reason.

Replacements are budgeted (RestartBudget): a worker replaced ``max_restarts`` times within the last
``restart_window`` seconds is not replaced again: its next failure is a WorkerError naming the env
and the worker's exit status, so an env that dies at every step ends the run in a bounded number of
steps instead of being replaced forever. Each replacement of a worker already replaced within the
window waits first, twice as long as the one before it (RESTART_BACKOFF_S, at most MAX_BACKOFF_S).
"""

from __future__ import annotations

import collections
import math
import numbers
import time

from ...buffers import Buffers
from ...errors import APIUsageError

#: the defaults of make()'s max_restarts and restart_window (Multiprocessing, Ray)
RESTART_OPTIONS = {"max_restarts": 5, "restart_window": 60.0}
#: the wait before a worker's second replacement within the window; it doubles with each further one
RESTART_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0


def check_max_restarts(value) -> int:
    """An integer >= 0: replacements of one worker allowed within the window."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise APIUsageError(f"max_restarts must be an integer >= 0 (replacements of one worker), got {value!r}")
    return int(value)


def check_restart_window(value) -> float | None:
    """Seconds > 0 over which max_restarts counts, or None: over the vector's life."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise APIUsageError(
            f"restart_window must be a positive number of seconds or None (the vector's life), got {value!r}"
        )
    return float(value)


class RestartBudget:
    """How often each worker may be replaced, and how long to wait before each replacement.

    ``charge(w)`` is called when worker ``w`` has failed and would be replaced: it returns the seconds
    to wait before starting its replacement (0 for the first one within the window), or None when
    ``w`` was already replaced ``max_restarts`` times within the last ``window`` seconds (None: ever),
    the budget spent: the caller then raises WorkerError. ``spent(w)`` says, for that error, how
    many replacements the window holds.
    """

    def __init__(self, num_workers: int, max_restarts: int, window: float | None, clock=time.monotonic):
        self.max_restarts = max_restarts
        self.window = window
        self._clock = clock
        self._times = [collections.deque() for _ in range(num_workers)]  # each worker's replacements

    def charge(self, w: int) -> float | None:
        now = self._clock()
        times = self._times[w]
        while self.window is not None and times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.max_restarts:
            return None
        times.append(now)
        return 0.0 if len(times) == 1 else min(RESTART_BACKOFF_S * 2 ** (len(times) - 2), MAX_BACKOFF_S)

    def spent(self, w: int) -> int:
        return len(self._times[w])

    def describe(self) -> str:
        """The budget as the WorkerError states it."""
        window = "over the vector's life" if self.window is None else f"within {self.window:g} s"
        return f"max_restarts={self.max_restarts} {window} (restart_window)"


def mark_restarted(buf: Buffers, rows: slice) -> None:
    """Rows ``rows`` of ``buf`` after the replacement worker reset its envs."""
    buf.rewards[rows] = 0
    buf.terminals[rows] = False
    buf.truncations[rows] = True
    buf.masks[rows] = True
    buf.final_observations[rows] = 0


def restart_info(worker: int, envs: range, restarts: int, reason: str) -> dict:
    """The infos entry that reports one replacement."""
    return {"worker_restart": {"worker": worker, "envs": list(envs), "restarts": restarts, "reason": reason}}
