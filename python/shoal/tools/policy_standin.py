"""A GPU stand-in policy: what a trainer's policy on an accelerator costs its loop, on any machine.

A call spends ``cpu_s`` of the caller's CPU (what launching kernels and copies costs), then its
results are there ``latency_s`` later, waited for with the GIL released and no core used, as a
blocking wait for a GPU. Through a pipelined Multithreading vector (``wait``: its
``step_while_waiting``) the caller steps envs of the buffer in flight until the results are there or
none is left, then sleeps the rest: what the torch hand-off does while its GPU works. Used by
``shoal autotune --policy-us`` and ``bench/bench_trainer.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class PolicyStandIn:
    """``policy(observations)`` returns ``actions`` (fixed: the stand-in reads nothing) after
    ``cpu_s`` of caller CPU work and ``latency_s`` more of waiting."""

    def __init__(self, latency_s: float, cpu_s: float, actions=None, wait: Callable | None = None):
        if not (latency_s >= 0 and cpu_s >= 0):
            raise ValueError(f"a stand-in policy's latency and CPU time are seconds >= 0, got {latency_s}, {cpu_s}")
        self.latency_s, self.cpu_s, self.actions, self.wait = latency_s, cpu_s, actions, wait
        exact_sleeps()  # the thread that makes the stand-in calls it

    def __call__(self, observations=None):
        clock = time.perf_counter
        end = clock() + self.cpu_s
        while clock() < end:
            pass
        ready = end + self.latency_s
        if self.wait is not None:
            self.wait(lambda: clock() >= ready)
        left = ready - clock()
        if left > 0:
            time.sleep(left)
        return self.actions


def exact_sleeps() -> None:
    """Lets this thread's sleeps end when they are due (plus the OS's wake-up) rather than as late as
    Linux's default timer slack for a thread allows. That slack is of the order of the short waits
    a stand-in makes, so with it a stand-in call would last noticeably longer than asked, while a
    GPU's blocking wait (cudaEventSynchronize under cudaDeviceScheduleBlockingSync) has no such slack.
    Other systems keep their default."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_timerslack = 29  # <linux/prctl.h>
    ctypes.CDLL(None).prctl(pr_set_timerslack, 1, 0, 0, 0)  # 1 ns: none
