"""A Gymnasium env as a PufferEnv of one row, and the batched step over many of them."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from ..buffers import Buffers
from ..default_wrappers import StepFunction, default_stack
from ..seeding import check_seed, env_seed
from ..spaces import check_action_space
from ..step_checks import check_observation, check_step_outputs
from .base import EmulatedEnv, array_action, env_to_wrap
from .layout import ObservationLayout


class GymnasiumPufferEnv(EmulatedEnv):
    """A gymnasium.Env as a one-row PufferEnv (flattened observations, same-step autoreset).

    Called as PufferLib calls it: ``GymnasiumPufferEnv(env=...)`` or
    ``GymnasiumPufferEnv(env_creator=..., env_args=..., env_kwargs=...)``, with ``buf`` and ``seed``.
    """

    def __init__(
        self,
        env: gymnasium.Env | None = None,
        env_creator=None,
        env_args=(),
        env_kwargs: dict | None = None,
        buf: Buffers | None = None,
        seed: int = 0,
    ):
        self.env = env = env_to_wrap(env, env_creator, env_args, env_kwargs, type(self).__name__)
        owner = type(env).__name__
        check_action_space(env.action_space, owner)
        self.emulated = ObservationLayout(env.observation_space)
        self.single_observation_space = self.emulated.flat_space
        self.single_action_space = env.action_space
        self.num_agents = 1
        super().__init__(buf, check_seed(seed))
        self._obs_row = self.observations[0]
        # The fast path writes a Box observation inline; everything else goes through the layout.
        self._write = None if self.emulated.is_box else self.emulated.writer(self._obs_row)
        self._write_final = self.emulated.writer(self.final_observations[0])
        self._discrete = isinstance(env.action_space, spaces.Discrete)
        self._convert_action = None if self._discrete else array_action(env.action_space)
        self._stack = default_stack(env)
        self._time_limit = self._stack.time_limit if self._stack else None
        self._step: StepFunction = self._step_until_checked if self._stack else env.step
        self._episode_return = 0.0
        self._episode_length = 0
        self._closed = False

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        observation, info = self.env.reset(seed=env_seed(seed, 0))
        self.emulated.check(observation)
        self._write_observation(observation)
        self._clear_step_outputs()
        self.masks[...] = True
        self._episode_return = 0.0
        self._episode_length = 0
        return self.observations, ([info] if info else [])

    def _write_observation(self, observation) -> None:
        if self._write is None:
            self._obs_row[...] = observation
        else:
            self._write(observation)

    def _step_until_checked(self, action):
        """Steps through the whole wrapper stack until its checker is done, then the base env."""
        result = self.env.step(action)
        if self._stack.checker_done():
            self._step = self._stack.base.step
        return result

    def transition(self, action):
        """One step with same-step autoreset: ``(observation, reward, terminated, truncated, infos)``.

        ``action`` is this env's action row (a numpy integer for Discrete). Writes only the final
        observation when an episode ends; :meth:`step` (or a batched caller) writes the rest.
        """
        if not self._discrete:
            action = self._convert_action(action)
        observation, reward, terminated, truncated, info = self._step(action)
        check_step_outputs(self.emulated, observation, reward, terminated, truncated)
        self._episode_return += reward
        length = self._episode_length = self._episode_length + 1
        if length == self._time_limit:
            truncated = True
        if terminated or truncated:
            return self._end_episode(observation, reward, terminated, truncated, info)
        return observation, reward, terminated, truncated, ([info] if info else [])

    def _end_episode(self, observation, reward, terminated, truncated, info: dict):
        self._write_final(observation)
        infos = [{"episode_return": float(self._episode_return), "episode_length": self._episode_length, **info}]
        self._episode_return = 0.0
        self._episode_length = 0
        observation, reset_info = self.env.reset()
        check_observation(self.emulated, observation, "reset() (autoreset)")
        if reset_info:
            infos.append(reset_info)
        return observation, reward, terminated, truncated, infos

    def step(self, actions):
        observation, reward, terminated, truncated, infos = self.transition(actions[0])
        self._write_observation(observation)
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        return self.observations, self.rewards, self.terminals, self.truncations, infos


class BatchStepError(Exception):
    """Env ``index`` of a :func:`step_box_rows` batch raised the exception that is this one's cause."""

    def __init__(self, index: int):
        super().__init__(f"env {index} of the batch raised")
        self.index = index


def batchable(envs: list) -> bool:
    """True when :func:`step_box_rows` can step ``envs``: one-row gymnasium envs, Box observations."""
    return bool(envs) and all(type(env) is GymnasiumPufferEnv and env.emulated.is_box for env in envs)


def step_box_rows(envs: list[GymnasiumPufferEnv], actions: np.ndarray, buf: Buffers) -> list[dict]:
    """Steps ``envs`` (env ``i`` owns row ``i`` of ``buf``) and writes each output column once.

    Same arrays as stepping every env with :meth:`GymnasiumPufferEnv.step`, but one numpy write per
    column per batch instead of four per env, which is most of the emulation's per-step overhead.
    Returns the batch's infos; an env that raises is named by a :class:`BatchStepError`.
    """
    observations, rewards, terminals, truncations, infos = [], [], [], [], []
    # Bound once: this loop runs once per env step.
    add_observation, add_reward = observations.append, rewards.append
    add_terminal, add_truncation = terminals.append, truncations.append
    for index, (env, action) in enumerate(zip(envs, actions)):
        try:
            observation, reward, terminated, truncated, env_infos = env.transition(action)
        except Exception as exc:
            raise BatchStepError(index) from exc
        add_observation(observation)
        add_reward(reward)
        add_terminal(terminated)
        add_truncation(truncated)
        if env_infos:
            infos.extend(env_infos)
    buf.observations[...] = observations
    buf.rewards[...] = rewards
    buf.terminals[...] = terminals
    buf.truncations[...] = truncations
    return infos
