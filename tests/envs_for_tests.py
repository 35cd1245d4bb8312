"""Small deterministic envs shared by the test suite (emulation, backend parity, fault handling).

Every creator is a top-level function so that the standard pickle can ship it to a worker process.
Lambdas and closures over these creators (``lambda: make_dict_env(max_episode_steps=7)``) must work
too: the Multiprocessing backend sends creators with cloudpickle.

All randomness comes from the env's own seeded generator (``self.np_random``), so the same seed and
the same actions give the same trajectory in every process and on every backend.
"""

from __future__ import annotations

import functools
import os
import time

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit

try:
    from pettingzoo import ParallelEnv
except ImportError:  # pettingzoo is a test extra; the emulation layer duck-types parallel envs
    ParallelEnv = object


# ---------------------------------------------------------------------------------------------------
# Gymnasium: structured observations
# ---------------------------------------------------------------------------------------------------


class DictObsEnv(gymnasium.Env):
    """Dict observation mixing float32 Box, Discrete, MultiBinary and a nested Tuple (float64 Box,
    Discrete with start=1). Rewards, terminations and infos depend on the action and np_random.

    ``action`` picks the action space: "discrete" (Discrete(3)), "multidiscrete" ([3, 2]) or "box"
    (Box(-1, 1, (2,), float32)). The last action received is kept in ``last_action`` so tests can
    check what the emulation layer passed.
    """

    metadata = {"render_modes": []}

    def __init__(self, action: str = "discrete"):
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-10.0, 10.0, (3,), dtype=np.float32),
                "mode": spaces.Discrete(4),
                "flags": spaces.MultiBinary(5),
                "nested": spaces.Tuple((spaces.Box(-1.0, 1.0, (2,), dtype=np.float64), spaces.Discrete(3, start=1))),
            }
        )
        if action == "discrete":
            self.action_space = spaces.Discrete(3)
        elif action == "multidiscrete":
            self.action_space = spaces.MultiDiscrete([3, 2])
        elif action == "box":
            self.action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        else:
            raise ValueError(f"unknown action kind {action!r}")
        self.action_kind = action
        self.last_action = None
        self.t = 0

    def _observation(self) -> dict:
        rng = self.np_random
        return {
            "pos": self.pos.copy(),
            "mode": np.int64(self.t % 4),
            "flags": rng.integers(0, 2, 5, dtype=np.int8),
            "nested": (rng.uniform(-1.0, 1.0, 2), np.int64(1 + self.t % 3)),
        }

    def _action_value(self, action) -> float:
        if self.action_kind == "discrete":
            return float(action)
        return float(np.sum(action))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.pos = self.np_random.uniform(-1.0, 1.0, 3).astype(np.float32)
        return self._observation(), {}

    def step(self, action):
        self.last_action = action
        a = self._action_value(action)
        self.t += 1
        rng = self.np_random
        drift = rng.normal(0.0, 0.5, 3).astype(np.float32) + np.float32(a * 0.1)
        self.pos = np.clip(self.pos + drift, -10.0, 10.0).astype(np.float32)
        reward = a - float(np.abs(self.pos).sum()) + rng.normal()
        terminated = bool(rng.random() < 0.05 + 0.04 * abs(a))
        info = {"t": self.t} if self.t % 3 == 0 else {}
        return self._observation(), reward, terminated, False, info


def make_dict_env(max_episode_steps: int = 20, action: str = "discrete") -> gymnasium.Env:
    """DictObsEnv under gymnasium's TimeLimit: episodes end by termination or by truncation."""
    return TimeLimit(DictObsEnv(action=action), max_episode_steps=max_episode_steps)


