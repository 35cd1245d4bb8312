"""final_observations means the same on every backend and batching mode: the rows of the batch just
received, aligned with its observations, so the README's idiom
``vecenv.final_observations[terminals | truncations]`` works everywhere and gives Serial's rows."""

import numpy as np
import pytest

from shoal.envs import CartPole
from shoal.vector import make

NUM_ENVS = 4
BATCHES = 400  # every env ends several CartPole episodes

MODES = {
    "Serial": ("Serial", {}),
    "Multiprocessing": ("Multiprocessing", {"num_workers": 2}),
    "Multiprocessing batched": ("Multiprocessing", {"num_workers": 2, "batch_size": 2}),
    "Multiprocessing batched, not zero-copy": (
        "Multiprocessing",
        {"num_workers": 2, "batch_size": 2, "zero_copy": False},
    ),
    "Multithreading": ("Multithreading", {"max_num_threads": 2}),
    "Multithreading pipelined": ("Multithreading", {"batch_size": 2, "max_num_threads": 2}),
    "Multithreading pipelined, 4 buffers": ("Multithreading", {"batch_size": 1, "max_num_threads": 2}),
    "PufferEnv": ("PufferEnv", {}),
}


def final_observations_by_env(name: str) -> dict:
    """Each env's final observations in episode order, read with the README's idiom; every env's
    action depends only on its own step count, so the trajectories do not depend on the batching."""
    backend, options = MODES[name]
    if backend == "PufferEnv":
        vecenv = CartPole(num_envs=NUM_ENVS, seed=3)
    else:
        vecenv = make(CartPole, backend=backend, num_envs=NUM_ENVS, seed=3, **options)
    finals = {env: [] for env in range(NUM_ENVS)}
    steps = np.zeros(NUM_ENVS, np.int64)
    with vecenv:
        vecenv.async_reset(3)
        for _ in range(BATCHES):
            obs, _, terminals, truncations, _, agent_ids, _ = vecenv.recv()
            done = terminals | truncations
            final = vecenv.final_observations[done]  # the idiom
            assert vecenv.final_observations.shape == obs.shape, name
            for env, row in zip(agent_ids[done], final):
                finals[int(env)].append(row.copy())
            for j, row in enumerate(np.flatnonzero(done)):  # batch-relative integer indexing: the same rows
                np.testing.assert_array_equal(vecenv.final_observations[row], final[j])
            actions = ((steps[agent_ids] * 7 + agent_ids) % 3 == 0).astype(np.int32)
            steps[agent_ids] += 1
            vecenv.send(actions)
    return finals


@pytest.fixture(scope="module")
def serial():
    finals = final_observations_by_env("Serial")
    assert all(len(rows) >= 3 for rows in finals.values()), "every env must end several episodes"
    return finals


@pytest.mark.parametrize("name", [name for name in MODES if name != "Serial"])
def test_final_observations_are_the_batch_rows_and_equal_serials(serial, name, time_limit):
    time_limit(120)
    finals = final_observations_by_env(name)
    for env in range(NUM_ENVS):
        # a batched backend may have run fewer steps of this env; what it returned must be Serial's
        got, want = finals[env], serial[env]
        assert got, f"{name}: env {env} ended no episode"
        np.testing.assert_array_equal(np.stack(got), np.stack(want[: len(got)]), err_msg=f"{name}: env {env}")
