"""Bundled native envs, each usable with every backend.

CartPole  Gymnasium CartPole-v1 dynamics, bit for bit
Squared   tiny grid target task
Grid      multi-agent grid: 4 agents per env, traps that kill, masks for dead agents
Deep      CPU-deep env whose per-step cost is the parameter `work`
"""

from .. import _native
from ..native import NativeEnv, env_class

CartPole = env_class(_native.bundled_spec("cartpole"), "CartPole")
Squared = env_class(_native.bundled_spec("squared"), "Squared")
Grid = env_class(_native.bundled_spec("grid"), "Grid")
Deep = env_class(_native.bundled_spec("deep"), "Deep")

BUNDLED = {"cartpole": CartPole, "squared": Squared, "grid": Grid, "deep": Deep}

__all__ = ["CartPole", "Squared", "Grid", "Deep", "BUNDLED", "NativeEnv"]