class BoxObsEnv(gymnasium.Env):
    """Plain Box float32 observation (the emulation fast path), Discrete(2) actions, TimeLimit 15."""

    def __init__(self):
        self.observation_space = spaces.Box(-5.0, 5.0, (2, 3), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = self.np_random.uniform(-1.0, 1.0, (2, 3)).astype(np.float32)
        return self.state.copy(), {}

    def step(self, action):
        drift = self.np_random.normal(0.0, 0.3, (2, 3)) + (action - 0.5) * 0.2
        self.state = np.clip(self.state + drift, -5.0, 5.0).astype(np.float32)
        terminated = bool(np.abs(self.state).max() > 2.5)
        return self.state.copy(), float(action) + float(self.state.sum()), terminated, False, {}


def make_box_env(max_episode_steps: int = 15) -> gymnasium.Env:
    return TimeLimit(BoxObsEnv(), max_episode_steps=max_episode_steps)


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


# ---------------------------------------------------------------------------------------------------
# Gymnasium: faults
# ---------------------------------------------------------------------------------------------------


class RaiseOnStep(gymnasium.Env):
    """Raises RuntimeError on its ``step``-th call to step() (1-based, counted since construction, so
    autoresets do not hide it), ``delay_s`` after that call began. Box float32 (4,) observations,
    Discrete(2) actions, episodes of 3 steps.
    """

    def __init__(self, step: int = 5, delay_s: float = 0.0):
        self.observation_space = spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.raise_on = step
        self.delay_s = delay_s
        self.calls = 0
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1.0, 1.0, 4).astype(np.float32), {}

    def step(self, action):
        self.calls += 1
        if self.calls == self.raise_on:
            time.sleep(self.delay_s)
            raise RuntimeError(f"RaiseOnStep: planned failure on step {self.calls}")
        self.t += 1
        observation = self.np_random.uniform(-1.0, 1.0, 4).astype(np.float32)
        return observation, float(action), self.t >= 3, False, {}


class RaiseOnReset(RaiseOnStep):
    """Raises RuntimeError in reset()."""

    def reset(self, *, seed=None, options=None):
        raise RuntimeError("RaiseOnReset: planned failure in reset")


class RaiseOnInit(gymnasium.Env):
    """Raises RuntimeError in __init__."""

    def __init__(self):
        raise RuntimeError("RaiseOnInit: planned failure in __init__")


def make_raise_on_step(step: int = 5, delay_s: float = 0.0) -> gymnasium.Env:
    return RaiseOnStep(step=step, delay_s=delay_s)


def make_raise_on_reset() -> gymnasium.Env:
    return RaiseOnReset()


def make_raise_on_init() -> gymnasium.Env:
    return RaiseOnInit()


# ---------------------------------------------------------------------------------------------------
# PettingZoo
# ---------------------------------------------------------------------------------------------------


class DeathmatchParallelEnv(ParallelEnv):
    """PettingZoo ParallelEnv with 3 agents that die at random (from the seeded np_random).

    Each step every live agent dies (terminated) with probability 0.12 plus 0.05 per unit of its
    action; survivors are truncated after ``max_steps`` steps. With ``late_agent=True``, "agent_2"
    is absent at reset and spawns on step 2. Observations are Box float32 (4,), actions Discrete(3).
    Dead agents leave ``agents`` and are absent from every returned dict.
    """

    metadata = {"name": "deathmatch_v0", "render_modes": []}
    render_mode = None

    def __init__(self, max_steps: int = 12, late_agent: bool = False):
        self.possible_agents = ["agent_0", "agent_1", "agent_2"]
        self.max_steps = max_steps
        self.late_agent = late_agent
        self._observation_space = spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
        self._action_space = spaces.Discrete(3)
        self.np_random = np.random.default_rng(0)
        self.agents = []
        self.t = 0

    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def _observe(self, agent: str) -> np.ndarray:
        index = self.possible_agents.index(agent)
        noise = self.np_random.uniform(-1.0, 1.0, 2)
        return np.array([index / 2.0, min(self.t / self.max_steps, 1.0), *noise], dtype=np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents[:2] if self.late_agent else self.possible_agents)
        return {agent: self._observe(agent) for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions):
        self.t += 1
        rng = self.np_random
        rewards, terminations, truncations, infos = {}, {}, {}, {}
        for agent in self.agents:
            action = actions[agent]
            rewards[agent] = float(action) * 0.5 + float(rng.normal())
            terminations[agent] = bool(rng.random() < 0.12 + 0.05 * action)
            truncations[agent] = self.t >= self.max_steps and not terminations[agent]
            infos[agent] = {"killed": agent} if terminations[agent] else {}
        observations = {agent: self._observe(agent) for agent in self.agents}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        if self.late_agent and self.t == 2 and self.t < self.max_steps:
            self.agents.append("agent_2")
            observations["agent_2"] = self._observe("agent_2")
            rewards["agent_2"], terminations["agent_2"], truncations["agent_2"] = 0.0, False, False
            infos["agent_2"] = {}
        return observations, rewards, terminations, truncations, infos


def make_pz_env(max_steps: int = 12, late_agent: bool = False) -> DeathmatchParallelEnv:
    return DeathmatchParallelEnv(max_steps=max_steps, late_agent=late_agent)


# ---------------------------------------------------------------------------------------------------
# Gymnasium: slow and hanging steps (interrupts, deadlines, restarts)
# ---------------------------------------------------------------------------------------------------

SLOW_S = 1.0


