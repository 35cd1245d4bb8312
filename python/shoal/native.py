"""Native (C) envs in Python: a PufferEnv over shoal._native.Vector, and loading third-party envs."""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np
from gymnasium import spaces

from . import _native
from .buffers import Buffers
from .errors import APIUsageError
from .pufferenv import PufferEnv
from .seeding import check_seed

SCHEDULES = ("static", "dynamic")


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
    return spaces.Box(low=info["action_low"], high=info["action_high"], shape=(info["action_dims"],),
                      dtype=np.float32)


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
                raise APIUsageError(f"{info['name']}: parameter {p['name']}={value} (env {i}) is outside "
                                    f"[{p['min']:g}, {p['max']:g}]")
            matrix[i, j] = value
        limit = kwargs.get("max_episode_steps", info["max_episode_steps"])
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or not 0 <= limit < 2**31:
            raise APIUsageError(f"{info['name']}: max_episode_steps must be an integer >= 0 (0 = no limit), "
                                f"got {limit!r}")
        limits.add(int(limit))
    if len(limits) > 1:
        raise APIUsageError(f"{info['name']}: max_episode_steps must be the same for every env of a vector, "
                            f"got {sorted(limits)}")
    return matrix, limits.pop()


def check_threads(num_threads) -> int:
    if isinstance(num_threads, bool) or not isinstance(num_threads, numbers.Integral) \
            or not 0 <= num_threads <= 1024:
        raise APIUsageError(f"max_num_threads must be an integer in [0, 1024], got {num_threads!r}")
    return int(num_threads)


def check_schedule(schedule) -> str:
    if schedule not in SCHEDULES:
        raise APIUsageError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return schedule


class NativeEnv(PufferEnv):
    """``num_envs`` native envs of one type in one object, stepped by ``num_threads`` threads.

    Subclasses set the class attribute ``spec`` (a shoal._native.EnvSpec). Keyword parameters are
    the env's own (see ``describe()``) plus ``max_episode_steps``; ``env_params`` gives one dict of
    parameters per env instead.
    """

    spec = None

    def __init__(self, num_envs: int = 1, buf: Buffers | None = None, seed: int = 0, num_threads: int = 0,
                 schedule: str = "static", pin_threads: bool = False, env_params: list[dict] | None = None,
                 num_buffers: int = 1, **params):
        info = self.describe()
        if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or num_envs < 1:
            raise APIUsageError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if env_params is not None:
            if params:
                raise APIUsageError("pass parameters either as keywords or as env_params, not both")
            if not isinstance(env_params, list) or len(env_params) != num_envs \
                    or not all(isinstance(p, dict) for p in env_params):
                raise APIUsageError(f"env_params must be a list of {num_envs} dicts (one per env)")
        matrix, max_episode_steps = resolve_params(info, env_params or [params] * num_envs)
        num_threads = check_threads(num_threads)
        schedule = check_schedule(schedule)
        self.num_envs = int(num_envs)
        self.single_observation_space = observation_space(info)
        self.single_action_space = action_space(info)
        self.num_agents = info["num_agents"] * self.num_envs
        super().__init__(buf, check_seed(seed))
        self.max_episode_steps = max_episode_steps
        self._episodes_since_log = 0
        b = self.buf
        self._vec = _native.Vector(self.spec, self.num_envs, matrix, max_episode_steps, b.observations,
                                   b.final_observations, b.actions, b.rewards, b.terminals, b.truncations,
                                   b.masks, num_threads, schedule, 0, bool(pin_threads), num_buffers)

    @classmethod
    def describe(cls) -> dict:
        """Spaces, parameters (name, type, default, range, doc), stats and time limit of the env."""
        if cls.spec is None:
            raise APIUsageError(f"{cls.__name__} has no native spec; use shoal.envs or shoal.native.load_env")
        return cls.spec.describe()

    @property
    def num_threads(self) -> int:
        return self._vec.num_threads

    def set_num_threads(self, num_threads: int) -> None:
        self._vec.set_num_threads(check_threads(num_threads))

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        self._vec.reset(seed)
        self._episodes_since_log = 0
        self._vec.collect_log(0, self.num_envs)
        return self.observations, []

    def step(self, actions):
        """Steps every env; ``actions`` are checked (cheaply in native code for int32/float32 arrays)."""
        ended = self._vec.step_actions(actions) if type(actions) is np.ndarray else -1
        if ended < 0:
            actions = self._check_actions(actions)  # converts other dtypes, or raises
            np.copyto(self.actions, actions, casting="unsafe")
            ended = self._vec.step()
        self._episodes_since_log += ended
        infos = self._log_infos() if self._episodes_since_log >= self.num_envs else []
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def _log_infos(self) -> list:
        """One aggregated dict (mean episode return, length, stats) about every num_envs episodes."""
        self._episodes_since_log = 0
        return [self._vec.collect_log(0, self.num_envs)]

    def send(self, actions) -> None:
        self._order.check_send()
        _, _, _, _, self.infos = self.step(actions)
        self._order.sent()

    def env_memory(self, index: int) -> memoryview:
        """Raw bytes of env ``index``'s struct (for tests and debugging)."""
        return self._vec.env_memory(index)

    def close(self) -> None:
        super().close()
        if not self._vec.closed:
            self._vec.close()


def env_class(spec, class_name: str, doc: str | None = None) -> type[NativeEnv]:
    """A NativeEnv subclass for ``spec``."""
    info = spec.describe()
    return type(class_name, (NativeEnv,), {"spec": spec, "__doc__": doc or info["doc"],
                                           "__module__": "shoal.envs"})


def load_env(path: str | Path, name: str, class_name: str | None = None) -> type[NativeEnv]:
    """Loads a third-party native env from a shared library built against shoal/env.h.

    ``name`` is the NAME given to SHOAL_EXPORT_ENV. Returns a class usable as an env creator with
    every backend (e.g. ``make(MyEnv, backend="Multithreading", num_envs=1024)``).
    """
    path = Path(path)
    if not path.is_file():
        raise APIUsageError(f"native env library {path} does not exist")
    try:
        spec = _native.load_spec(str(path.resolve()), name)
    except ValueError as error:
        raise APIUsageError(str(error)) from None
    # The class is pickled by value (cloudpickle) and its spec as (path, name), so spawned worker
    # processes load the same library again.
    return env_class(spec, class_name or name)
