"""Compiles the template MuJoCo task here (cached) and steps it on the native thread pool.

python run_slider_reach.py
"""

from pathlib import Path

import numpy as np

import shoal.mujoco
import shoal.vector

HERE = Path(__file__).resolve().parent
SliderReach = shoal.mujoco.source_class(HERE / "slider_reach.c", "slider_reach", "SliderReach-v0", target=1.5)

with shoal.vector.make(SliderReach, backend="Multithreading", num_envs=64, max_num_threads=2, seed=1) as vecenv:
    observations, _ = vecenv.reset()
    episodes = 0
    for _ in range(400):
        push = np.clip(observations[:, -1:] * 2.0, -1, 1).astype(np.float32)  # a hand-written policy
        observations, rewards, terminals, truncations, infos = vecenv.step(push)
        episodes += int((terminals | truncations).sum())
    print(f"observation shape {observations.shape}, episodes finished: {episodes}")
