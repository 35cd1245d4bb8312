"""One interrupt discipline for everything a vector starts or stops (issue 45): a KeyboardInterrupt,
from a real Ctrl-C or raised by another signal's handler, at any point of make(), step(), recv() or
close() leaves no process, thread, file descriptor or /dev/shm segment behind once close() is called
again (a retried close() finishes what an interrupted one began) or the vector is collected.

The tests put the interrupt at chosen Python calls and returns of the main thread (a profile hook
raises the signal there, and its handler runs there): a sample in the fast tier, every fifth call in
the slow one, which also sends real signals from another thread at random moments, 300 cycles per
signal."""

import contextlib
import gc
import os
import random
import signal
import sys
import threading
import time

import numpy as np
import psutil
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


@pytest.fixture(autouse=True)
def pythons_sigint_handler():
    """A real SIGINT raises KeyboardInterrupt here, as in a terminal: a job a shell starts in the
    background (CI's soak phase) inherits SIGINT ignored, and Python then installs no handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


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
        self.process_starts: list[int] = []  # the calls that start a process (multiprocessing's start())

    def __call__(self, frame, event, arg):
        if os.getpid() != self.pid:  # a forked worker inherits the hook
            sys.setprofile(None)
            return
        # A handler runs where CPython checks for signals: at a Python function's start, and after a
        # call returns; raising the signal at a C call would cut it before it runs, which no signal can.
        if event in ("call", "return"):
            self.calls += 1
            code = frame.f_code
            if event == "call" and code.co_name == "start" and code.co_filename.endswith("process.py"):
                self.process_starts.append(self.calls)
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


def calls_in(function) -> CallCounter:
    """The calls ``function`` makes (its result is dropped: arrays a step returns hold shared memory)."""
    with CallCounter().active() as counter:
        function()
    return counter


def points(counted: CallCounter, every: bool) -> list[int]:
    """The calls to interrupt: every fifth (``every``, the slow tier), or a sample: every third of the
    first 60, where teardown and start-up begin, every other one around each process start, and 10
    spread over the rest."""
    calls = counted.calls
    if every:
        return list(range(1, calls + 1, 5))
    around_starts = {at for start in counted.process_starts for at in range(start - 4, start + 40, 2)}
    step = max(1, (calls - 60) // 10)
    chosen = {*range(1, min(60, calls) + 1, 3), *range(61, calls + 1, step), *around_starts}
    return sorted(at for at in chosen if 1 <= at <= calls)


SWEEPS = [pytest.param(False, id="sample"), pytest.param(True, id="every fifth call", marks=pytest.mark.slow)]


def stepped_vector():
    vecenv = make(make_cartpole, **OPTIONS)
    vecenv.reset()
    vecenv.step(np.zeros(4, np.int32))
    return vecenv


def finish(vecenv, where: str) -> None:
    """What a caller does after an interrupt: close (again) and drop the vector; then no worker is left."""
    if vecenv is not None:
        vecenv.close()
    children = psutil.Process().children(recursive=True)
    if children:  # a vector dropped half-built goes with the garbage collector
        gc.collect()
        _, alive = psutil.wait_procs(children, timeout=5)
        assert not alive, f"an interrupt at {where} left {alive}"


def warm_baseline() -> dict:
    stepped_vector().close()  # imports and multiprocessing's helpers, made once
    return settled(resources())


@pytest.mark.parametrize("every", SWEEPS)
@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_close_is_finished_by_the_next_close(signal_kind, every, time_limit):
    time_limit(600 if every else 120)
    baseline = warm_baseline()
    vecenv = stepped_vector()
    counted = calls_in(vecenv.close)
    interrupted = 0
    for at in points(counted, every):
        vecenv = stepped_vector()
        try:
            with CallCounter(at, signal_kind).active():
                vecenv.close()
        except KeyboardInterrupt:
            interrupted += 1
        finish(vecenv, f"call {at}")
        vecenv = None
    assert interrupted >= 20
    assert settled(baseline) == baseline


@pytest.mark.parametrize("every", SWEEPS)
@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_make_leaves_nothing_behind(signal_kind, every, time_limit):
    time_limit(600 if every else 120)
    baseline = warm_baseline()
    made = []
    counted = calls_in(lambda: made.append(make(make_cartpole, **OPTIONS)))
    made.pop().close()
    interrupted = 0
    for at in points(counted, every):
        vecenv = None
        try:
            with CallCounter(at, signal_kind).active():
                vecenv = make(make_cartpole, **OPTIONS)
        except KeyboardInterrupt:
            interrupted += 1
        finish(vecenv, f"call {at}")
        vecenv = None
    assert interrupted >= 20
    assert settled(baseline) == baseline


@pytest.mark.parametrize("every", SWEEPS)
@pytest.mark.parametrize("signal_kind", sorted(SIGNALS), indirect=True)
def test_an_interrupt_at_any_call_of_step_leaves_nothing_behind_after_close(signal_kind, every, time_limit):
    """recv() is step()'s second half, so its calls are among these."""
    time_limit(600 if every else 120)
    baseline = warm_baseline()
    vecenv = stepped_vector()
    counted = calls_in(lambda: vecenv.step(np.zeros(4, np.int32)))
    vecenv.close()
    for at in points(counted, every):
        vecenv = stepped_vector()
        try:
            with CallCounter(at, signal_kind).active():
                vecenv.step(np.zeros(4, np.int32))
        except KeyboardInterrupt:
            vecenv.reset()  # an interrupted step is discarded; the vector works again after reset()
            vecenv.step(np.zeros(4, np.int32))
        finish(vecenv, f"call {at}")
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
        delay = rng.uniform(0, span)
        timer = threading.Timer(delay, signal.pthread_kill, (main, signal_kind))
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
        finish(vecenv, f"{delay:.4f} s")
        vecenv = None
    assert landed >= 100
    assert settled(baseline) == baseline
