"""Serial: every env stepped one after another in the caller's thread. The reference backend."""

from __future__ import annotations

import numpy as np

from ..buffers import Buffers, check_estimate, python_vector_estimate
from ..call_order import ANY_OPEN, READY_TO_RECV, READY_TO_SEND
from ..interrupts import guarded
from ..seeding import check_seed
from .base import EnvLists, VecEnv, agent_id_range
from .closing import close_each, raise_failures
from .worker_side.runner import EnvShape, SliceFailed, probe_driver, python_slice
from .worker_side.slices import EnvSlice


class Serial(VecEnv):
    """Steps every env in the calling thread; every other backend must match its arrays bit for bit.

    Accepts the worker options of Multiprocessing so that one configuration works across backends;
    it always steps every env.
    """

    python_envs_here = True

    def _build(self, envs: EnvLists, num_envs: int, seed: int, *, buf: Buffers | None = None, **options) -> None:
        env_creators, env_args, env_kwargs = envs
        # The option table's rule (backends/options.py): every env in every batch.
        assert options.get("batch_size") in (None, "auto", num_envs), "invariant: the table checked batch_size"
        self.seed = check_seed(seed)
        self.num_envs = num_envs
        self.driver_env, emulate = probe_driver(env_creators[0], env_args[0], env_kwargs[0])
        driver = self.driver_env
        self.single_observation_space = driver.single_observation_space
        self.single_action_space = driver.single_action_space
        self.emulated = driver.emulated
        self.num_agents = self.agents_per_batch = driver.num_agents * num_envs
        spaces = (self.single_observation_space, self.single_action_space)
        try:
            nbytes = 0 if buf is not None else self.num_agents * Buffers.row_bytes(*spaces)
            estimate = python_vector_estimate(num_envs, f"{self.num_agents:,}", nbytes, *spaces, (self.num_agents,))
            check_estimate(estimate, num_envs)  # before any env is built
            if buf is None:
                buf = Buffers.allocate(*spaces, self.num_agents, envs=num_envs)
        except BaseException:
            driver.close()
            raise
        self.buf = buf
        try:
            self._runner = python_slice(
                EnvSlice(0, env_creators, env_args, env_kwargs), buf, emulate, EnvShape.of(driver)
            )
        except BaseException:
            driver.close()
            raise
        self.envs = self._runner.envs
        self.agent_ids = agent_id_range(0, self.num_agents)
        self.constant_agent_ids = True
        self.observations, self.final_observations = buf.observations, buf.final_observations
        self._init_api()

    @property
    def local_envs(self) -> list:
        return self.envs

    @guarded
    def async_reset(self, seed: int | None = None) -> None:
        seed = self.seed if seed is None else check_seed(seed)
        order = self._order
        order.enter("reset", ANY_OPEN)
        try:
            self.infos = self._run(self._runner.reset, seed)
        finally:
            order.leave(READY_TO_RECV)

    @guarded
    def send(self, actions) -> None:
        actions = self._check_actions(actions)
        order = self._order
        order.enter("send", READY_TO_SEND)  # another thread's call is refused while the envs step
        try:
            np.copyto(self.buf.actions, actions, casting="unsafe")
            self.infos = self._run(self._runner.step)
        finally:
            order.leave(READY_TO_RECV)

    def recv(self):
        self._order.recv()
        buf = self.buf
        return (buf.observations, buf.rewards, buf.terminals, buf.truncations, self.infos, self.agent_ids, buf.masks)

    def _run(self, command, *args) -> list:
        try:
            return command(*args)
        except SliceFailed as failed:
            self._order.failed()
            raise failed.env_error() from failed.error

    def _close(self) -> None:
        failures = self._runner.close() + close_each([("driver env", self.driver_env)])
        raise_failures(type(self).__name__, failures)
