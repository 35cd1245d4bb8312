"""Spaces of vectorized envs and the per-send action check."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ._native import int_actions_below
from .errors import APIUsageError

ACTION_SPACES = (spaces.Discrete, spaces.MultiDiscrete, spaces.Box)


def check_action_space(space: spaces.Space, owner: str = "") -> None:
    """The rules every action space obeys: Discrete, MultiDiscrete or Box, integer actions from 0."""
    prefix = f"{owner}: " if owner else ""
    if not isinstance(space, ACTION_SPACES):
        raise APIUsageError(f"{prefix}action space must be Discrete, MultiDiscrete or Box, got {space}")
    if isinstance(space, spaces.Discrete) and space.start != 0:
        raise APIUsageError(f"{prefix}Discrete action spaces must start at 0, got start={space.start}")
    if isinstance(space, spaces.MultiDiscrete) and np.any(space.start != 0):
        raise APIUsageError(f"{prefix}MultiDiscrete action spaces must start at 0, got start={space.start}")


def action_dtype(space: spaces.Space) -> np.dtype:
    """dtype of the action buffer: int32 for (Multi)Discrete, float32 for Box."""
    check_action_space(space)
    return np.dtype(np.float32) if isinstance(space, spaces.Box) else np.dtype(np.int32)


def action_shape(space: spaces.Space) -> tuple:
    """Shape of one agent's action in the action buffer."""
    return () if isinstance(space, spaces.Discrete) else tuple(space.shape)


def joint_space(space: spaces.Space, n: int) -> spaces.Space:
    """The space of ``n`` stacked agents of ``space`` (what a batch of observations or actions holds)."""
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(np.full(n, space.n, dtype=np.int64), start=np.full(n, space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(np.broadcast_to(space.nvec, (n, *space.nvec.shape)).copy())
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, (n, *space.shape))
        high = np.broadcast_to(space.high, (n, *space.shape))
        return spaces.Box(low=low, high=high, dtype=space.dtype)
    raise APIUsageError(f"cannot stack a {type(space).__name__} space; emulate it first")


class ActionChecker:
    """Validates a batch of actions against one agent's action space, cheaply enough for every send.

    Precomputes the expected shape and bounds; a check is a shape compare, a dtype-kind compare and
    one vectorized pass over the values.
    """

    def __init__(self, space: spaces.Space, rows: int):
        check_action_space(space)
        self.space = space
        self.shape = (rows, *action_shape(space))
        self.dtype = action_dtype(space)
        self.scalar_bound = isinstance(space, spaces.Discrete)
        if isinstance(space, spaces.Discrete):
            self.upper = int(space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            self.upper = space.nvec.astype(np.int64)
        else:
            self.low = space.low.astype(np.float64)
            self.high = space.high.astype(np.float64)

    def __call__(self, actions) -> np.ndarray:
        """Returns ``actions`` as an ndarray after checking it; raises APIUsageError naming what is wrong."""
        if self.scalar_bound and type(actions) is np.ndarray and actions.shape == self.shape:
            # Discrete's common case in one native pass (numpy's reduction, cold after the envs ran,
            # cost several times as much); anything it cannot confirm takes the full check below.
            if int_actions_below(actions, self.upper):
                return actions
        if not isinstance(actions, np.ndarray):
            if not isinstance(actions, (list, tuple)) and not np.isscalar(actions):
                raise APIUsageError(f"actions must be a numpy array (or list), got {type(actions).__name__}")
            actions = np.asarray(actions)
        if actions.shape != self.shape:
            raise APIUsageError(
                f"actions have shape {actions.shape}, expected {self.shape} "
                f"(agents_per_batch={self.shape[0]}, action space {self.space})"
            )
        kind = actions.dtype.kind
        if self.dtype.kind == "i":
            if kind not in "iu":
                raise APIUsageError(f"actions for {self.space} must be integers, got dtype {actions.dtype}")
            # Viewing signed values as unsigned maps negatives above every bound, so one reduction
            # (max for Discrete, a comparison for MultiDiscrete's per-dimension bounds) checks both ends.
            values = actions if kind == "u" else actions.view(f"u{actions.dtype.itemsize}")
            if actions.size and (values.max() >= self.upper if self.scalar_bound else np.any(values >= self.upper)):
                bad = actions[(values >= self.upper)]
                raise APIUsageError(f"actions out of range for {self.space}: got {bad.ravel()[:5].tolist()}")
        else:
            if kind not in "fiu":
                raise APIUsageError(f"actions for {self.space} must be floats, got dtype {actions.dtype}")
            # NaN fails both comparisons, so it is rejected with the out-of-range values.
            if actions.size and not (np.all(actions >= self.low) and np.all(actions <= self.high)):
                raise APIUsageError(f"actions outside {self.space} (or NaN)")
        return actions
