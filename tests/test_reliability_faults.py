"""Faults that used to produce wrong data (issue 13): an interrupted step, malformed env outputs.

Each test reproduces the attack and asserts the promise of DESIGN.md "Errors and interrupts": the
vector refuses use until reset() with an APIUsageError, or raises EnvError naming the env (and
worker), and never returns stale or broadcast data as if it were fresh.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

from shoal.errors import APIUsageError, EnvError
from shoal.vector import make

from envs_for_tests import SLOW_S, bad_output_creators, close_recorder_creators, counting_creators
from fault_checks import check_bad_output_errors, close_while_recv_waits, step_until_bad_outputs


def interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("call", ["recv", "step"])
def test_interrupted_step_is_never_returned_late(call, time_limit):
    """Ctrl-C while a worker is still stepping, then keep going: the vector refuses send/recv until
    reset() (APIUsageError), and after the reset every result belongs to the step just sent."""
    time_limit(60)
    n = 4
    slow, fast = np.ones(n, np.int32), np.zeros(n, np.int32)
    with make(counting_creators(n), backend="Multiprocessing", num_envs=n, num_workers=2) as vecenv:
        vecenv.reset()
        vecenv.step(fast)
        timer = interrupt_after(0.3)
        try:
            with pytest.raises(KeyboardInterrupt):
                if call == "recv":
                    vecenv.send(slow)
                    vecenv.recv()
                else:
                    vecenv.step(slow)
        finally:
            timer.cancel()
        # The interrupted step is in flight (the workers sleep SLOW_S): nothing may pick it up.
        with pytest.raises(APIUsageError, match=r"interrupted.*reset\(\)"):
            vecenv.step(fast)
        with pytest.raises(APIUsageError, match=r"interrupted.*reset\(\)"):
            vecenv.recv()
        observations, _ = vecenv.reset()
        np.testing.assert_array_equal(observations[:, 0], 0)
        for t in (1, 2, 3):
            observations = vecenv.step(fast)[0]
            np.testing.assert_array_equal(observations, [[t, i] for i in range(n)])
        # No worker writes into the rows after recv returned them.
        returned = observations.copy()
        time.sleep(SLOW_S + 0.2)
        np.testing.assert_array_equal(observations, returned)


def test_malformed_step_outputs_are_env_errors_naming_the_env(time_limit):
    """Each malformed output of BAD_OUTPUTS: EnvError naming the env (and worker) and the output, the
    same sentence on Serial and Multiprocessing (Ray: tests/test_ray.py), then reset() is required."""
    time_limit(60)
    said = {}
    for backend, kwargs, where in (
        ("Serial", {}, "env 3"),
        ("Multiprocessing", {"num_workers": 2}, "env 3 (worker 1)"),
    ):
        with make(bad_output_creators(4, bad_env=3), backend=backend, num_envs=4, **kwargs) as vecenv:
            said[backend] = check_bad_output_errors(step_until_bad_outputs(vecenv), where)
    assert said["Serial"] == said["Multiprocessing"]


def test_interrupted_serial_step_refuses_until_reset(time_limit):
    """Serial steps in send(): a Ctrl-C there leaves some envs stepped and others not, so the half
    step must not be returned by a recv() either."""
    time_limit(30)
    n = 3
    with make(counting_creators(n), backend="Serial", num_envs=n) as vecenv:
        vecenv.reset()
        timer = interrupt_after(0.3)
        try:
            with pytest.raises(KeyboardInterrupt):
                vecenv.send(np.array([0, 1, 0], np.int32))  # env 0 steps, env 1 sleeps, env 2 never runs
        finally:
            timer.cancel()
        with pytest.raises(APIUsageError, match=r"send\(\) was interrupted by KeyboardInterrupt.*reset\(\)"):
            vecenv.recv()
        vecenv.reset()
        np.testing.assert_array_equal(vecenv.step(np.zeros(n, np.int32))[0][:, 0], 1)


def test_interrupted_pipelined_multithreading_recv_refuses_until_reset(time_limit):
    """Pipelined Multithreading: a Ctrl-C that lands in recv() (the native wait finishes first) must not
    let the next send() act on a buffer whose observations the caller never saw."""
    time_limit(60)
    from shoal.envs import BUNDLED

    kwargs = dict(
        backend="Multithreading", num_envs=32, batch_size=16, max_num_threads=1, seed=7, env_kwargs={"work": 10_000_000}
    )  # 10-50 ms per env step: a buffer of 16 on one thread takes far longer than the 50 ms before the interrupt
    actions = np.zeros(16, np.int32)
    with make(BUNDLED["deep"], **kwargs) as vecenv:
        vecenv.async_reset()
        vecenv.recv()
        vecenv.send(actions)
        vecenv.recv()
        vecenv.send(actions)
        timer = interrupt_after(0.05)
        try:
            with pytest.raises(KeyboardInterrupt):
                vecenv.recv()
        finally:
            timer.cancel()
        with pytest.raises(APIUsageError, match=r"interrupted.*reset\(\)"):
            vecenv.send(actions)
        vecenv.async_reset()
        first = vecenv.recv()[0].copy()
    with make(BUNDLED["deep"], **kwargs) as fresh:
        fresh.async_reset()
        np.testing.assert_array_equal(first, fresh.recv()[0])


@pytest.mark.parametrize("backend", ["Multiprocessing", "Multithreading"])
def test_close_from_another_thread_while_recv_waits(backend, time_limit):
    """Defect 4: the waiting thread gets a clear APIUsageError, the closing thread succeeds, and no
    worker process (Multiprocessing) or driver/pool thread (pipelined Multithreading) is left."""
    time_limit(60)
    import psutil

    from shoal.envs import BUNDLED

    process = psutil.Process()
    threads = process.num_threads()
    if backend == "Multiprocessing":
        n = 4
        vecenv = make(counting_creators(n), backend=backend, num_envs=n, num_workers=2)
        vecenv.reset()
        vecenv.send(np.ones(n, np.int32))  # every worker sleeps SLOW_S
    else:
        vecenv = make(
            BUNDLED["deep"],
            backend=backend,
            num_envs=32,
            batch_size=16,
            max_num_threads=1,
            env_kwargs={"work": 10_000_000},
        )  # 10-50 ms per env step: a buffer of 16 on one thread outlasts the 50 ms before close()
        vecenv.async_reset()
        for _ in range(2):
            vecenv.recv()
            vecenv.send(np.zeros(16, np.int32))
    pids = getattr(vecenv, "worker_pids", [])
    waiter, raised = close_while_recv_waits(vecenv, 0.05)
    assert not waiter.is_alive()
    assert len(raised) == 1 and type(raised[0]) is APIUsageError, raised
    assert "closed (by another thread) while recv() waited" in str(raised[0])
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
    # A joined thread is gone for Python before its OS thread has finished exiting: allow it a moment,
    # a thread left running stays counted.
    deadline = time.monotonic() + 2
    while process.num_threads() > threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.num_threads() <= threads


def closed_ids(directory) -> set[int]:
    return {int(name.split("-")[1]) for name in os.listdir(directory)}


@pytest.mark.parametrize("backend", ["Serial", "Multiprocessing"])
def test_failing_env_close_closes_the_others_then_lists_failures(backend, tmp_path, time_limit):
    """Defect 6: close() closes every env, then raises one EnvError that lists each failure."""
    time_limit(60)
    import psutil

    kwargs = {"num_workers": 2} if backend == "Multiprocessing" else {}
    vecenv = make(close_recorder_creators(4, tmp_path, fail=(1, 3)), backend=backend, num_envs=4, **kwargs)
    pids = getattr(vecenv, "worker_pids", [])
    vecenv.reset()
    with pytest.raises(EnvError, match=r"2 env close\(\) call\(s\) failed") as info:
        vecenv.close()
    message = str(info.value)
    assert "env 1: RuntimeError: close of env 1 failed on purpose" in message
    assert "env 3: RuntimeError: close of env 3 failed on purpose" in message
    assert closed_ids(tmp_path) == {0, 1, 2, 3}
    vecenv.close()  # closed: nothing more to do
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


def test_hanging_env_close_does_not_hang_multiprocessing_close(tmp_path, time_limit):
    """Defect 6: env 0's close() hangs, in its worker and in the driver env (built from creator 0)."""
    time_limit(60)
    from envs_for_tests import HANG_IN_CLOSE_S

    vecenv = make(close_recorder_creators(4, tmp_path, hang=(0,)), backend="Multiprocessing", num_envs=4, num_workers=2)
    vecenv.reset()
    started = time.monotonic()
    with pytest.raises(EnvError, match=r"driver env: close\(\) did not return within 2 s"):
        vecenv.close()
    assert time.monotonic() - started < HANG_IN_CLOSE_S - 1.5
    # Worker 1's envs closed; worker 0 was killed while env 0's close() hung (env 1 went with it).
    assert {2, 3} <= closed_ids(tmp_path)


