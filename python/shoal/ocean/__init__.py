"""PufferLib's Ocean envs (C envs written against PufferLib's env_binding.h) on shoal.

    Snake = shoal.ocean.env_class("snake")            # from the pinned pufferlib 3.0.0 sdist
    Snake = shoal.ocean.env_class("snake", "path/to/PufferLib", num_snakes=64)
    vecenv = shoal.vector.make(Snake, backend="Multithreading", num_envs=8)

The env's C files are compiled unmodified against shoal's replacement of the binding contract
(python/shoal/ocean/csrc); its spaces and keyword arguments are read from its Python class
without importing PufferLib. See OceanEnv for what its episodes and infos mean.
"""

from .env import OceanEnv, env_class
from .errors import OceanError
from .source import available_envs, ocean_dir


def available(source_tree=None) -> list[str]:
    """Names of the Ocean envs in ``source_tree`` (default: the pinned pufferlib 3.0.0 sdist)."""
    return available_envs(ocean_dir(source_tree))


__all__ = ["OceanEnv", "OceanError", "available", "env_class"]
