"""Creators that return an env already wrapped (PufferLib style) step exactly as plain gymnasium envs do."""

import functools

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import shoal.vector
from shoal import APIUsageError, PufferEnv
from shoal.emulation import GymnasiumPufferEnv, PettingZooPufferEnv, batchable, wrap
from shoal.seeding import env_seed

from envs_for_tests import make_pz_env
from rollouts import assert_same, rollout

SEED, NUM_ENVS, STEPS, LIMIT = 7, 4, 200, 15


def cartpole() -> gymnasium.Env:
    """The default gymnasium.make stack, with a time limit short enough to truncate within the test."""
    return gymnasium.make("CartPole-v1", max_episode_steps=LIMIT)


def wrapped_cartpole() -> GymnasiumPufferEnv:
    """PufferLib style, no buf argument: the env arrives over buffers of its own."""
    return GymnasiumPufferEnv(env=cartpole())


def wrapped_cartpole_ignoring_buf(buf=None) -> GymnasiumPufferEnv:
    return GymnasiumPufferEnv(env=cartpole())


CREATORS = {
    "plain": cartpole,
    "wrapped": wrapped_cartpole,
    "wrapped, buf ignored": wrapped_cartpole_ignoring_buf,
    "env_creator= with buf": functools.partial(GymnasiumPufferEnv, env_creator=cartpole),
}


def counting(function, counts: dict, key: str):
    def counted(*args, **kwargs):
        counts[key] += 1
        return function(*args, **kwargs)

    return counted


@pytest.mark.parametrize("kind", sorted(CREATORS))
def test_every_creator_kind_steps_like_sync_vector_env_same_step(kind):
    vec = shoal.vector.make(CREATORS[kind], backend="Serial", num_envs=NUM_ENVS, seed=SEED)
    ref = SyncVectorEnv([cartpole] * NUM_ENVS, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = vec.reset()
    ref_obs, _ = ref.reset(seed=[env_seed(SEED, i) for i in range(NUM_ENVS)])
    assert obs.tobytes() == ref_obs.tobytes()
    actions = np.random.default_rng(3).integers(0, 2, (STEPS, NUM_ENVS))
    ends = {"terminated": 0, "truncated": 0}
    for t in range(STEPS):
        obs, rewards, terminals, truncations, _ = vec.step(actions[t].astype(np.int32))
        ref_obs, ref_rewards, ref_terminals, ref_truncations, ref_info = ref.step(actions[t])
        assert obs.tobytes() == ref_obs.tobytes(), t
        assert rewards.tolist() == ref_rewards.tolist(), t
        assert terminals.tolist() == ref_terminals.tolist() and truncations.tolist() == ref_truncations.tolist(), t
        for row in np.flatnonzero(ref_terminals | ref_truncations):
            assert vec.final_observations[row].tobytes() == ref_info["final_obs"][row].tobytes(), (t, row)
        ends["terminated"] += int(ref_terminals.sum())
        ends["truncated"] += int(ref_truncations.sum())
    assert ends["terminated"] > 0 and ends["truncated"] > 0, ends
    vec.close()
    ref.close()


def test_creator_kinds_give_bit_identical_rollouts():
    rollouts = {}
    for kind, creator in CREATORS.items():
        with shoal.vector.make(creator, backend="Serial", num_envs=NUM_ENVS, seed=SEED) as vec:
            rollouts[kind] = rollout(vec, STEPS, seed=SEED)
    for kind, result in rollouts.items():
        assert_same(result, rollouts["plain"], f"{kind} vs plain")


@pytest.mark.parametrize("kind", ["plain", "wrapped", "wrapped, buf ignored"])
def test_a_wrapped_creator_takes_the_plain_fast_path(kind):
    """One layer over the user's env, stepped in one batch; its gymnasium.make wrappers skipped."""
    made, counts = [], {"stack": 0, "base": 0}

    def counted_cartpole():
        env = cartpole()
        env.unwrapped.step = counting(env.unwrapped.step, counts, "base")
        env.step = counting(env.step, counts, "stack")
        made.append(env)
        return env

    def wrapped(buf=None):  # takes buf and drops it, as the "buf ignored" creator does
        return GymnasiumPufferEnv(env=counted_cartpole())

    creator = {
        "plain": counted_cartpole,
        "wrapped": lambda: GymnasiumPufferEnv(env=counted_cartpole()),
        "wrapped, buf ignored": wrapped,
    }[kind]
    vec = shoal.vector.make(creator, backend="Serial", num_envs=NUM_ENVS, seed=SEED)
    inner = made[1:]  # made[0] is under the driver env
    assert len(inner) == NUM_ENVS
    for i, env in enumerate(vec.envs):
        assert type(env) is GymnasiumPufferEnv and env.env is inner[i]
        assert vec.buf.rows(i, i + 1).written_by(env)
    assert batchable(vec.envs)
    vec.reset()
    for t in range(50):
        vec.step(np.full(NUM_ENVS, t % 2, np.int32))
    # The passive checker sees each env's first two steps through the stack; after that only the base env steps.
    assert counts == {"stack": 2 * NUM_ENVS, "base": 50 * NUM_ENVS}
    vec.close()


def test_wrapped_creator_under_multiprocessing_matches_serial():
    with shoal.vector.make(cartpole, backend="Serial", num_envs=NUM_ENVS, seed=SEED) as vec:
        expected = rollout(vec, 60, seed=SEED)
    with shoal.vector.make(
        wrapped_cartpole, backend="Multiprocessing", num_envs=NUM_ENVS, seed=SEED, num_workers=2
    ) as vec:
        assert_same(rollout(vec, 60, seed=SEED), expected, "Multiprocessing, wrapped creator")


class OwnBuffers(PufferEnv):
    """A PufferEnv that ignores the rows it is handed: a vector would return rows it never wrote."""

    def __init__(self, buf=None):
        self.single_observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = 1
        super().__init__(None)

    def reset(self, seed=None):
        self.observations[...] = 1
        return self.observations, []


class OwnBuffersGymnasium(GymnasiumPufferEnv):
    """A subclass may step differently, so it is not rebuilt: over its own buffers it is refused."""


@pytest.mark.parametrize(
    "creator",
    [OwnBuffers, lambda: OwnBuffersGymnasium(env=cartpole())],
    ids=["PufferEnv", "GymnasiumPufferEnv subclass"],
)
def test_an_env_over_buffers_of_its_own_is_refused(creator):
    with pytest.raises(APIUsageError, match=r"env 0: .*writes into buffers of its own.*buf="):
        shoal.vector.make(creator, backend="Serial", num_envs=2)


def test_pufferlib_constructor_arguments():
    by_env = GymnasiumPufferEnv(env=cartpole(), seed=3)
    by_creator = GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=["CartPole-v1"], env_kwargs={}, seed=3)
    assert by_env.single_observation_space == by_creator.single_observation_space
    assert by_env.reset()[0].tobytes() == by_creator.reset()[0].tobytes()
    pz = PettingZooPufferEnv(env_creator=make_pz_env, env_kwargs={"max_steps": 5})
    assert pz.num_agents == wrap(make_pz_env()).num_agents and pz.env.max_steps == 5
    with pytest.raises(APIUsageError, match="exactly one of env= .* and env_creator="):
        GymnasiumPufferEnv()
    with pytest.raises(APIUsageError, match="exactly one of env="):
        GymnasiumPufferEnv(env=cartpole(), env_creator=cartpole)
    with pytest.raises(APIUsageError, match="env_args and env_kwargs go with env_creator="):
        PettingZooPufferEnv(env=make_pz_env(), env_kwargs={"max_steps": 5})
