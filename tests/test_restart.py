"""Recovery (issue 13): with ``on_worker_failure="restart"`` a worker killed in the middle of a long
run is replaced, its envs restart from seeds derived from (seed, env index, restart count), their
rows say so (truncations, infos), every other env's trajectory is bit-identical to a run without the
kill, and nothing leaks."""

import gc
import os
import signal
import time

import gymnasium
import numpy as np
import psutil
import pytest

from shoal.errors import WorkerError
from shoal.seeding import env_seed, restart_seed
from shoal.vector import make

from envs_for_tests import make_cartpole

STEPS = 10_000
KILL_AT = 5_000
NUM_ENVS, NUM_WORKERS, SEED = 4, 2, 11


def resources() -> dict:
    """Child processes and open file descriptors of this process (shared memory is mapped through fds;
    /dev/shm itself is shared with every other process on the machine, so it is not counted). A vector
    left in a reference cycle goes first: its shared memory lives as long as it does."""
    gc.collect()
    process = psutil.Process()
    return {"children": len(process.children(recursive=True)), "fds": process.num_fds()}


def run(kill_worker: int | None):
    """STEPS steps of CartPole under Multiprocessing; kills ``kill_worker`` before step KILL_AT."""
    actions = np.random.default_rng(5).integers(0, 2, (STEPS, NUM_ENVS), dtype=np.int32)
    trajectory = np.zeros((STEPS, NUM_ENVS, 7), np.float32)  # obs (4), reward, terminal, truncation
    restarts, pids = [], []
    with make(
        make_cartpole,
        backend="Multiprocessing",
        num_envs=NUM_ENVS,
        num_workers=NUM_WORKERS,
        seed=SEED,
        on_worker_failure="restart",
    ) as vecenv:
        vecenv.reset()
        pids.extend(vecenv.worker_pids)
        for t in range(STEPS):
            if t == KILL_AT and kill_worker is not None:
                os.kill(vecenv.worker_pids[kill_worker], signal.SIGKILL)
            observations, rewards, terminals, truncations, infos = vecenv.step(actions[t])
            trajectory[t, :, :4] = observations
            trajectory[t, :, 4], trajectory[t, :, 5], trajectory[t, :, 6] = rewards, terminals, truncations
            restarts += [(t, info["worker_restart"]) for info in infos if "worker_restart" in info]
        pids.extend(vecenv.worker_pids)
    return trajectory, restarts, pids


def test_sigkill_mid_run_restarts_the_worker_and_spares_the_others(time_limit):
    time_limit(300)
    reference, no_restarts, _ = run(None)
    before = resources()  # after one full run: imports, multiprocessing's heap arenas
    killed, restarts, pids = run(kill_worker=1)
    assert no_restarts == []

    # The run completed; the kill cost worker 1 (envs 2, 3) exactly one restart, at step KILL_AT.
    assert len(restarts) == 1
    t, restart = restarts[0]
    assert t == KILL_AT and restart["worker"] == 1 and restart["envs"] == [2, 3] and restart["restarts"] == 1
    assert "SIGKILL" in restart["reason"]

    # Envs of worker 0: every step bit-identical to the run without the kill.
    assert np.array_equal(killed[:, :2], reference[:, :2])
    # Envs of worker 1: identical before the kill; at KILL_AT the first observation of an episode reset
    # from restart_seed(seed, 1), reward 0, truncated.
    assert np.array_equal(killed[:KILL_AT, 2:], reference[:KILL_AT, 2:])
    for env in (2, 3):
        expected, _ = gymnasium.make("CartPole-v1").reset(seed=env_seed(restart_seed(SEED, 1), env))
        np.testing.assert_array_equal(killed[KILL_AT, env, :4], expected)
        np.testing.assert_array_equal(killed[KILL_AT, env, 4:], [0, 0, 1])
    assert not np.array_equal(killed[KILL_AT + 1 :, 2:], reference[KILL_AT + 1 :, 2:])

    # Nothing leaks: processes (the killed one and its replacement included), fds, shared memory.
    deadline = time.monotonic() + 5
    after = resources()
    while after != before and time.monotonic() < deadline:
        time.sleep(0.05)
        after = resources()
    assert after == before
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


FAIL_TO_BUILD = []  # non-empty: creators fail (workers forked after it is set see it)


def make_cartpole_unless_told() -> gymnasium.Env:
    if FAIL_TO_BUILD:
        raise RuntimeError("planned failure while rebuilding")
    return make_cartpole()


def test_restart_failure_closes_with_worker_error(time_limit):
    """A replacement that cannot build its envs ends the vector with WorkerError (no restart loop)."""
    time_limit(60)
    vecenv = make(
        make_cartpole_unless_told,
        backend="Multiprocessing",
        num_envs=2,
        num_workers=2,
        on_worker_failure="restart",
        start_method="fork",
    )
    pids = vecenv.worker_pids
    try:
        vecenv.reset()
        FAIL_TO_BUILD.append(True)
        os.kill(pids[0], signal.SIGKILL)
        with pytest.raises(WorkerError, match=r"worker 0 could not be restarted.*planned failure while rebuilding"):
            vecenv.step(np.zeros(2, np.int32))
        assert vecenv.closed
    finally:
        FAIL_TO_BUILD.clear()
        vecenv.close()
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
