"""Checks of what an env's step() returns, before any of it is written into a row.

Without them a wrong observation shape is broadcast across the row (``(1,)``, a scalar), ``None``
becomes NaN, and backends disagree on what happens. Every emulated env (Gymnasium and PettingZoo,
on every backend) calls :func:`check_step_outputs` on each transition, so the check and its message
are the same everywhere; the backend adds which env (and worker) failed. The checks cost a few type
and shape comparisons per env step.

Accepted: an observation of exactly the space's shape with a numeric (or bool) dtype, or, for
structured spaces, the structure ``ObservationLayout.check`` accepts; a reward that is one real
number (Python or numpy, 0-d arrays included); terminated/truncated that are bool, ``numpy.bool_``,
or the integers 0 and 1.
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import EnvError

NUMERIC_KINDS = frozenset("biuf")
# Types that pass without further thought (the fast path of every well-behaved step).
PLAIN_REWARDS = frozenset({float, int, np.float32, np.float64, np.int32, np.int64})
PLAIN_FLAGS = frozenset({bool, np.bool_})


def plain_box_observation(observation, box_shape: tuple | None) -> bool:
    """The fast test of an observation: an ndarray of the Box's shape, of a numeric dtype."""
    return (
        type(observation) is np.ndarray and observation.shape == box_shape and observation.dtype.kind in NUMERIC_KINDS
    )


def check_step_outputs(layout, observation, reward, terminated, truncated) -> None:
    """Raises EnvError if one step's outputs do not fit ``layout`` (an ObservationLayout)."""
    if (
        plain_box_observation(observation, layout.box_shape)
        and type(reward) in PLAIN_REWARDS
        and type(terminated) in PLAIN_FLAGS
        and type(truncated) in PLAIN_FLAGS
    ):
        return
    check_observation(layout, observation)
    check_reward(reward)
    check_flag(terminated, "terminated")
    check_flag(truncated, "truncated")


def check_observation(layout, observation, call: str = "step()") -> None:
    if not layout.is_box:
        if observation is None:
            raise EnvError(f"{call} returned None as the observation; the observation space is {layout.space}")
        layout.check(observation, error=EnvError, call=call)
        return
    if type(observation) is not np.ndarray:
        if observation is None:
            raise EnvError(f"{call} returned None as the observation; the observation space is {layout.space}")
        try:
            observation = np.asarray(observation)
        except Exception as exc:  # ragged nested sequences, objects numpy cannot convert
            raise EnvError(
                f"{call} returned an observation numpy cannot read as an array "
                f"({type(exc).__name__}: {exc}); the observation space is {layout.space}"
            ) from None
    if observation.shape != layout.box_shape or observation.dtype.kind not in NUMERIC_KINDS:
        raise EnvError(
            f"{call} returned an observation of shape {observation.shape} and dtype "
            f"{observation.dtype}, but the observation space {layout.space} has shape "
            f"{layout.space.shape}"
        )


def check_reward(reward) -> None:
    kind = type(reward)
    if kind is float or kind is int or isinstance(reward, (np.floating, np.integer)):
        return
    if isinstance(reward, numbers.Real) and not isinstance(reward, np.ndarray):
        return
    if isinstance(reward, np.ndarray) and reward.ndim == 0 and reward.dtype.kind in NUMERIC_KINDS:
        return
    raise EnvError(f"step() returned reward {_show(reward)} of type {kind.__name__}; expected one number")


def check_flag(value, name: str) -> None:
    kind = type(value)
    if kind is bool or kind is np.bool_:
        return
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype == np.bool_:
        return
    raise EnvError(f"step() returned {name}={_show(value)} of type {kind.__name__}; expected a bool")


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
