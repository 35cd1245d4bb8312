"""The restart budget (issue 55, item 4): under ``on_worker_failure="restart"`` a worker is replaced at
most ``max_restarts`` times within ``restart_window`` seconds, later replacements within the window
back off, and the failure past the budget is a WorkerError naming the env and the worker's exit
status, so an env that dies at every step ends the run instead of being replaced forever."""

import os
import re
import signal
import time

import gymnasium
import numpy as np
import psutil
import pytest

from shoal.backends.caller_side.restart import MAX_BACKOFF_S, RESTART_BACKOFF_S, RestartBudget
from shoal.config import ConfigError, load
from shoal.errors import APIUsageError, WorkerError
from shoal.vector import make

from envs_for_tests import make_cartpole


class DiesInFirstStep(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        os._exit(3)


def test_an_env_that_dies_in_its_first_step_ends_in_worker_error(time_limit):
    time_limit(60)
    vecenv = make(DiesInFirstStep, backend="Multiprocessing", num_envs=2, num_workers=2, on_worker_failure="restart")
    pids = list(vecenv.worker_pids)
    steps = 0
    try:
        vecenv.reset()
        with pytest.raises(WorkerError) as raised:
            while steps < 30:
                steps += 1
                vecenv.step(np.zeros(2, np.int32))
                pids.extend(vecenv.worker_pids)
        assert vecenv.closed
    finally:
        vecenv.close()
    # the default budget (5 replacements) is spent on the 6th failure: that step raises
    assert steps == 6, f"WorkerError after {steps} steps"
    message = str(raised.value)
    assert "exited with code 3" in message, message
    assert "DiesInFirstStep" in message and re.search(r"envs ([01])\.\.\1 ", message), message
    assert "max_restarts=5" in message and "replaced 5 times" in message, message
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


def test_budget_backs_off_and_its_window_slides():
    now = [100.0]
    budget = RestartBudget(2, max_restarts=4, window=10.0, clock=lambda: now[0])
    waits = [budget.charge(0) for _ in range(4)]
    assert waits == [0.0, RESTART_BACKOFF_S, 2 * RESTART_BACKOFF_S, 4 * RESTART_BACKOFF_S]
    assert budget.charge(0) is None and budget.spent(0) == 4
    assert budget.charge(1) == 0.0  # per worker
    now[0] += 10.0  # the four replacements leave the window
    assert budget.charge(0) == 0.0
    long = RestartBudget(1, max_restarts=100, window=None, clock=lambda: now[0])
    assert max(long.charge(0) for _ in range(100)) == MAX_BACKOFF_S
    assert long.charge(0) is None  # no window: over the vector's life
    assert RestartBudget(1, max_restarts=0, window=None).charge(0) is None


def test_restarts_spaced_wider_than_the_window_are_all_allowed(time_limit):
    time_limit(60)
    window = 0.5
    with make(
        make_cartpole,
        backend="Multiprocessing",
        num_envs=2,
        num_workers=2,
        on_worker_failure="restart",
        max_restarts=1,
        restart_window=window,
    ) as vecenv:
        vecenv.reset()
        for kill in range(2):
            os.kill(vecenv.worker_pids[0], signal.SIGKILL)
            infos = vecenv.step(np.zeros(2, np.int32))[4]
            assert [i["worker_restart"]["restarts"] for i in infos if "worker_restart" in i] == [kill + 1]
            time.sleep(window + 0.1)
        vecenv.step(np.zeros(2, np.int32))
        os.kill(vecenv.worker_pids[0], signal.SIGKILL)
        vecenv.step(np.zeros(2, np.int32))  # the first within the new window: replaced
        os.kill(vecenv.worker_pids[0], signal.SIGKILL)
        with pytest.raises(WorkerError, match=r"killed by signal SIGKILL.*CartPole-v1.*max_restarts=1 within 0.5 s"):
            vecenv.step(np.zeros(2, np.int32))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"max_restarts": -1}, r"max_restarts must be an integer >= 0.*-1"),
        ({"max_restarts": 2.5}, r"max_restarts must be an integer >= 0.*2\.5"),
        ({"max_restarts": True}, r"max_restarts must be an integer"),
        ({"restart_window": 0}, r"restart_window must be a positive number of seconds or None.*0"),
        ({"restart_window": float("nan")}, r"restart_window must be a positive number.*nan"),
        ({"restart_window": "60"}, r"restart_window must be a positive number.*'60'"),
    ],
)
def test_bad_budget_options_are_refused(options, match):
    with pytest.raises(APIUsageError, match=match):
        make(
            make_cartpole, backend="Multiprocessing", num_envs=2, num_workers=2, on_worker_failure="restart", **options
        )


def test_budget_options_in_config(tmp_path):
    path = tmp_path / "config.ini"
    path.write_text(
        "[env]\nname = cartpole\n[vec]\nbackend = Multiprocessing\nmax_restarts = 2\nrestart_window = none\n"
    )
    assert load(path).vec["max_restarts"] == 2 and load(path).vec["restart_window"] is None
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multiprocessing\nmax_restarts = many\n")
    with pytest.raises(ConfigError, match="max_restarts"):
        load(path)
