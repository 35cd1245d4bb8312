"""Serial: every env stepped one after another in the caller's thread. The reference backend."""

from __future__ import annotations

import functools

import numpy as np

from ..buffers import Buffers
from ..errors import APIUsageError
from ..pufferenv import PufferEnv
from ..seeding import check_seed, offset_seed
from .base import VecEnv, agent_id_range


def instantiate(creator, args, kwargs, buf: Buffers | None, native: bool) -> PufferEnv:
    """Calls one env creator; native PufferEnv creators get ``buf``, other envs are emulated into it."""
    if native:
        return creator(*args, buf=buf, **kwargs)
    from .. import emulation
    return emulation.wrap(creator(*args, **kwargs), buf=buf)


def probe(creator, args, kwargs) -> tuple[PufferEnv, bool]:
    """Builds the driver env (owning its own small buffers) and tells whether creators are native."""
    raw = creator(*args, **kwargs)
    if isinstance(raw, PufferEnv):
        return raw, True
    from .. import emulation
    return emulation.wrap(raw, buf=None), False


def check_same_spaces(env: PufferEnv, driver: PufferEnv, index: int) -> None:
    for name in ("single_observation_space", "single_action_space", "num_agents"):
        if getattr(env, name) != getattr(driver, name):
            raise APIUsageError(f"env {index} has {name}={getattr(env, name)}, but env 0 has "
                                f"{getattr(driver, name)}; every env of a vector must match")


class Serial(VecEnv):
    """Steps every env in the calling thread; every other backend must match its arrays bit for bit."""

    # Accepted so that one configuration works across backends; Serial always steps every env.
    options = ("num_workers", "batch_size", "zero_copy", "sync_traj", "overwork")

    def __init__(self, env_creators, env_args, env_kwargs, num_envs: int, seed: int = 0,
                 buf: Buffers | None = None, **options):
        batch_size = options.get("batch_size")
        if batch_size is not None and batch_size != num_envs:
            raise APIUsageError(f"Serial steps all num_envs={num_envs} envs every batch; batch_size "
                                f"must be num_envs or None, got {batch_size}")
        self.seed = check_seed(seed)
        self.num_envs = num_envs
        self.driver_env, native = probe(env_creators[0], env_args[0], env_kwargs[0])
        driver = self.driver_env
        self.single_observation_space = driver.single_observation_space
        self.single_action_space = driver.single_action_space
        self.emulated = driver.emulated
        rows = driver.num_agents
        self.num_agents = self.agents_per_batch = rows * num_envs
        if buf is None:
            buf = Buffers.allocate(self.single_observation_space, self.single_action_space, self.num_agents)
        self.buf = buf
        self.envs: list[PufferEnv] = []
        try:
            for i in range(num_envs):
                try:
                    env = instantiate(env_creators[i], env_args[i], env_kwargs[i],
                                      buf.rows(i * rows, (i + 1) * rows), native)
                except APIUsageError as error:
                    raise APIUsageError(f"env {i} does not fit the vector built from env 0 (every env must "
                                        f"have the same spaces and agent count): {error}") from None
                check_same_spaces(env, driver, i)
                self.envs.append(env)
        except BaseException:
            self._close_envs()
            raise
        self.row_slices = [slice(i * rows, (i + 1) * rows) for i in range(num_envs)]
        # Global index of each env's first internal env, for seeding (a PufferEnv may hold several).
        counts = [env.num_envs for env in self.envs]
        self.env_offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        self.agent_ids = agent_id_range(0, self.num_agents)
        self.observations, self.final_observations = buf.observations, buf.final_observations
        self._step_batched = None  # steps every env and writes the buffers, when the envs allow it
        if not native:
            from .. import emulation
            if emulation.batchable(self.envs):
                self._step_batched = functools.partial(emulation.step_box_rows, self.envs)
        self._init_api()

    def async_reset(self, seed: int | None = None) -> None:
        seed = self.seed if seed is None else check_seed(seed)
        self._order.reset()
        infos = []
        for env, offset in zip(self.envs, self.env_offsets):
            _, env_infos = env.reset(seed=offset_seed(seed, offset))
            infos.extend(env_infos)
        self.infos = infos

    def send(self, actions) -> None:
        actions = self._check_actions(actions)
        self._order.send()
        np.copyto(self.buf.actions, actions, casting="unsafe")
        if self._step_batched is not None:
            self.infos = self._step_batched(self.buf.actions, self.buf)
            return
        infos = []
        actions = self.buf.actions
        for env, rows in zip(self.envs, self.row_slices):
            env_infos = env.step(actions[rows])[4]
            if env_infos:
                infos.extend(env_infos)
        self.infos = infos

    def recv(self):
        self._order.recv()
        buf = self.buf
        return (buf.observations, buf.rewards, buf.terminals, buf.truncations, self.infos,
                self.agent_ids, buf.masks)

    def _close_envs(self) -> None:
        for env in self.envs:
            env.close()
        self.driver_env.close()

    def _close(self) -> None:
        self._close_envs()