class CountingEnv(gymnasium.Env):
    """Observation = [steps since reset, env id]. Action 1 makes the step sleep SLOW_S (a step the
    caller can interrupt); action 0 steps at once. Episodes never end, so the count shows which step
    a result belongs to."""

    observation_space = spaces.Box(-1e9, 1e9, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, env_id: int = 0):
        self.env_id = env_id
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0, self.env_id], np.float32), {}

    def step(self, action):
        if action == 1:
            time.sleep(SLOW_S)
        self.t += 1
        return np.array([self.t, self.env_id], np.float32), 1.0, False, False, {}


def counting_creators(n: int) -> list:
    return [functools.partial(CountingEnv, i) for i in range(n)]


class HangOnAction(gymnasium.Env):
    """Observation = [steps since reset] * 2; action 1 makes the step hang (sleep far past any timeout)."""

    observation_space = spaces.Box(-1e9, 1e9, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if action == 1:
            time.sleep(60)
        self.t += 1
        return np.full(2, self.t, np.float32), 1.0, False, False, {}


class BlockWhileFlagged(HangOnAction):
    """HangOnAction whose constructor blocks (far past any limit) while the file ``flag`` exists: a
    worker whose env constructor hangs, e.g. the replacement of a killed one."""

    def __init__(self, flag: str):
        while os.path.exists(flag):
            time.sleep(0.05)


def block_while_flagged(flag: str) -> BlockWhileFlagged:
    return BlockWhileFlagged(flag)


# ---------------------------------------------------------------------------------------------------
# Gymnasium: malformed step outputs
# ---------------------------------------------------------------------------------------------------

# (output, bad value, what the EnvError says about it), in the order BadOutputs returns them.
BAD_OUTPUTS = [
    ("observation", np.zeros(1, np.float32), "an observation of shape (1,)"),
    ("observation", np.zeros((1, 3), np.float32), "an observation of shape (1, 3)"),
    ("observation", np.float32(0.5), "an observation of shape ()"),
    ("observation", None, "None as the observation"),
    ("observation", np.array(["a", "b", "c"]), "an observation of shape (3,) and dtype <U1"),
    ("reward", "1.0", "reward '1.0' of type str"),
    ("reward", None, "reward None of type NoneType"),
    ("reward", np.ones(2), "reward array([1., 1.]) of type ndarray"),
    ("terminated", "no", "terminated='no' of type str"),
    ("terminated", np.array([False, True]), "terminated=array([False,  True]) of type ndarray"),
    ("truncated", None, "truncated=None of type NoneType"),
    ("truncated", 2, "truncated=2 of type int"),
]


class BadOutputs(gymnasium.Env):
    """Box (3,) float32 observations. With ``bad=True`` every second call of step() returns the next
    malformed output of BAD_OUTPUTS (cycling); other calls and ``bad=False`` envs are well formed."""

    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, bad: bool = False):
        self.bad = bad
        self.calls = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.calls += 1
        outputs = {"observation": np.full(3, 0.5, np.float32), "reward": 1.0, "terminated": False, "truncated": False}
        if self.bad and self.calls % 2 == 0:
            name, value, _ = BAD_OUTPUTS[(self.calls // 2 - 1) % len(BAD_OUTPUTS)]
            outputs[name] = value
        return outputs["observation"], outputs["reward"], outputs["terminated"], outputs["truncated"], {}


def bad_output_creators(n: int, bad_env: int) -> list:
    return [functools.partial(BadOutputs, i == bad_env) for i in range(n)]


# ---------------------------------------------------------------------------------------------------
# Gymnasium: close() that fails or hangs
# ---------------------------------------------------------------------------------------------------

HANG_IN_CLOSE_S = 5.0


class CloseRecorder(gymnasium.Env):
    """close() leaves a file ``closed-<env_id>-<pid>`` in ``directory``, then raises (``fail``) or sleeps
    HANG_IN_CLOSE_S (``hang``)."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, env_id: int, directory: str, fail: bool = False, hang: bool = False):
        self.env_id, self.directory, self.fail, self.hang = env_id, directory, fail, hang

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}

    def close(self):
        import os

        with open(os.path.join(self.directory, f"closed-{self.env_id}-{os.getpid()}"), "w"):
            pass
        if self.hang:
            time.sleep(HANG_IN_CLOSE_S)
        if self.fail:
            raise RuntimeError(f"close of env {self.env_id} failed on purpose")


def close_recorder_creators(n: int, directory, fail=(), hang=()) -> list:
    return [functools.partial(CloseRecorder, i, str(directory), i in fail, i in hang) for i in range(n)]
