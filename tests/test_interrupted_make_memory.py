"""An interrupted Multiprocessing make() releases its shared memory at once (issue 55, item 9).

A KeyboardInterrupt, raised by another signal's handler at any point of make(), leaves the half-built
vector in a reference cycle with the traceback; the shared buffers went with it whenever the garbage
collector came by, through a finalizer that a later interrupt could cut, and multiprocessing's heap
kept an arena (a file descriptor) per vector meanwhile: fds 8 -> 18 over 150 interrupted makes.
Here the garbage collector is off: every descriptor must be back right after each interrupted make.
"""

import contextlib
import gc
import os
import random
import signal

import pytest
from test_interrupt_discipline import CallCounter, calls_in, raise_keyboard_interrupt

from shoal.vector import make

from envs_for_tests import make_cartpole

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd (Linux)")

OPTIONS = dict(backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True)
INTERRUPTS = 40


def open_fds() -> list[str]:
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the descriptor of listdir itself is gone by now
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    return sorted(targets)


@pytest.fixture
def sigterm_raises():
    previous = signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    yield signal.SIGTERM
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_anywhere_in_make_releases_the_shared_memory_at_once(sigterm_raises, time_limit):
    time_limit(120)
    make(make_cartpole, **OPTIONS).close()  # imports and multiprocessing's helpers, made once
    made = []
    counted = calls_in(lambda: made.append(make(make_cartpole, **OPTIONS)))
    made.pop().close()
    gc.collect()
    baseline = open_fds()
    rng = random.Random(55)
    interrupted, grown = 0, []
    gc.disable()
    try:
        for at in sorted(rng.sample(range(1, counted.calls + 1), INTERRUPTS)):
            vecenv = None
            try:
                with CallCounter(at, sigterm_raises).active():
                    vecenv = make(make_cartpole, **OPTIONS)
            except KeyboardInterrupt:
                interrupted += 1
            if vecenv is not None:
                vecenv.close()
                vecenv = None
            now = open_fds()
            if now != baseline:
                grown.append((at, sorted(set(now) - set(baseline))))
    finally:
        gc.enable()
        gc.collect()
    assert interrupted >= INTERRUPTS // 2
    assert not grown, f"descriptors left by the make() interrupted at these calls: {grown}"
