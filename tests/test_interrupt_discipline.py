"""One interrupt discipline for everything a vector starts or stops (issue 45): a KeyboardInterrupt,
from a real Ctrl-C or raised by another signal's handler, at any point of make(), step(), recv() or
close() leaves no process, thread, file descriptor or /dev/shm segment behind once close() is called
again (a retried close() finishes what an interrupted one began) or the vector is collected.

The fast tests put the interrupt at chosen Python calls and returns of the main thread (a profile hook
raises the signal there, and its handler runs there); the slow one sends real
signals from a timer at random moments, hundreds of times."""

import contextlib
import os
import random
import signal
import sys
import threading
import time

import numpy as np
import pytest

from shoal.vector import make

from envs_for_tests import make_cartpole
from leak_checks import resources, settled

# An interrupt between a library's open() and its with-block (psutil reading /proc/meminfo for the
# memory estimate) leaves that file to the garbage collector: a ResourceWarning, not a leak of shoal's.
pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or not os.path.isdir("/dev/shm"), reason="Linux only"),
    pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"),
]

OPTIONS = dict(backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True)
# A real Ctrl-C (Python's own SIGINT handler), and a handler of another signal that raises
# KeyboardInterrupt (SIGALRM is the test time limit's, so SIGTERM stands in for it).
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM handler": signal.SIGTERM}


def raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"from the handler of signal {signum}")


@pytest.fixture
def signal_kind(request):
    """The signal under test, with a handler of SIGTERM that raises KeyboardInterrupt meanwhile."""
    previous = signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    yield SIGNALS[request.param]
    signal.signal(signal.SIGTERM, previous)


class CallCounter:
    """Counts the Python calls and returns of the main thread while active; at the ``at``-th raises ``signum``."""

    def __init__(self, at: int = 0, signum: int = signal.SIGINT):
        self.at, self.signum, self.calls, self.pid = at, signum, 0, os.getpid()

    def __call__(self, frame, event, arg):
        if os.getpid() != self.pid:  # a forked worker inherits the hook
            sys.setprofile(None)
            return
        # A handler runs where CPython checks for signals: at a Python function's start, and after a
        # call returns; raising the signal at a C call would cut it before it runs, which no signal can.
        if event in ("call", "return"):
            self.calls += 1
            if self.calls == self.at:
                sys.setprofile(None)
                signal.raise_signal(self.signum)

    @contextlib.contextmanager
    def active(self):
        sys.setprofile(self)
        try:
            yield self
        finally:
            sys.setprofile(None)


def calls_in(function) -> int:
    """The calls ``function`` makes (its result is dropped: arrays a step returns hold shared memory)."""
    with CallCounter().active() as counter:
        function()
    return counter.calls


def points(calls: int, dense: int, spread: int) -> list[int]:
    """Every other one of the first ``dense`` calls (where teardown and start-up begin), and ``spread``
    calls spread over the rest."""
    step = max(1, (calls - dense) // spread)
    return sorted({*range(1, min(dense, calls) + 1, 2), *range(dense + 1, calls + 1, step)})


def stepped_vector():
    vecenv = make(make_cartpole, **OPTIONS)
    vecenv.reset()
    vecenv.step(np.zeros(4, np.int32))
    return vecenv


def finish(vecenv) -> None:
    """What a caller does after an interrupt: close (again), then drop the vector."""
    if vecenv is not None:
        vecenv.close()


def warm_baseline() -> dict:
    stepped_vector().close()  # imports and multiprocessing's helpers, made once
    return settled(resources())


@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_close_is_finished_by_the_next_close(signal_kind, time_limit):
    time_limit(120)
    baseline = warm_baseline()
    vecenv = stepped_vector()
    calls = calls_in(vecenv.close)
    interrupted = 0
    for at in points(calls, dense=80, spread=20):
        vecenv = stepped_vector()
        try:
            with CallCounter(at, signal_kind).active():
                vecenv.close()
        except KeyboardInterrupt:
            interrupted += 1
        finish(vecenv)
        vecenv = None
        assert settled(baseline, seconds=5) == baseline, f"interrupt at call {at}"
    assert interrupted >= 30


@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_make_leaves_nothing_behind(signal_kind, time_limit):
    time_limit(120)
    baseline = warm_baseline()
    made = []
    calls = calls_in(lambda: made.append(make(make_cartpole, **OPTIONS)))
    made.pop().close()
    interrupted = 0
    for at in points(calls, dense=0, spread=60):
        vecenv = None
        try:
            with CallCounter(at, signal_kind).active():
                vecenv = make(make_cartpole, **OPTIONS)
        except KeyboardInterrupt:
            interrupted += 1
        finish(vecenv)
        vecenv = None
        assert settled(baseline, seconds=5) == baseline, f"interrupt at call {at}"
    assert interrupted >= 30


@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_step_leaves_nothing_behind_after_close(signal_kind, time_limit):
    """recv() is step()'s second half, so its calls are among these."""
    time_limit(120)
    baseline = warm_baseline()
    vecenv = stepped_vector()
    calls = calls_in(lambda: vecenv.step(np.zeros(4, np.int32)))
    vecenv.close()
    for at in points(calls, dense=0, spread=30):
        vecenv = stepped_vector()
        try:
            with CallCounter(at, signal_kind).active():
                vecenv.step(np.zeros(4, np.int32))
        except KeyboardInterrupt:
            vecenv.reset()  # an interrupted step is discarded; the vector works again after reset()
            vecenv.step(np.zeros(4, np.int32))
        finish(vecenv)
        vecenv = None
    assert settled(baseline) == baseline


@pytest.mark.slow
@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_signals_at_random_moments_leave_nothing_behind(signal_kind, time_limit):
    """300 cycles of make, reset, steps (send and recv) and close, each hit by one real signal sent from
    another thread at a random moment; after each, close() again and collection."""
    time_limit(600)
    baseline = warm_baseline()
    started = time.monotonic()
    stepped_vector().close()
    span = 1.5 * (time.monotonic() - started)
    rng = random.Random(45)
    main = threading.main_thread().ident
    landed = 0
    for _ in range(300):
        timer = threading.Timer(rng.uniform(0, span), signal.pthread_kill, (main, signal_kind))
        vecenv = None
        try:
            timer.start()
            vecenv = make(make_cartpole, **OPTIONS)
            vecenv.reset()
            for _ in range(3):
                vecenv.send(np.zeros(4, np.int32))
                vecenv.recv()
            vecenv.close()
            timer.join()
            time.sleep(0.001)  # a signal sent after close() is handled here, inside the try
        except KeyboardInterrupt:
            landed += 1
        finally:
            timer.cancel()
            timer.join()
        finish(vecenv)
        vecenv = None
    assert landed >= 100
    assert settled(baseline) == baseline