# ---------------------------------------------------------------------------------------------------
# The emulation's two step paths check alike: Serial's batched step_rows (an inlined fast test,
# the full check on a miss) and GymnasiumPufferEnv.step (check_step_outputs)
# ---------------------------------------------------------------------------------------------------


def test_a_lone_emulated_env_rejects_malformed_outputs_as_serial_does():
    """GymnasiumPufferEnv.step (transition()) and Serial's batched step give the same sentence."""
    from shoal.emulation import GymnasiumPufferEnv

    from envs_for_tests import BAD_OUTPUTS, BadOutputs

    with make(bad_output_creators(2, bad_env=1), backend="Serial", num_envs=2) as vecenv:
        batched = check_bad_output_errors(step_until_bad_outputs(vecenv), "env 1")
    env = GymnasiumPufferEnv(BadOutputs(bad=True))
    env.reset()
    actions = np.zeros(1, np.int32)
    for (_, _, expected), serial_said in zip(BAD_OUTPUTS, batched):
        env.step(actions)  # well formed
        with pytest.raises(EnvError) as info:
            env.step(actions)
        assert str(info.value).startswith(f"step() returned {expected}"), str(info.value)
        assert f"EnvError: {info.value}" == serial_said
        env.reset()


class LoosePlainOutputs:
    """Well-formed but not plain step outputs (a list observation, a 0-d array reward, integer 0/1
    and 0-d bool flags), which miss the batched loop's fast test and must pass the full check."""

    def __init__(self, bad_reset: bool = False):
        import gymnasium
        from gymnasium import spaces

        class Env(gymnasium.Env):
            observation_space = spaces.Box(-10.0, 10.0, (3,), np.float32)
            action_space = spaces.Discrete(2)
            resets = 0

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                self.t = 0
                self.resets += 1
                if bad_reset and self.resets > 1:  # the autoreset's observation
                    return np.zeros(1, np.float32), {}
                return np.zeros(3, np.float32), {}

            def step(self, action):
                self.t += 1
                observation = [float(self.t), 2.0, float(action)]
                return observation, np.array(2.5), int(self.t == 3), np.array(False), {}

        self.env = Env()

    def __call__(self):
        return self.env


