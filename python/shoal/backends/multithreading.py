"""Multithreading: native envs stepped by shoal's C++ worker pool inside the caller's process."""

from __future__ import annotations

import numpy as np

from .. import _native
from ..errors import APIUsageError
from ..native import NativeEnv, check_schedule, check_threads
from ..seeding import check_seed
from .base import VecEnv


def default_num_threads(num_envs: int) -> int:
    """Physical cores, capped by the number of envs."""
    return max(1, min(_native.physical_cores(), num_envs))


def native_env_type(env_creators, env_args) -> type[NativeEnv]:
    creator = env_creators[0]
    if not (isinstance(creator, type) and issubclass(creator, NativeEnv)):
        raise APIUsageError(
            f"backend Multithreading steps native (C) envs such as shoal.envs.CartPole or a class from "
            f"shoal.native.load_env(); {getattr(creator, '__name__', creator)!r} is a Python env creator. "
            "Use backend='Serial' or backend='Multiprocessing' for Python envs.")
    if any(c is not creator for c in env_creators):
        raise APIUsageError("backend Multithreading needs one native env type for every env")
    if any(args for args in env_args):
        raise APIUsageError("native envs take keyword parameters only (env_kwargs); got positional env_args")
    return creator


class Multithreading(VecEnv):
    """All envs in one native vector; ``max_num_threads`` threads (the caller included) step them.

    ``max_num_threads``: 0 or 1 = the caller steps every env itself (no pool threads); N > 1 = the
    caller plus N - 1 persistent pool threads. Default: physical cores, capped by num_envs.
    ``schedule``: "static" contiguous slices (default) or "dynamic" chunks for envs of uneven cost.
    """

    options = ("max_num_threads", "schedule", "pin_threads", "batch_size")

    def __init__(self, env_creators, env_args, env_kwargs, num_envs: int, seed: int = 0,
                 max_num_threads: int | None = None, schedule: str = "static", pin_threads: bool = False,
                 batch_size: int | None = None):
        env_type = native_env_type(env_creators, env_args)
        if max_num_threads is None or max_num_threads == "auto":
            max_num_threads = default_num_threads(num_envs)
        max_num_threads = check_threads(max_num_threads)
        schedule = check_schedule(schedule)
        if batch_size is not None and batch_size != num_envs:
            raise APIUsageError(f"Multithreading steps all num_envs={num_envs} envs per batch; batch_size "
                                f"must be num_envs or None, got {batch_size}")
        for i, kwargs in enumerate(env_kwargs):
            if "num_envs" in kwargs or "num_threads" in kwargs:
                raise APIUsageError(f"env_kwargs[{i}] sets num_envs/num_threads; pass them to make() as "
                                    "num_envs and max_num_threads")
        self.seed = check_seed(seed)
        self.env = env_type(num_envs=num_envs, seed=self.seed, num_threads=max_num_threads, schedule=schedule,
                            pin_threads=pin_threads, env_params=list(env_kwargs))
        self.driver_env = self.env
        self.num_envs = num_envs
        self.num_agents = self.agents_per_batch = self.env.num_agents
        self.single_observation_space = self.env.single_observation_space
        self.single_action_space = self.env.single_action_space
        self.emulated = None
        self.schedule = schedule
        self.agent_ids = np.arange(self.num_agents)
        self.buf = self.env.buf
        self.observations, self.final_observations = self.buf.observations, self.buf.final_observations
        self._init_api()

    @property
    def max_num_threads(self) -> int:
        return self.env.num_threads

    @max_num_threads.setter
    def max_num_threads(self, num_threads: int) -> None:
        """Changes the thread count of the live vector (between steps)."""
        self.env.set_num_threads(check_threads(num_threads))

    def async_reset(self, seed: int | None = None) -> None:
        seed = self.seed if seed is None else check_seed(seed)
        self._order.reset()
        _, self.infos = self.env.reset(seed)

    def send(self, actions) -> None:
        self._order.check_send()
        self.infos = self.env.step(actions)[4]  # checks the actions before any env runs
        self._order.sent()

    def recv(self):
        self._order.recv()
        buf = self.buf
        return (buf.observations, buf.rewards, buf.terminals, buf.truncations, self.infos,
                self.agent_ids, buf.masks)

    def pool_stats(self) -> dict:
        return self.env._vec.pool_stats()

    def _close(self) -> None:
        self.env.close()


def _register() -> None:
    from ..vector import register_backend
    register_backend(Multithreading)


_register()
