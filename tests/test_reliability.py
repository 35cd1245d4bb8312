"""Reliability: faults end in a clear exception or a clean exit within seconds, and create/step/close
cycles leak no processes, threads, file descriptors or shared memory."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium
import numpy as np
import psutil
import pytest

from shoal.envs import CartPole
from shoal.vector import make

from envs_for_tests import make_cartpole


class SlowStep(gymnasium.Env):
    """Each step sleeps; a caller waiting in recv() is then interrupted."""

    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        time.sleep(3)
        return np.zeros(2, np.float32), 0.0, False, False, {}


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter that can import this folder's test envs."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_keyboard_interrupt_while_waiting_in_recv(time_limit):
    time_limit(30)
    vecenv = make(SlowStep, backend="Multiprocessing", num_envs=2, num_workers=2, overwork=True)
    vecenv.reset()
    vecenv.send(np.zeros(2, np.int32))
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        vecenv.recv()
    assert time.monotonic() - started < 2
    pids = vecenv.worker_pids
    started = time.monotonic()
    vecenv.close()
    assert time.monotonic() - started < 4
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


def test_interpreter_exit_with_a_live_pool():
    result = run_python(
        """
        import numpy as np, shoal.vector
        from shoal.envs import CartPole
        v = shoal.vector.make(CartPole, backend="Multithreading", num_envs=512, max_num_threads=3)
        v.reset()
        for _ in range(50):
            v.step(np.zeros(512, np.int32))
        print("exiting with the pool alive")
    """,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "exiting with the pool alive" in result.stdout


def test_interpreter_exit_with_live_worker_processes():
    result = run_python(
        """
        import numpy as np, shoal.vector
        from envs_for_tests import make_cartpole
        v = shoal.vector.make(make_cartpole, backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True)
        v.reset()
        v.send(np.zeros(4, np.int32))
        print("exiting with a step in flight")
    """,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "exiting with a step in flight" in result.stdout


def test_fork_after_the_pool_started():
    result = run_python(
        """
        import os, numpy as np, shoal.vector
        from shoal.envs import CartPole
        v = shoal.vector.make(CartPole, backend="Multithreading", num_envs=256, max_num_threads=3, seed=1)
        obs, _ = v.reset()
        before = v.step(np.ones(256, np.int32))[0].copy()
        pid = os.fork()
        if pid == 0:
            # The child uses the inherited vector (its pool threads do not exist here) and a new one.
            out = v.step(np.ones(256, np.int32))[0]
            w = shoal.vector.make(CartPole, backend="Multithreading", num_envs=256, max_num_threads=2, seed=1)
            w.reset()
            same = np.array_equal(w.step(np.ones(256, np.int32))[0], before)
            w.close(); v.close()
            os._exit(0 if same and out.shape == (256, 4) else 3)
        _, status = os.waitpid(pid, 0)
        v.step(np.ones(256, np.int32))
        v.close()
        print("child status", os.waitstatus_to_exitcode(status))
    """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "child status 0" in result.stdout


def test_native_vector_garbage_collected_without_close():
    process = psutil.Process()
    baseline = process.num_threads()
    vecenv = make(CartPole, backend="Multithreading", num_envs=64, max_num_threads=4)
    vecenv.reset()
    assert process.num_threads() == baseline + 3
    del vecenv
    gc.collect()
    deadline = time.monotonic() + 2
    while process.num_threads() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.num_threads() == baseline


def resources() -> dict:
    process = psutil.Process()
    return {
        "children": len(process.children(recursive=True)),
        "threads": process.num_threads(),
        "fds": len(os.listdir("/proc/self/fd")),
        "shm": len(os.listdir("/dev/shm")),
        "rss": process.memory_info().rss,
    }


CYCLES = {
    "Serial": (make_cartpole, dict(backend="Serial", num_envs=4), 1000),
    "Multithreading": (CartPole, dict(backend="Multithreading", num_envs=64, max_num_threads=3), 1000),
    "PufferEnv": (CartPole, dict(env_kwargs={"num_envs": 64}), 1000),
    # A cycle forks two workers (~0.28 s): 250 cycles still show a leak of one resource per cycle 250 times over.
    "Multiprocessing": (make_cartpole, dict(backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True), 250),
}


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(CYCLES))
def test_create_step_close_cycles_leak_nothing(backend, time_limit):
    time_limit(600)
    creator, kwargs, cycles = CYCLES[backend]

    def cycle():
        with make(creator, **kwargs) as vecenv:
            vecenv.reset()
            actions = np.zeros(vecenv.agents_per_batch, np.int32)
            for _ in range(3):
                vecenv.step(actions)

    for _ in range(20):  # warm-up: imports, allocator pools, lazily created helpers
        cycle()
    gc.collect()
    before = resources()
    for _ in range(cycles):
        cycle()
    gc.collect()
    deadline = time.monotonic() + 3
    after = resources()
    while any(after[k] > before[k] for k in ("children", "threads", "fds", "shm")) and time.monotonic() < deadline:
        time.sleep(0.05)
        after = resources()
    for key in ("children", "threads", "fds", "shm"):
        assert after[key] <= before[key], f"{backend}: {key} grew from {before[key]} to {after[key]}"
    # A leak of one small buffer per cycle would show up well above this bound.
    assert after["rss"] - before["rss"] < 32 * 2**20, f"{backend}: RSS grew by {after['rss'] - before['rss']}"
