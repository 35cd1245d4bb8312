"""Deadlines (issue 13): with ``timeout=`` a hung env or a stopped worker process becomes a WorkerError
that names the worker, its envs and the elapsed time, within timeout + 0.5 s, and leaves the vector
closed with every process gone; with ``on_worker_failure="restart"`` the late worker is replaced."""

import os
import signal
import time

import numpy as np
import psutil
import pytest

from shoal.errors import APIUsageError, WorkerError
from shoal.vector import make

from envs_for_tests import HangOnAction

TIMEOUT_S = 1.0
MARGIN_S = 0.5  # the bound: the error arrives within timeout + 0.5 s


def gone(pids) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("fault", ["hung env", "SIGSTOP"])
def test_late_worker_raises_worker_error_within_the_deadline(fault, time_limit):
    time_limit(60)
    vecenv = make(HangOnAction, backend="Multiprocessing", num_envs=4, num_workers=2, timeout=TIMEOUT_S)
    pids = vecenv.worker_pids
    try:
        vecenv.reset()
        vecenv.step(np.zeros(4, np.int32))
        actions = np.zeros(4, np.int32)
        if fault == "hung env":
            actions[3] = 1  # env 3 lives in worker 1
        else:
            os.kill(pids[1], signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(WorkerError) as info:
            vecenv.step(actions)
        elapsed = time.monotonic() - started
    finally:
        if fault == "SIGSTOP" and psutil.pid_exists(pids[1]):
            os.kill(pids[1], signal.SIGCONT)
        vecenv.close()
    assert TIMEOUT_S <= elapsed < TIMEOUT_S + MARGIN_S, elapsed
    message = str(info.value)
    assert f"worker 1 (pid {pids[1]})" in message
    assert "envs 2..3" in message
    reported = float(message.split("still busy ")[1].split(" s")[0])
    assert TIMEOUT_S <= reported < TIMEOUT_S + MARGIN_S, message
    assert "timeout=1 s" in message
    # Defined state: closed, every worker process gone.
    assert vecenv.closed
    with pytest.raises(APIUsageError, match="closed"):
        vecenv.reset()
    assert gone(pids)


def test_late_worker_is_replaced_under_restart(time_limit):
    time_limit(60)
    with make(
        HangOnAction,
        backend="Multiprocessing",
        num_envs=4,
        num_workers=2,
        timeout=TIMEOUT_S,
        on_worker_failure="restart",
        seed=3,
    ) as vecenv:
        old = vecenv.worker_pids
        vecenv.reset()
        actions = np.zeros(4, np.int32)
        actions[0] = 1  # env 0 (worker 0) hangs
        started = time.monotonic()
        observations, rewards, terminals, truncations, infos = vecenv.step(actions)
        assert time.monotonic() - started < TIMEOUT_S + MARGIN_S + 2.0  # + starting the replacement
        np.testing.assert_array_equal(truncations, [True, True, False, False])
        np.testing.assert_array_equal(rewards, [0, 0, 1, 1])
        np.testing.assert_array_equal(observations[:2], 0)  # the new episodes' first observations
        np.testing.assert_array_equal(observations[2:], 1)  # worker 1 stepped on
        restarts = [info["worker_restart"] for info in infos if "worker_restart" in info]
        assert len(restarts) == 1 and restarts[0]["worker"] == 0 and restarts[0]["envs"] == [0, 1]
        assert "missed its deadline" in restarts[0]["reason"]
        new = vecenv.worker_pids
        assert new[1] == old[1] and new[0] != old[0]
        observations = vecenv.step(np.zeros(4, np.int32))[0]
        np.testing.assert_array_equal(observations[:, 0], [1, 1, 2, 2])
    assert gone(old + new)


@pytest.mark.parametrize("value", [0, -1, float("nan"), "1", True])
def test_bad_timeout_is_an_api_usage_error(value):
    with pytest.raises(APIUsageError, match="timeout must be a positive number"):
        make(HangOnAction, backend="Multiprocessing", num_envs=2, num_workers=1, timeout=value)


def test_bad_failure_policy_is_an_api_usage_error():
    with pytest.raises(APIUsageError, match=r"on_worker_failure must be one of \['raise', 'restart'\]"):
        make(HangOnAction, backend="Multiprocessing", num_envs=2, num_workers=1, on_worker_failure="retry")


def test_config_ini_sets_timeout_and_failure_policy(tmp_path):
    from shoal.config import ConfigError, make_from_config

    path = tmp_path / "faults.ini"
    text = (
        "[env]\nname = gymnasium:CartPole-v1\n[vec]\nbackend = Multiprocessing\nnum_envs = 2\n"
        "num_workers = 1\ntimeout = {timeout}\non_worker_failure = restart\n"
    )
    path.write_text(text.format(timeout="2.5"))
    with make_from_config(path) as vecenv:
        assert (vecenv.timeout, vecenv.on_worker_failure) == (2.5, "restart")
    path.write_text(text.format(timeout="none"))
    with make_from_config(path) as vecenv:
        assert vecenv.timeout is None
    path.write_text(text.format(timeout="0"))
    with pytest.raises(ConfigError, match=r"\[vec\] timeout = '0': timeout must be a positive number of seconds"):
        make_from_config(path)
