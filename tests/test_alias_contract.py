"""The alias contract of returned arrays: recv() (and reset()/step()) return views of the vector's
own buffers, valid until the next send() on that vector. Until then nothing writes them, even while
other batches are stepped in the background (pipelined Multithreading, batched Multiprocessing);
after it they may change, so a caller that keeps results past the next send copies them."""

import time

import numpy as np
import pytest

from shoal.envs import Deep
from shoal.vector import make

NUM_ENVS = 4
MODES = {
    "Serial": ("Serial", {}),
    "Multiprocessing": ("Multiprocessing", {"num_workers": 2}),
    "Multiprocessing batched": ("Multiprocessing", {"num_workers": 2, "batch_size": 2}),
    "Multiprocessing batched, not zero-copy": (
        "Multiprocessing",
        {"num_workers": 2, "batch_size": 2, "zero_copy": False},
    ),
    "Multiprocessing batched, sync_traj=False": (
        "Multiprocessing",
        {"num_workers": 2, "batch_size": 2, "sync_traj": False},
    ),
    "Multithreading": ("Multithreading", {"max_num_threads": 2}),
    "Multithreading pipelined": ("Multithreading", {"batch_size": 2, "max_num_threads": 2}),
    "PufferEnv": ("PufferEnv", {}),
}


@pytest.mark.parametrize("name", list(MODES))
def test_returned_views_hold_their_values_until_the_next_send(name, time_limit):
    time_limit(120)
    backend, options = MODES[name]
    kwargs = {"work": 200_000}  # ~0.4 ms an env step: other batches are still stepping during the pause
    if backend == "PufferEnv":
        vecenv = Deep(num_envs=NUM_ENVS, seed=2, **kwargs)
    else:
        vecenv = make(Deep, backend=backend, num_envs=NUM_ENVS, seed=2, env_kwargs=kwargs, **options)
    rng = np.random.default_rng(0)
    with vecenv:
        vecenv.async_reset(2)
        for _ in range(30):
            obs, rewards, terminals, truncations, _, agent_ids, masks = vecenv.recv()
            views = {
                "obs": obs,
                "rewards": rewards,
                "terminals": terminals,
                "truncations": truncations,
                "agent_ids": agent_ids,
                "masks": masks,
                "final_observations": vecenv.final_observations,
            }
            copies = {key: value.copy() for key, value in views.items()}
            time.sleep(0.003)  # background work (other batches, the driver, workers) runs meanwhile
            for key, value in views.items():
                np.testing.assert_array_equal(value, copies[key], err_msg=f"{name}: {key} changed before send")
            vecenv.send(rng.integers(0, 4, vecenv.agents_per_batch).astype(np.int32))
