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


FLOAT32_MAX = float(np.finfo(np.float32).max)


class ActionChecker:
    """Validates a batch of actions against one agent's action space, cheaply enough for every send.

    The one action rule of every backend: ``check(actions)`` returns an ndarray whose values, as
    numpy reads them (any byte order, width, sign or strides), are in the space, and the env sees
    exactly those values once they are written with ``np.copyto(buffer, checked, casting="unsafe")``
    (int32 for (Multi)Discrete, float32 for Box, rounded to nearest); anything else is an
    APIUsageError naming the dtype or the values. Integer spaces take every numpy integer dtype,
    Box every integer and float dtype; bool, complex, object and text dtypes are refused. Native
    vectors read native-endian, contiguous int32/float32 in place after their own check of the same
    rule (``shoal::Vector::check_actions`` in vector.hpp); everything else comes here.
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
            # Only unbounded spaces admit finite values that float32 cannot hold.
            self.unbounded = not (np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high)))

    def __call__(self, actions) -> np.ndarray:
        """Returns ``actions`` as an ndarray after checking it; raises APIUsageError naming what is wrong."""
        if self.scalar_bound and type(actions) is np.ndarray and actions.shape == self.shape:
            # Discrete's common case in one native pass (numpy's reduction, cold after the envs ran,
            # cost several times as much); anything it cannot confirm takes the full check below.
            if int_actions_below(actions, self.upper):
                return actions
        actions = self._as_array(actions)
        if actions.shape != self.shape:
            raise APIUsageError(
                f"actions have shape {actions.shape}, expected {self.shape} "
                f"(agents_per_batch={self.shape[0]}, action space {self.space})"
            )
        if self.dtype.kind == "i":
            self._check_integers(actions)
        else:
            self._check_floats(actions)
        return actions

    def converted(self, actions) -> np.ndarray:
        """The checked actions as a new C-contiguous array of the buffer's dtype: what the env sees."""
        out = np.empty(self.shape, self.dtype)
        np.copyto(out, self(actions), casting="unsafe")
        return out

    @staticmethod
    def _as_array(actions) -> np.ndarray:
        if type(actions) is np.ndarray:
            return actions
        if isinstance(actions, np.ndarray):
            return np.asarray(actions)  # a subclass (matrix, masked array): its plain values
        if not isinstance(actions, (list, tuple)) and not np.isscalar(actions):
            raise APIUsageError(f"actions must be a numpy array (or list), got {type(actions).__name__}")
        try:
            return np.asarray(actions)
        except (ValueError, TypeError, OverflowError) as error:
            raise APIUsageError(f"actions do not form a numeric array: {error}") from None

    def _check_integers(self, actions: np.ndarray) -> None:
        if actions.dtype.kind not in "iu":
            raise APIUsageError(f"actions for {self.space} must be integers, got dtype {actions.dtype}")
        if not actions.size:
            return
        # Compared as numpy reads them (sign, width and byte order included), never as raw bytes.
        if self.scalar_bound:
            inside = actions.min() >= 0 and actions.max() < self.upper
        else:
            inside = not np.any((actions < 0) | (actions >= self.upper))
        if not inside:
            bad = actions[(actions < 0) | (actions >= self.upper)]
            raise APIUsageError(
                f"actions out of range for {self.space} (dtype {actions.dtype}): got {bad.ravel()[:5].tolist()}"
            )

    def _check_floats(self, actions: np.ndarray) -> None:
        if actions.dtype.kind not in "fiu":
            raise APIUsageError(f"actions for {self.space} must be floats or integers, got dtype {actions.dtype}")
        if not actions.size:
            return
        # NaN fails both comparisons, so it is rejected with the out-of-range values.
        if not (np.all(actions >= self.low) and np.all(actions <= self.high)):
            raise APIUsageError(f"actions outside {self.space} (or NaN), dtype {actions.dtype}")
        if self.unbounded and actions.dtype.itemsize > 4 and actions.dtype.kind == "f":
            finite = np.isfinite(actions)
            if np.any(finite & (np.abs(actions) > FLOAT32_MAX)):
                # Refused rather than cast: numpy would turn them into inf (with a warning).
                raise APIUsageError(
                    f"actions of dtype {actions.dtype} hold finite values beyond float32's range "
                    f"(|x| > {FLOAT32_MAX:.7g}), which the float32 action buffer cannot hold"
                )
