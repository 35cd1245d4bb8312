"""Loads the template env built by CMakeLists.txt here and steps it with the native thread pool.

python run_random_walk.py build/random_walk.so
"""

import sys

import numpy as np

import shoal.native
import shoal.vector

RandomWalk = shoal.native.load_env(sys.argv[1], "random_walk", "RandomWalk")

with shoal.vector.make(
    RandomWalk, backend="Multithreading", num_envs=256, max_num_threads=2, seed=1, env_kwargs={"size": 7}
) as vecenv:
    vecenv.reset()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(200):
        _, rewards, terminals, truncations, infos = vecenv.step(rng.integers(0, 2, 256))
        episodes += int((terminals | truncations).sum())
    print(f"episodes finished: {episodes}")
