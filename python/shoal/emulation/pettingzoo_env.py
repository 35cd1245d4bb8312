"""A PettingZoo ParallelEnv as a PufferEnv with one row per possible agent."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..buffers import Buffers
from ..errors import APIUsageError, EnvError
from ..seeding import check_seed, env_seed
from ..spaces import check_action_space
from ..step_checks import (
    PLAIN_FLAGS,
    PLAIN_REWARDS,
    check_flag,
    check_observation,
    check_reward,
    plain_box_observation,
)
from .emulated_env import EmulatedEnv, array_action, env_to_wrap
from .layout import ObservationLayout


class PettingZooPufferEnv(EmulatedEnv):
    """A PettingZoo ParallelEnv as a PufferEnv with one row per possible agent (see the module doc)."""

    def __init__(self, env=None, env_creator=None, env_args=(), env_kwargs=None, buf: Buffers | None = None, seed=0):
        self.env = env = env_to_wrap(env, env_creator, env_args, env_kwargs, type(self).__name__)
        owner = type(env).__name__
        agents = list(env.possible_agents)
        if not agents:
            raise APIUsageError(f"{owner}.possible_agents is empty")
        if len(set(agents)) != len(agents):
            raise APIUsageError(f"{owner}.possible_agents has duplicates: {agents}")
        observation_space = env.observation_space(agents[0])
        action_space = env.action_space(agents[0])
        for agent in agents[1:]:
            if env.observation_space(agent) != observation_space:
                raise APIUsageError(
                    f"{owner}: agent {agent!r} has observation space "
                    f"{env.observation_space(agent)} but {agents[0]!r} has "
                    f"{observation_space}; all agents must share one"
                )
            if env.action_space(agent) != action_space:
                raise APIUsageError(
                    f"{owner}: agent {agent!r} has action space {env.action_space(agent)} but "
                    f"{agents[0]!r} has {action_space}; all agents must share one"
                )
        check_action_space(action_space, owner)
        self.possible_agents = agents
        self.emulated = ObservationLayout(observation_space)
        self.single_observation_space = self.emulated.flat_space
        self.single_action_space = action_space
        self.num_agents = len(agents)
        super().__init__(buf, check_seed(seed))
        layout = self.emulated
        self._slots = list(enumerate(agents))
        self._writers = [layout.writer(self.observations[i]) for i in range(self.num_agents)]
        self._slot_of = {agent: i for i, agent in self._slots}
        self._discrete = isinstance(action_space, spaces.Discrete)
        self._convert_action = None if self._discrete else array_action(action_space)
        self._agent_returns = np.zeros(self.num_agents)
        self._episode_length = 0
        self._closed = False

    def _write_observations(self, observations: dict) -> None:
        """Writes present agents' rows; absent agents get a zero row and mask False."""
        for i, agent in self._slots:
            observation = observations.get(agent)
            if observation is None:
                self.observations[i] = 0
                self.masks[i] = False
            else:
                self._writers[i](observation)
                self.masks[i] = True

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        observations, infos = self.env.reset(seed=env_seed(seed, 0))
        self._check_agents(observations)
        for observation in observations.values():
            self.emulated.check(observation)
        self._write_observations(observations)
        self._clear_step_outputs()
        self._agent_returns[...] = 0
        self._episode_length = 0
        return self.observations, [info for info in infos.values() if info]

    def _check_agents(self, observations: dict) -> None:
        unknown = [agent for agent in observations if agent not in self._slot_of]
        if unknown:
            raise APIUsageError(
                f"{type(self.env).__name__} returned agents {unknown} that are not in "
                f"possible_agents {self.possible_agents}"
            )

    def _check_step(self, observations, rewards, terminations, truncations) -> None:
        """step_checks for every agent the env reported (EnvError names the agent)."""
        outputs = {
            "observations": observations,
            "rewards": rewards,
            "terminations": terminations,
            "truncations": truncations,
        }
        for name, value in outputs.items():
            if not isinstance(value, dict):
                raise EnvError(f"step() returned {name} of type {type(value).__name__}; expected a dict keyed by agent")
        if self._plain_step(observations, rewards, terminations, truncations):
            return
        for agent, observation in observations.items():
            self._check_agent(agent, check_observation, self.emulated, observation)
        for agent, reward in rewards.items():
            self._check_agent(agent, check_reward, reward)
        for agent, terminated in terminations.items():
            self._check_agent(agent, check_flag, terminated, "terminated")
        for agent, truncated in truncations.items():
            self._check_agent(agent, check_flag, truncated, "truncated")

    def _plain_step(self, observations, rewards, terminations, truncations) -> bool:
        """check_step_outputs's fast test for every agent at once: Box observations of the space's shape,
        plain rewards and flags pass here; anything else gets the per-agent checks (a call per output and
        agent cost more than the env's own step of a small env)."""
        box_shape = self.emulated.box_shape
        if box_shape is None:
            return False
        for observation in observations.values():
            if not plain_box_observation(observation, box_shape):
                return False
        for reward in rewards.values():
            if type(reward) not in PLAIN_REWARDS:
                return False
        for flags in (terminations, truncations):
            for flag in flags.values():
                if type(flag) not in PLAIN_FLAGS:
                    return False
        return True

    @staticmethod
    def _check_agent(agent, check, *args) -> None:
        try:
            check(*args)
        except EnvError as error:
            raise EnvError(f"agent {agent!r}: {error}") from None

    def step(self, actions):
        env = self.env
        slot_of = self._slot_of
        if self._discrete:
            joint = {agent: int(actions[slot_of[agent]]) for agent in env.agents}
        else:
            convert = self._convert_action
            joint = {agent: convert(actions[slot_of[agent]]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(joint)
        self._check_step(observations, rewards, terminations, truncations)
        self._write_observations(observations)
        step_infos = []
        ended = False
        for i, agent in self._slots:
            reward = rewards.get(agent, 0.0)
            terminated = bool(terminations.get(agent, False))
            truncated = bool(truncations.get(agent, False))
            self.rewards[i] = reward
            self.terminals[i] = terminated
            self.truncations[i] = truncated
            self._agent_returns[i] += reward
            if terminated or truncated:
                self.final_observations[i] = self.observations[i]
                ended = True
            info = infos.get(agent)
            if info:
                step_infos.append(info)
        self._episode_length += 1
        live = env.agents
        if not live or (
            ended and all(terminations.get(agent, False) or truncations.get(agent, False) for agent in live)
        ):
            step_infos.append(
                {
                    "episode_return": float(self._agent_returns.sum()),
                    "episode_length": self._episode_length,
                    "agent_returns": {agent: float(self._agent_returns[i]) for i, agent in self._slots},
                }
            )
            self._agent_returns[...] = 0
            self._episode_length = 0
            observations, reset_infos = env.reset()
            self._write_observations(observations)
            step_infos.extend(info for info in reset_infos.values() if info)
        return self.observations, self.rewards, self.terminals, self.truncations, step_infos
