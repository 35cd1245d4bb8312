"""What a native env's spec describes, in Python terms: its spaces and its checked parameters."""

from __future__ import annotations

import math
import numbers
from pathlib import PurePath

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
    if info.get("action_lows") is not None:  # per-dimension bounds
        low = np.array(info["action_lows"], dtype=np.float32)
        return spaces.Box(low=low, high=np.array(info["action_highs"], dtype=np.float32), dtype=np.float32)
    return spaces.Box(low=info["action_low"], high=info["action_high"], shape=(info["action_dims"],), dtype=np.float32)


def configured(spec, info: dict, matrix: np.ndarray, texts: list[str]) -> tuple:
    """(spec, info) of one vector with these parameters: the spec's configure() run on a copy (its layout
    and shared state may depend on them), or the spec itself when it has no configure() nor texts."""
    if not spec.configurable:
        return spec, info
    vector_spec = spec.configure(matrix[0], texts)
    return vector_spec, vector_spec.describe()


# The largest magnitude a float (float32) parameter holds without becoming infinite.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _number(info: dict, p: dict, value, env: int) -> float:
    """A checked number of parameter ``p`` (an int, float or double, or one end of a pair).

    A number must be finite: an infinite weight or scale only ever yields inf or NaN (inf * 0) in the
    env. The ends of a pair may be infinite, as the bounds of an open range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise APIUsageError(f"{info['name']}: parameter {p['name']} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond any double
        number = math.inf if value > 0 else -math.inf
    if p["type"] == "int" and not (isinstance(value, numbers.Integral) or number.is_integer()):
        raise APIUsageError(f"{info['name']}: parameter {p['name']} must be an integer, got {value!r}")
    if not (p["min"] <= value <= p["max"]):
        raise APIUsageError(
            f"{info['name']}: parameter {p['name']}={value} (env {env}) is outside [{p['min']:g}, {p['max']:g}]"
        )
    finite = abs(number) <= FLOAT32_MAX if p["type"] == "float" else math.isfinite(number)
    if not finite and p["type"] != "pair":
        raise APIUsageError(
            f"{info['name']}: parameter {p['name']}={value} (env {env}) must be finite"
            + (" and fit a float32 (|value| <= 3.4e38)" if p["type"] == "float" else "")
        )
    return number


def _values(info: dict, p: dict, value, env: int) -> list[float]:
    """The matrix columns of parameter ``p`` holding ``value`` (none for a text)."""
    kind = p["type"]
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and value in (0, 1)):
            return [float(bool(value))]
        raise APIUsageError(f"{info['name']}: parameter {p['name']} must be a bool, got {value!r}")
    if kind == "pair":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
            raise APIUsageError(f"{info['name']}: parameter {p['name']} must be a (low, high) pair, got {value!r}")
        low, high = (_number(info, p, v, env) for v in value)
        if not low <= high:
            raise APIUsageError(f"{info['name']}: parameter {p['name']}={tuple(value)} has low > high")
        return [low, high]
    if kind == "text":
        if not isinstance(value, (str, PurePath)):
            raise APIUsageError(f"{info['name']}: parameter {p['name']} must be a string, got {value!r}")
        return []
    return [_number(info, p, value, env)]


def resolve_params(info: dict, per_env_kwargs: list[dict]) -> tuple[np.ndarray, int, list[str]]:
    """Validates keyword parameters of every env; returns the (num_envs, columns) matrix (a pair takes two
    columns, a text none), the time limit and the texts (one per text parameter, the same for every env).
    Errors name the env, the parameter and the allowed values."""
    params = info["params"]
    names = [p["name"] for p in params]
    valid = names + ["max_episode_steps"]
    columns = sum({"pair": 2, "text": 0}.get(p["type"], 1) for p in params)
    matrix = np.empty((len(per_env_kwargs), columns), dtype=np.float64)
    limits = set()
    for i, kwargs in enumerate(per_env_kwargs):
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise APIUsageError(f"{info['name']}: unknown parameter(s) {unknown} (env {i}); valid: {valid}")
        row = []
        for p in params:
            row += _values(info, p, kwargs.get(p["name"], p["default"]), i)
        matrix[i] = row
        limit = kwargs.get("max_episode_steps", info["max_episode_steps"])
        limits.add(check_integer(limit, f"{info['name']}: max_episode_steps (0 = no limit)", 0, 2**31 - 1))
    if len(limits) > 1:
        raise APIUsageError(
            f"{info['name']}: max_episode_steps must be the same for every env of a vector, got {sorted(limits)}"
        )
    texts = []
    for p in params:
        if not p.get("per_vector"):
            continue
        values = [kwargs.get(p["name"], p["default"]) for kwargs in per_env_kwargs]
        if any(v != values[0] for v in values):
            raise APIUsageError(
                f"{info['name']}: parameter {p['name']} must be the same for every env of a vector, "
                f"got {sorted({str(v) for v in values})}"
            )
        if p["type"] == "text":
            texts.append(str(values[0]))
    return matrix, limits.pop(), texts
