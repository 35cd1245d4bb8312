"""A third-party env family for shoal: ``corridor:short`` and ``corridor:long`` in config.ini.

Installed (``pip install examples/env_family``), its entry point ``corridor = shoal_family_example`` in
the group ``shoal.env_families`` makes ``[env] name = corridor:<name>`` work in ``shoal run``, ``shoal
bench`` and ``shoal autotune``; see docs/native-sdk.md "Env families".
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from shoal import PufferEnv
from shoal.errors import APIUsageError
from shoal.seeding import env_seed

LENGTHS = {"short": 5, "long": 50}


class Corridor(PufferEnv):
    """Walkers in a corridor of ``length`` cells: action 1 steps right, 0 left; reward 1 at the far end."""

    def __init__(self, length: int = 5, num_agents: int = 1, buf=None, seed: int = 0):
        self.single_observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.num_agents = num_agents
        self.length = length
        super().__init__(buf, seed)

    def reset(self, seed=None):
        self.rng = np.random.default_rng(env_seed(self.seed if seed is None else seed, 0))
        self.position = np.zeros(self.num_agents, dtype=np.int64)
        self.observations[:] = 0.0
        self.rewards[:] = 0.0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        return self.observations, []

    def step(self, actions):
        self.position = np.maximum(self.position + 2 * np.asarray(actions).reshape(-1) - 1, 0)
        ended = self.position >= self.length
        self.rewards[:] = ended
        self.terminals[:] = ended
        self.observations[:, 0] = self.position / self.length
        if ended.any():
            self.final_observations[ended] = self.observations[ended]
            self.position[ended] = 0
            self.observations[ended] = 0.0
        return self.observations, self.rewards, self.terminals, self.truncations, []


# The family's interface (shoal.families): env_class, parameters, names, summary.


def names(options: dict | None = None) -> list[str]:
    return list(LENGTHS)


def env_class(name: str, options: dict | None = None, **kwargs):
    """The creator of ``corridor:<name>``: make() calls it with the [env] keywords."""
    if name not in LENGTHS:
        raise APIUsageError(f"no corridor {name!r}; one of {names()}")

    def make_corridor(num_agents: int = 1, buf=None, seed: int = 0):
        return Corridor(LENGTHS[name], num_agents, buf, seed)

    return make_corridor


def parameters(name: str, options: dict | None = None) -> list[str]:
    return ["num_agents"]


def summary() -> str:
    return f"Corridors ([env] name = corridor:<name>; from shoal-family-example): {', '.join(names())}"
