"""What a native env's spec describes, in Python terms: its spaces and its checked parameters."""

from __future__ import annotations

import math
import numbers

import numpy as np
from gymnasium import spaces

from ..errors import APIUsageError
from ..validation import check_integer


def observation_space(info: dict) -> spaces.Box:
    dtype = np.dtype(info["obs_dtype"])
    low, high = info["obs_low"], info["obs_high"]
    if dtype.kind in "iu":
        limits = np.iinfo(dtype)
        low = limits.min if math.isinf(low) else int(low)
        high = limits.max if math.isinf(high) else int(high)
    return spaces.Box(low=low, high=high, shape=tuple(info["obs_shape"]), dtype=dtype)


def action_space(info: dict) -> spaces.Space:
    if info["action_kind"] == "discrete":
        return spaces.Discrete(info["action_nvec"][0])
    if info["action_kind"] == "multidiscrete":
        return spaces.MultiDiscrete(info["action_nvec"])
    return spaces.Box(low=info["action_low"], high=info["action_high"], shape=(info["action_dims"],), dtype=np.float32)


def resolve_params(info: dict, per_env_kwargs: list[dict]) -> tuple[np.ndarray, int]:
    """Validates keyword parameters of every env; returns the (num_envs, num_params) matrix and the
    time limit. Errors name the env, the parameter and the allowed values."""
    params = info["params"]
    names = [p["name"] for p in params]
    valid = names + ["max_episode_steps"]
    matrix = np.empty((len(per_env_kwargs), len(params)), dtype=np.float64)
    limits = set()
    for i, kwargs in enumerate(per_env_kwargs):
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise APIUsageError(f"{info['name']}: unknown parameter(s) {unknown} (env {i}); valid: {valid}")
        for j, p in enumerate(params):
            value = kwargs.get(p["name"], p["default"])
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise APIUsageError(f"{info['name']}: parameter {p['name']} must be a number, got {value!r}")
            if p["type"] == "int" and not float(value).is_integer():
                raise APIUsageError(f"{info['name']}: parameter {p['name']} must be an integer, got {value!r}")
            if not (p["min"] <= value <= p["max"]):
                raise APIUsageError(
                    f"{info['name']}: parameter {p['name']}={value} (env {i}) is outside [{p['min']:g}, {p['max']:g}]"
                )
            matrix[i, j] = value
        limit = kwargs.get("max_episode_steps", info["max_episode_steps"])
        limits.add(check_integer(limit, f"{info['name']}: max_episode_steps (0 = no limit)", 0, 2**31 - 1))
    if len(limits) > 1:
        raise APIUsageError(
            f"{info['name']}: max_episode_steps must be the same for every env of a vector, got {sorted(limits)}"
        )
    return matrix, limits.pop()
