"""Deadlines of in-flight workers (the ``timeout`` option of Multiprocessing and Ray).

A worker has ``timeout`` seconds from the moment its command is dispatched to report completion.
The caller looks while it waits for results: each wait is cut into slices no longer than the
backend's liveness period and no longer than the time left to the earliest deadline. It also looks
on a clock (``Watch``) while batches keep coming from other workers, so that a late worker is found
within one liveness period of its deadline whether or not the caller sleeps (well inside the
promised timeout + 0.5 s).
"""

from __future__ import annotations

import math
import numbers
import time

from ...errors import APIUsageError
from .faults import deadline_reason

FAILURE_POLICIES = ("raise", "restart")


def check_timeout(timeout) -> float | None:
    """None (wait as long as the workers live) or a positive number of seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not math.isfinite(timeout) or timeout <= 0:
        raise APIUsageError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    return float(timeout)


def check_on_worker_failure(policy) -> str:
    if policy not in FAILURE_POLICIES:
        raise APIUsageError(f"on_worker_failure must be one of {list(FAILURE_POLICIES)}, got {policy!r}")
    return policy


class Deadlines:
    """When each worker was last dispatched, and which in-flight worker is past its deadline."""

    def __init__(self, num_workers: int, timeout: float | None):
        self.timeout = timeout
        self.started = [0.0] * num_workers

    def dispatched(self, w: int) -> None:
        self.started[w] = time.monotonic()

    def wait_slice(self, workers, period: float) -> float:
        """How long the caller may sleep before it must look at ``workers`` again."""
        if self.timeout is None or not workers:
            return period
        first = min(self.started[w] for w in workers) + self.timeout
        return max(0.0, min(period, first - time.monotonic()))

    def reason(self, w: int) -> str:
        """Why worker w failed, as of now: late by how much."""
        return deadline_reason(time.monotonic() - self.started[w], self.timeout)

    def late(self, workers) -> tuple[int, float] | None:
        """(worker, seconds since its dispatch) of the first of ``workers`` past its deadline, or None."""
        if self.timeout is None:
            return None
        now = time.monotonic()
        for w in workers:
            elapsed = now - self.started[w]
            if elapsed >= self.timeout:
                return w, elapsed
        return None


class Watch:
    """When to look at in-flight workers the caller is not waiting for.

    A batch can form from some workers while another is dead or hung (one worker per batch, zero-copy
    blocks, first-ready copies): the caller then never sleeps, so it must look on a clock, not only
    when a wait times out. ``due()`` costs one monotonic-clock read on the hot path.
    """

    def __init__(self, period: float):
        self.period = period
        self.next = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self.next:
            return False
        self.next = now + self.period
        return True
