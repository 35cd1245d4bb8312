"""Envs made by gymnasium.make are stepped past the default wrappers with the same results."""

import warnings

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit, TransformReward

import shoal.vector
from shoal.default_wrappers import default_stack
from shoal.seeding import env_seed, offset_seed


def alternating_actions(steps: int, num_envs: int) -> np.ndarray:
    """Pushing left and right in turn keeps CartPole up, so episodes end by the time limit."""
    return np.tile((np.arange(steps) % 2)[:, None], (1, num_envs)).astype(np.int32)


def test_time_limit_applied_by_shoal_matches_gymnasium():
    limit, num_envs, steps, seed = 9, 3, 60, 4
    creator = lambda: gymnasium.make("CartPole-v1", max_episode_steps=limit)  # noqa: E731
    vec = shoal.vector.make(creator, backend="Serial", num_envs=num_envs, seed=seed)
    by_hand = [creator() for _ in range(num_envs)]
    obs, _ = vec.reset()
    for i, env in enumerate(by_hand):
        first, _ = env.reset(seed=env_seed(offset_seed(seed, i), 0))
        assert obs[i].tobytes() == first.tobytes()
    truncated_steps = 0
    for t, actions in enumerate(alternating_actions(steps, num_envs)):
        obs, rewards, terminals, truncations, _ = vec.step(actions)
        for i, env in enumerate(by_hand):
            expected, reward, terminated, truncated, _ = env.step(actions[i])
            assert (terminals[i], truncations[i], rewards[i]) == (terminated, truncated, reward), (t, i)
            if terminated or truncated:
                assert vec.buf.final_observations[i].tobytes() == expected.tobytes()
                expected, _ = env.reset()
            assert obs[i].tobytes() == expected.tobytes(), (t, i)
        truncated_steps += int(truncations.sum())
    assert truncated_steps == num_envs * (steps // limit)
    # The vector stepped the base envs: their TimeLimit wrappers saw only the checked first steps.
    for wrapped in vec.envs:
        assert wrapped.env._elapsed_steps <= 2
    vec.close()


def test_unknown_wrappers_are_stepped_as_given():
    doubled = lambda: TransformReward(gymnasium.make("CartPole-v1"), lambda r: 2 * r)  # noqa: E731

    class MyTimeLimit(TimeLimit):
        pass

    custom_limit = lambda: MyTimeLimit(gymnasium.make("CartPole-v1").unwrapped, 5)  # noqa: E731
    assert default_stack(doubled()) is None
    assert default_stack(custom_limit()) is None
    vec = shoal.vector.make(doubled, backend="Serial", num_envs=2)
    vec.reset()
    rewards = vec.step(np.zeros(2, np.int32))[1]
    assert rewards.tolist() == [2.0, 2.0]
    vec.close()
    vec = shoal.vector.make(custom_limit, backend="Serial", num_envs=2)
    vec.reset()
    for t, actions in enumerate(alternating_actions(10, 2)):
        truncations = vec.step(actions)[3]
        assert truncations.tolist() == [t % 5 == 4] * 2
    assert vec.envs[0].env._elapsed_steps == 0
    vec.close()


def test_default_stack_finds_the_base_env_and_limit():
    env = gymnasium.make("CartPole-v1", max_episode_steps=77)
    stack = default_stack(env)
    assert stack.base is env.unwrapped and stack.time_limit == 77
    assert isinstance(stack.checker, PassiveEnvChecker)
    bare = gymnasium.make("CartPole-v1", disable_env_checker=True).unwrapped
    assert default_stack(bare) is None


class Float64Observations(gymnasium.Env):
    """Declares float32 observations but returns float64 ones: what PassiveEnvChecker warns about."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), 0.0, False, False, {}


def test_passive_checker_still_inspects_the_first_step():
    creator = lambda: TimeLimit(OrderEnforcing(PassiveEnvChecker(Float64Observations())), 50)  # noqa: E731
    vec = shoal.vector.make(creator, backend="Serial", num_envs=1)
    for call in (vec.reset, lambda: vec.step(np.zeros(1, np.int32))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert any("float32" in str(warning.message) for warning in caught), call
    vec.step(np.zeros(1, np.int32))
    checker = vec.envs[0].env.env.env
    assert checker.checked_step
    vec.close()
