"""A test env in PufferLib's Ocean layout (its class is read by shoal, never imported)."""

import gymnasium
import numpy as np
import pufferlib
from pufferlib.ocean.sharedtable import binding


class SharedTable(pufferlib.PufferEnv):
    def __init__(self, num_envs=1, render_mode=None, count=64, length=20, buf=None, seed=0):
        self.single_observation_space = gymnasium.spaces.Box(low=0, high=255, shape=(2,), dtype=np.uint8)
        self.single_action_space = gymnasium.spaces.Discrete(3)
        self.num_agents = num_envs
        super().__init__(buf)
        self.c_state = binding.shared(count=count)
        self.c_envs = binding.vec_init(
            self.observations,
            self.actions,
            self.rewards,
            self.terminals,
            self.truncations,
            num_envs,
            seed,
            length=length,
            state=self.c_state,
        )
