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

#: make()'s box_actions: what Box actions outside the bounds do (pass is Gymnasium's and PufferLib's way)
BOX_ACTIONS = ("pass", "clip", "strict")
BOX_REMEDY = (
    "box_actions='strict' refuses values outside the bounds and NaN; clip them yourself, or make the "
    "vector with box_actions='clip' (clipped to the bounds) or 'pass' (the default: the env gets them as "
    "given, as Gymnasium and PufferLib pass them)"
)


def check_box_actions(value) -> str:
    """make()'s box_actions option: "pass" (default), "clip" or "strict"."""
    if value not in BOX_ACTIONS:
        raise APIUsageError(
            f"box_actions must be one of {BOX_ACTIONS}, got {value!r}: 'pass' gives Box actions to the env "
            "as they are, 'clip' clips them to the bounds, 'strict' refuses values outside the bounds"
        )
    return value


def _where(index: tuple, rows_only: bool) -> str:
    """'row r' or 'row r, dimension d' of an action's index in the batch."""
    if rows_only or len(index) == 1:
        return f"row {index[0]}"
    return f"row {index[0]}, dimension {', '.join(str(i) for i in index[1:])}"


class ActionChecker:
    """Validates a batch of actions against one agent's action space, cheaply enough for every send.

    The one action rule of every backend: ``check(actions)`` returns an ndarray whose values, as
    numpy reads them (any byte order, width, sign or strides), are what the env must see, and the
    env sees exactly those values once they are written with ``np.copyto(buffer, checked,
    casting="unsafe")`` (int32 for (Multi)Discrete, float32 for Box, rounded to nearest); anything
    else is an APIUsageError naming the offending value, its row and the remedy. Integer spaces take
    every numpy integer dtype and every value in [0, n); Box every integer and float dtype, with
    ``box_actions`` deciding values outside the bounds: "pass" (the default) gives them to the env as
    they are, NaN and infinities included, as Gymnasium and PufferLib do; "clip" clips them to the
    bounds (NaN stays NaN, as np.clip leaves it); "strict" refuses them and NaN. bool, complex,
    object and text dtypes are refused.

    Native vectors enforce the rule themselves on actions in their native form (native-endian,
    C-contiguous int32 or int64, float32 for a box, of the exact shape: shoal/actions.hpp, in one
    pass that checks and copies) and raise the error in this checker's words (``refusal``, the one
    text of each action error); every other form comes here first (``converted``).
    """

    def __init__(self, space: spaces.Space, rows: int, box_actions: str = "pass"):
        check_action_space(space)
        self.space = space
        self.shape = (rows, *action_shape(space))
        self.dtype = action_dtype(space)
        self.scalar_bound = isinstance(space, spaces.Discrete)
        self.box_actions = check_box_actions(box_actions)
        if isinstance(space, spaces.Discrete):
            self.upper = int(space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            self.upper = space.nvec.astype(np.int64)
        else:
            self.low = space.low.astype(np.float64)
            self.high = space.high.astype(np.float64)

    def __call__(self, actions) -> np.ndarray:
        """Returns ``actions`` as an ndarray after checking it (clipped in clip mode); raises
        APIUsageError naming what is wrong."""
        if self.scalar_bound and type(actions) is np.ndarray and actions.shape == self.shape:
            # Discrete's common case in one native pass (numpy's reduction, cold after the envs ran,
            # cost several times as much); anything it cannot confirm takes the full check below.
            if int_actions_below(actions, self.upper):
                return actions
        actions = self._as_array(actions)
        if actions.shape != self.shape:
            raise self._wrong_shape(actions)
        if self.dtype.kind == "i":
            self._check_integers(actions)
            return actions
        return self._checked_floats(actions)

    def converted(self, actions) -> np.ndarray:
        """The checked actions as a new C-contiguous array of the buffer's dtype: what the env sees."""
        out = np.empty(self.shape, self.dtype)
        np.copyto(out, self(actions), casting="unsafe")
        return out

    def refusal(self, actions: np.ndarray, index: int | None, count: int) -> APIUsageError:
        """The error of ``actions`` a native vector refused: its value at flat (row-major) ``index``
        is the first of ``count`` the rule refuses; ``index`` None: their form (shape, dtype)."""
        if index is None:
            try:
                self(actions)
            except APIUsageError as error:
                return error
            return APIUsageError(f"actions of dtype {actions.dtype} and shape {actions.shape} are not in a native form")
        where = tuple(int(i) for i in np.unravel_index(index, actions.shape))
        if actions.dtype.kind in "iu":
            return self._out_of_range(actions, where, count)
        return self._outside_box(actions, where, count)

    def _wrong_shape(self, actions: np.ndarray) -> APIUsageError:
        return APIUsageError(
            f"actions have shape {actions.shape}, expected {self.shape} "
            f"(agents_per_batch={self.shape[0]}, action space {self.space}): pass one row per agent"
        )

    def _out_of_range(self, actions: np.ndarray, index: tuple, count: int) -> APIUsageError:
        bound = self.upper if self.scalar_bound else int(self.upper[index[1:]])
        return APIUsageError(
            f"action {actions[index]!s} at {_where(index, self.scalar_bound)} is out of range for "
            f"{self.space} (dtype {actions.dtype}; {count} value(s) out of range): "
            f"actions must be integers in [0, {bound}); sample them from the action space, or "
            "clip the policy's output to it"
        )

    def _outside_box(self, actions: np.ndarray, index: tuple, count: int) -> APIUsageError:
        bounds = f"[{self.low[index[1:]]:.7g}, {self.high[index[1:]]:.7g}]"
        return APIUsageError(
            f"action {actions[index]!s} at {_where(index, False)} is outside {bounds} of {self.space} "
            f"(dtype {actions.dtype}; {count} value(s) outside or NaN): {BOX_REMEDY}"
        )

    @staticmethod
    def _as_array(actions) -> np.ndarray:
        if type(actions) is np.ndarray:
            return actions
        if isinstance(actions, np.ndarray):
            return np.asarray(actions)  # a subclass (matrix, masked array): its plain values
        if not isinstance(actions, (list, tuple)) and not np.isscalar(actions):
            raise APIUsageError(
                f"actions must be a numpy array (or list), got {type(actions).__name__}: "
                "convert them with np.asarray (a torch tensor: .cpu().numpy())"
            )
        try:
            return np.asarray(actions)
        except (ValueError, TypeError, OverflowError) as error:
            raise APIUsageError(f"actions do not form a numeric array: {error}") from None

    def _check_integers(self, actions: np.ndarray) -> None:
        if actions.dtype.kind not in "iu":
            raise APIUsageError(
                f"actions for {self.space} must be integers, got dtype {actions.dtype}: "
                "cast them with actions.astype(np.int32)"
            )
        if not actions.size:
            return
        # Compared as numpy reads them (sign, width and byte order included), never as raw bytes.
        if self.scalar_bound:
            inside = actions.min() >= 0 and actions.max() < self.upper
        else:
            inside = not np.any((actions < 0) | (actions >= self.upper))
        if not inside:
            outside = (actions < 0) | (actions >= self.upper)
            index = tuple(int(i) for i in np.argwhere(outside)[0])
            raise self._out_of_range(actions, index, int(outside.sum()))

    def _checked_floats(self, actions: np.ndarray) -> np.ndarray:
        if actions.dtype.kind not in "fiu":
            raise APIUsageError(
                f"actions for {self.space} must be floats or integers, got dtype {actions.dtype}: "
                "cast them with actions.astype(np.float32)"
            )
        if not actions.size:
            return actions
        mode = self.box_actions
        if mode == "strict":
            # NaN fails both comparisons, so it is refused with the out-of-range values.
            inside = (actions >= self.low) & (actions <= self.high)
            if not inside.all():
                index = tuple(int(i) for i in np.argwhere(~inside)[0])
                raise self._outside_box(actions, index, int((~inside).sum()))
        elif mode == "clip":
            actions = np.clip(actions, self.low, self.high)
        if actions.dtype.kind == "f" and actions.dtype.itemsize > 4:
            beyond = np.isfinite(actions) & (np.abs(actions) > FLOAT32_MAX)
            if beyond.any():
                # Refused rather than cast: numpy would turn them into inf (with a warning).
                index = tuple(int(i) for i in np.argwhere(beyond)[0])
                raise APIUsageError(
                    f"action {actions[index]!r} at {_where(index, False)} (dtype {actions.dtype}) is finite but "
                    f"beyond float32's range (|x| > {FLOAT32_MAX:.7g}), which the float32 action buffer cannot "
                    "hold: clip it (box_actions='clip' clips to a bounded space), or cast the actions to "
                    "float32 yourself (such values become inf)"
                )
        return actions
