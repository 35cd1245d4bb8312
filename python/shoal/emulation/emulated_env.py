"""What every emulated env shares: the wrapped env, its actions, rendering and closing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import APIUsageError
from ..pufferenv import PufferEnv


def env_to_wrap(env, env_creator, env_args, env_kwargs, owner: str):
    """The env an emulation wrapper wraps, given PufferLib's way: ``env``, or ``env_creator(*env_args, **env_kwargs)``."""
    if (env is None) == (env_creator is None):
        raise APIUsageError(f"{owner} takes exactly one of env= (an env) and env_creator= (a function that makes one)")
    if env_creator is not None:
        return env_creator(*env_args, **(env_kwargs or {}))
    if env_args or env_kwargs:
        raise APIUsageError(f"{owner}: env_args and env_kwargs go with env_creator=, not with an env already made")
    return env


def array_action(space) -> Callable[[np.ndarray], np.ndarray]:
    """Converter of one action row to a fresh array of the space's dtype (MultiDiscrete, Box)."""
    dtype = np.dtype(space.dtype)

    def convert(row) -> np.ndarray:
        return np.array(row, dtype=dtype)

    return convert


class EmulatedEnv(PufferEnv):
    """A PufferEnv over a wrapped ``self.env``: rendering and closing go to that env (once)."""

    env: Any
    _closed = False

    def render(self):
        return self.env.render()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.env.close()
        super().close()

    def _clear_step_outputs(self) -> None:
        """After a reset: no final observation, reward or episode end yet."""
        self.final_observations[...] = 0
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
