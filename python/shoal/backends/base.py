"""What every vectorization backend shares: attributes, the sync facade, closing."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..call_order import CallOrder
from ..interrupts import interrupted_reason, signals_held
from ..spaces import ActionChecker, joint_space
from .options import check_options


class EnvLists(NamedTuple):
    """make()'s per-env lists, one entry per env: creators, positional args, keyword args."""

    creators: list
    args: list
    kwargs: list


class VecEnv:
    """Base of the backends: async_reset/send/recv are theirs; reset/step/close/with are here.

    A backend sets, in _build: driver_env, num_envs, num_agents, agents_per_batch,
    single_observation_space, single_action_space, emulated; then calls ``_init_api()``.
    """

    #: keyword arguments of vector.make() a backend registered with register_backend() accepts
    #: (beyond num_envs and seed); the built-in backends' are in backends/registry.py
    options: tuple[str, ...] = ()
    #: what Box actions outside the bounds do (make()'s box_actions): a backend sets it before _init_api()
    box_actions = "pass"
    #: whether the backend builds Python env objects on this machine (make() counts their memory)
    python_envs_here: bool = False
    #: whether the agent ids recv() returns for a batch never change (the torch hand-off copies them once)
    constant_agent_ids: bool = False

    def __init__(
        self, env_creators, env_args, env_kwargs, num_envs: int, seed: int = 0, box_actions: str = "pass", **options
    ):
        """PufferLib 3.0's backend constructor, as make() calls it: the per-env lists, ``num_envs`` and
        ``seed`` are every backend's, ``box_actions`` is make()'s, ``options`` are the backend's own
        (the keywords of its ``_build``).

        The option table (backends/options.py) checks them all here, the one place make() and a
        backend class built directly both pass: ``_build`` gets checked values."""
        num_envs, seed = check_options(type(self), num_envs, seed, {"box_actions": box_actions, **options})
        self.box_actions = box_actions
        self._build(EnvLists(env_creators, env_args, env_kwargs), num_envs, seed, **options)

    def _build(self, envs: EnvLists, num_envs: int, seed: int, **options) -> None:
        """Builds the envs (or the workers that hold them) and sets the attributes above."""
        raise NotImplementedError

    def _init_api(self) -> None:
        self.observation_space = joint_space(self.single_observation_space, self.agents_per_batch)
        self.action_space = joint_space(self.single_action_space, self.agents_per_batch)
        self._check_actions = ActionChecker(self.single_action_space, self.agents_per_batch, self.box_actions)
        self._order = CallOrder(type(self).__name__)
        self.infos: list = []

    def reset(self, seed: int | None = None):
        """Resets every env; returns (observations, infos)."""
        self.async_reset(seed)
        observations, _, _, _, infos, _, _ = self.recv()
        return observations, infos

    def step(self, actions):
        """send + recv; returns (observations, rewards, terminals, truncations, infos)."""
        self.send(actions)
        observations, rewards, terminals, truncations, infos, _, _ = self.recv()
        return observations, rewards, terminals, truncations, infos

    def _interrupted(self, call: str, exc: BaseException) -> None:
        """``call`` was left half done by an unplanned exception (see shoal/interrupts.py)."""
        self._order.needs_reset(interrupted_reason(call, exc))

    @property
    def local_envs(self) -> list | None:
        """The env objects in this process that hold the rows, in row order (each holding an equal
        share), or None when the envs live elsewhere (worker processes, actors)."""
        return None

    @property
    def closed(self) -> bool:
        return self._order.closed

    def close(self) -> None:
        """Releases envs, workers and memory. Safe to call more than once.

        Signals are held until it is done (shoal/interrupts.py), so a Ctrl-C, or a KeyboardInterrupt
        from another signal's handler, is raised once everything is closed, never halfway through a
        teardown that nothing would finish.
        """
        if self._order.closed:
            return
        with signals_held():
            self._order.close()
            self._close()

    def _close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def agent_id_range(start: int, end: int) -> np.ndarray:
    return np.arange(start, end, dtype=np.int64)
