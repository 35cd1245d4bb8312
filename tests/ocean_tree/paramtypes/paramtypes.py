"""A test env in PufferLib's Ocean layout (its class is read by shoal, never imported)."""

import gymnasium
import numpy as np
import pufferlib
from pufferlib.ocean.paramtypes import binding


class ParamTypes(pufferlib.PufferEnv):
    def __init__(self, num_envs=1, render_mode=None, scale=0.1, flag=False, count=3, buf=None, seed=0):
        self.single_observation_space = gymnasium.spaces.Box(low=-np.inf, high=np.inf, shape=(3,), dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = num_envs
        super().__init__(buf)
        self.c_envs = binding.vec_init(
            self.observations,
            self.actions,
            self.rewards,
            self.terminals,
            self.truncations,
            num_envs,
            seed,
            scale=scale,
            flag=flag,
            count=count,
        )
