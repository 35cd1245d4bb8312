"""The GPU stand-in policy of autotune and bench_trainer: caller CPU, then a wait that uses no core."""

from __future__ import annotations

import time

import pytest

from shoal.policy_standin import PolicyStandIn


def test_the_wait_after_the_cpu_work_uses_no_core():
    policy = PolicyStandIn(latency_s=0.02, cpu_s=0.002, actions="actions")
    wall, cpu = time.perf_counter(), time.thread_time()
    assert policy("observations") == "actions"
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert wall >= 0.022
    assert cpu < 0.5 * wall  # 2 ms of spinning (less if descheduled), then a sleep


def test_a_waiting_caller_is_asked_until_the_results_are_there():
    asked = []

    def wait(ready):
        while not ready():
            asked.append(time.perf_counter())
        asked.append(time.perf_counter())

    start = time.perf_counter()
    PolicyStandIn(latency_s=0.01, cpu_s=0.001, wait=wait)()
    assert len(asked) > 1 and asked[-1] - start >= 0.011  # ready() turned true only after the latency


@pytest.mark.parametrize("latency, cpu", [(-1.0, 0.0), (0.0, -0.1), (float("nan"), 0.0)])
def test_negative_or_nan_times_are_refused(latency, cpu):
    with pytest.raises(ValueError, match="seconds >= 0"):
        PolicyStandIn(latency, cpu)
