"""A hard end for one of `shoal autotune`'s samples: building a vector cannot be timed before it runs
(Serial's 4,096 native envs took 34 s on a busy guest where Multithreading's took 0.1 s), so a sample
that runs past the budget is cut where the platform allows (a timer signal in the main thread on Unix)
and its configuration dropped, naming the budget."""

from __future__ import annotations

import contextlib
import signal
import threading


class BudgetSpent(Exception):
    """A sample cut at the end of the budget."""


@contextlib.contextmanager
def sample_deadline(seconds: float, budget: float):
    """Raises BudgetSpent in this thread after ``seconds`` (at once when none are left), where a timer
    signal can reach it: the main thread of a Unix process; elsewhere the sample runs to its end."""
    if seconds <= 0:
        raise BudgetSpent(f"the {budget:g} s budget was spent before it began")
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def expire(signum, frame):
        if armed:  # not once the sample has ended (the signal may come between its end and the disarm)
            raise BudgetSpent(f"cut at the end of the {budget:g} s budget: its sample could not end inside it")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