def test_less_plain_well_formed_outputs_pass_the_batched_check():
    with make([LoosePlainOutputs(), LoosePlainOutputs()], backend="Serial", num_envs=2) as vecenv:
        vecenv.reset()
        for t in (1, 2, 3):
            observations, rewards, terminals, truncations, infos = vecenv.step(np.array([0, 1], np.int32))
            # at t == 3 the episode ends: the row holds the next episode's first observation (zeros)
            expected_obs = np.zeros((2, 3)) if t == 3 else [[t, 2.0, 0.0], [t, 2.0, 1.0]]
            np.testing.assert_array_equal(observations, np.array(expected_obs, np.float32))
            np.testing.assert_array_equal(rewards, [2.5, 2.5])
            np.testing.assert_array_equal(terminals, [t == 3, t == 3])
            np.testing.assert_array_equal(truncations, [False, False])
        returns = sorted(info["episode_return"] for info in infos if "episode_return" in info)
        assert returns == [7.5, 7.5]


def test_a_malformed_autoreset_observation_is_an_env_error_naming_the_env():
    creators = [LoosePlainOutputs(), LoosePlainOutputs(bad_reset=True)]
    with make(creators, backend="Serial", num_envs=2) as vecenv:
        vecenv.reset()
        actions = np.zeros(2, np.int32)
        vecenv.step(actions)
        vecenv.step(actions)
        with pytest.raises(
            EnvError, match=r"^env 1 raised EnvError: reset\(\) \(autoreset\) returned an observation of shape \(1,\)"
        ):
            vecenv.step(actions)
