"""What every emulated env shares: the wrapped env, its actions, rendering and closing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..pufferenv import PufferEnv


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
