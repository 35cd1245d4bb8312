"""A Gymnasium env as a PufferEnv of one row, and the batched step over many of them."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from .._native import write_box_steps
from ..buffers import Buffers
from ..default_wrappers import StepFunction, default_stack
from ..seeding import check_seed, env_seed
from ..spaces import check_action_space
from ..step_checks import check_observation, check_step_outputs
from .emulated_env import EmulatedEnv, array_action, env_to_wrap
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
        self._reset = env.reset  # the autoreset's; past the default stack too, once its checker is done
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
            self._reset = self._stack.base.reset
        return result

    def transition(self, action):
        """One step with same-step autoreset: ``(observation, reward, terminated, truncated, infos)``.

        ``action`` is this env's action row (a numpy integer for Discrete). Writes only the final
        observation when an episode ends; :meth:`step` writes the rest.
        """
        if not self._discrete:
            action = self._convert_action(action)
        result = self._step(action)
        observation, reward, terminated, truncated, info = result
        check_step_outputs(self.emulated, observation, reward, terminated, truncated)  # before the tallies
        self._episode_return += reward
        self._episode_length += 1
        infos: list = []
        if terminated or truncated or info or self._episode_length == self._time_limit:
            result = self._settle(result, infos)
        return (*result[:4], infos)

    def _settle(self, result: tuple, infos: list) -> tuple:
        """The rare part of a step (the episode ended, or the env returned an info), after the tallies.

        Applies the time limit, appends the step's infos to ``infos``, and when the episode ended
        writes its final observation and resets the env; returns ``result`` with the observation the
        caller must write (the next episode's first) and the truncation flag.
        """
        observation, reward, terminated, truncated, info = result
        if self._episode_length == self._time_limit:
            truncated = True
        if not (terminated or truncated):
            if info:
                infos.append(info)
            return result
        self._write_final(observation)
        infos.append({"episode_return": float(self._episode_return), "episode_length": self._episode_length, **info})
        self._episode_return = 0.0
        self._episode_length = 0
        observation, reset_info = self._reset()
        check_observation(self.emulated, observation, "reset() (autoreset)")
        if reset_info:
            infos.append(reset_info)
        return observation, reward, terminated, truncated, info

    def step(self, actions):
        observation, reward, terminated, truncated, infos = self.transition(actions[0])
        self._write_observation(observation)
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        return self.observations, self.rewards, self.terminals, self.truncations, infos


class BatchStepError(Exception):
    """Env ``index`` of a :func:`step_rows` batch raised the exception that is this one's cause."""

    def __init__(self, index: int):
        super().__init__(f"env {index} of the batch raised")
        self.index = index


def batchable(envs: list) -> bool:
    """True when :func:`step_rows` can step ``envs``: one-row gymnasium envs (any observation space)."""
    return bool(envs) and all(type(env) is GymnasiumPufferEnv for env in envs)


def step_rows(envs: list[GymnasiumPufferEnv], actions: np.ndarray, buf: Buffers) -> list[dict]:
    """Steps ``envs`` (env ``i`` owns row ``i`` of ``buf``) and writes each output column once.

    Same arrays, infos and env calls, in the same order, as stepping every env with
    :meth:`GymnasiumPufferEnv.step`; but the loop body is only the env's step and its tallies (the
    rest of a step is rare: :meth:`GymnasiumPufferEnv._settle`), and the outputs are written in one
    native call per batch (``write_box_steps``, or the layout's ``StructuredRows`` for Dict/Tuple
    observations) instead of numpy writes per env or per column.
    Together that is most of the emulation's per-step cost.
    Every env's outputs are checked (:mod:`shoal.step_checks`) before any of them is written, and
    before an ended episode's final observation is: the native call checks the plain forms (a
    well-formed step's), Python every other (raising the diagnostic EnvError, or accepting the less
    plain forms: a list observation, a 0-d array reward, 0/1 flags). An output that cannot even be
    tallied gets the same diagnostic. An env that raises stops the batch; a malformed output found
    after the loop does not undo the steps of the envs after it (after either failure the vector
    takes nothing but reset()).
    Returns the batch's infos; an env that raises is named by a :class:`BatchStepError`.
    """
    if not envs[0]._discrete:  # every env of a vector has the same action space
        convert = envs[0]._convert_action
        actions = [convert(row) for row in actions]
    results: list[tuple] = []
    infos: list[dict] = []
    add = results.append  # bound once: the loop below runs once per env step
    for env, action in zip(envs, actions):
        try:
            result = env._step(action)
        except Exception as exc:
            raise BatchStepError(len(results)) from exc
        add(result)
        try:
            observation, reward, terminated, truncated, info = result
            env._episode_return += reward
            env._episode_length += 1
            if terminated or truncated or info or env._episode_length == env._time_limit:
                check_step_outputs(env.emulated, observation, reward, terminated, truncated)
                results[-1] = env._settle(result, infos)
        except Exception as exc:
            _check_result(env, result, len(results) - 1)  # a malformed output gets its diagnostic
            raise BatchStepError(len(results) - 1) from exc
    layout = envs[0].emulated  # every env of a vector has the same observation space
    columns = (buf.observations, buf.rewards, buf.terminals, buf.truncations)
    if layout.is_box:
        first_odd = write_box_steps(results, *columns)
    else:
        first_odd = layout.batch_writer().write_steps(results, *columns)
    if first_odd >= 0:
        for index in range(first_odd, len(results)):
            _check_result(envs[index], results[index], index)
        observations, rewards, terminals, truncations, _ = zip(*results)
        if layout.is_box:
            buf.observations[...] = observations
        else:
            for env, observation in zip(envs, observations):
                env._write_observation(observation)
        buf.rewards[...] = rewards
        buf.terminals[...] = terminals
        buf.truncations[...] = truncations
    return infos


def _check_result(env: GymnasiumPufferEnv, result, index: int) -> None:
    """Raises BatchStepError(index) from the EnvError that a malformed step() result of ``env`` gets."""
    try:
        observation, reward, terminated, truncated, _ = result
        check_step_outputs(env.emulated, observation, reward, terminated, truncated)
    except Exception as exc:
        raise BatchStepError(index) from exc
