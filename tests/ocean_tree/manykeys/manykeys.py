"""A test env in PufferLib's Ocean layout (its class is read by shoal, never imported)."""

import gymnasium
import numpy as np
import pufferlib
from pufferlib.ocean.manykeys import binding


class ManyKeys(pufferlib.PufferEnv):
    def __init__(self, num_envs=1, render_mode=None, log_interval=4, buf=None, seed=0):
        self.single_observation_space = gymnasium.spaces.Box(low=0, high=np.inf, shape=(1,), dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = num_envs
        self.log_interval = log_interval
        self.tick = 0
        super().__init__(buf)
        self.c_envs = binding.vec_init(
            self.observations, self.actions, self.rewards, self.terminals, self.truncations, num_envs, seed
        )

    def step(self, actions):
        self.actions[:] = actions
        self.tick += 1
        binding.vec_step(self.c_envs)
        info = []
        if self.tick % self.log_interval == 0:
            info.append(binding.vec_log(self.c_envs))
        return (self.observations, self.rewards, self.terminals, self.truncations, info)
