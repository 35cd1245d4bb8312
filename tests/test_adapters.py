"""Trainer adapters checked against the frameworks' own code: Gymnasium's SyncVectorEnv and vector
wrappers, stable-baselines3's PPO and VecMonitor, TorchRL's GymWrapper, PufferLib's trainer contract."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import shoal.vector
from shoal import APIUsageError
from shoal.adapters.gymnasium import GymnasiumVectorEnv
from shoal.adapters.pufferl import ContractViolation, drive_like_pufferl
from shoal.envs import CartPole, Grid
from shoal.seeding import env_seed

SEED = 11
NUM_ENVS = 4
LIMIT = 30  # short time limit: episodes end by truncation as well as termination


def gym_cartpole(limit: int = LIMIT) -> gymnasium.Env:
    return gymnasium.make("CartPole-v1", max_episode_steps=limit)


class CountingDictEnv(gymnasium.Env):
    """Dict observations (Box + Discrete), integer rewards, random episode ends and a time limit."""

    def __init__(self, limit: int = 9):
        self.observation_space = spaces.Dict(
            {"pos": spaces.Box(-50.0, 50.0, (2,), dtype=np.float32), "phase": spaces.Discrete(3)}
        )
        self.action_space = spaces.Discrete(3)
        self.limit = limit

    def _obs(self):
        return {"pos": self.pos.copy(), "phase": np.int64(self.t % 3)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.pos = self.np_random.integers(-5, 5, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.pos = self.pos + np.float32(action - 1)
        terminated = bool(self.np_random.random() < 0.1)
        return self._obs(), float(action), terminated, self.t >= self.limit and not terminated, {}


def serial_cartpoles(seed: int = SEED, creator=gym_cartpole, num_envs: int = NUM_ENVS):
    return shoal.vector.make(creator, backend="Serial", num_envs=num_envs, seed=seed)


def sync_cartpoles(mode: AutoresetMode, creator=gym_cartpole, num_envs: int = NUM_ENVS) -> SyncVectorEnv:
    return SyncVectorEnv([creator] * num_envs, autoreset_mode=mode)


def native_cartpoles(num_envs: int = 8, limit: int = 25, seed: int = SEED):
    return shoal.vector.make(
        CartPole,
        backend="Multithreading",
        num_envs=num_envs,
        max_num_threads=2,
        seed=seed,
        env_kwargs={"max_episode_steps": limit},
    )


def action_stream(num_rows: int, steps: int, n: int = 2, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(steps, num_rows))


def assert_tree_equal(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_tree_equal(a[key], b[key])
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# -------------------------------------------------------------------------------------------------
# Gymnasium
# -------------------------------------------------------------------------------------------------


def test_view_has_gymnasium_spaces_and_mode():
    view = GymnasiumVectorEnv(native_cartpoles())
    with view:
        assert isinstance(view, gymnasium.vector.VectorEnv)
        assert view.num_envs == 8
        assert view.single_observation_space == view.vecenv.single_observation_space
        assert view.observation_space == gymnasium.vector.utils.batch_space(view.single_observation_space, 8)
        assert view.action_space == spaces.MultiDiscrete([2] * 8)
        assert view.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        assert view.autoreset_mode is AutoresetMode.SAME_STEP
    assert view.closed and view.vecenv.closed


@pytest.mark.parametrize("creator", [gym_cartpole, CountingDictEnv], ids=["cartpole", "dict_obs"])
def test_same_step_matches_sync_vector_env(creator):
    """Same per-env seeds, same actions: every array equals SyncVectorEnv's in SAME_STEP mode."""
    view = GymnasiumVectorEnv(serial_cartpoles(creator=creator))
    ref = sync_cartpoles(AutoresetMode.SAME_STEP, creator=creator)
    assert view.single_observation_space == ref.single_observation_space
    seeds = [env_seed(SEED, i) for i in range(NUM_ENVS)]
    assert view.derived_seeds(SEED) == seeds
    obs, info = view.reset(seed=SEED)
    ref_obs, _ = ref.reset(seed=seeds)
    assert_tree_equal(obs, ref_obs)
    n_actions = ref.single_action_space.n
    endings = 0
    for actions in action_stream(NUM_ENVS, 300, n=n_actions):
        got, want = view.step(actions), ref.step(actions)
        for a, b in zip(got[:4], want[:4]):
            assert_tree_equal(a, b)
        info, ref_info = got[4], want[4]
        done = want[2] | want[3]
        assert ("final_obs" in info) == ("final_obs" in ref_info) == bool(done.any())
        if done.any():
            endings += int(done.sum())
            np.testing.assert_array_equal(info["_final_obs"], ref_info["_final_obs"])
            np.testing.assert_array_equal(info["_final_info"], ref_info["_final_info"])
            for row in range(NUM_ENVS):
                if done[row]:
                    assert_tree_equal(info["final_obs"][row], ref_info["final_obs"][row])
                else:
                    assert info["final_obs"][row] is None
    assert endings > 10 and want[3].dtype == bool
    view.close()
    ref.close()


def test_reset_accepts_the_derived_seed_list_only():
    view = GymnasiumVectorEnv(serial_cartpoles())
    obs_int, _ = view.reset(seed=SEED)
    obs_list, _ = view.reset(seed=[env_seed(SEED, i) for i in range(NUM_ENVS)])
    np.testing.assert_array_equal(obs_int, obs_list)
    with pytest.raises(APIUsageError, match="one integer"):
        view.reset(seed=[SEED + i for i in range(NUM_ENVS)])
    with pytest.raises(APIUsageError, match="num_envs=4"):
        view.reset(seed=[1, 2])
    with pytest.raises(APIUsageError, match="no options"):
        view.reset(seed=1, options={"reset_mask": np.ones(NUM_ENVS, bool)})
    view.close()


def test_next_step_mode_against_sync_vector_env():
    """NEXT_STEP: identical to Gymnasium's NEXT_STEP SyncVectorEnv through each row's first episode
    end and its reset step; afterwards exactly shoal's same-step stream delayed as documented."""
    view = GymnasiumVectorEnv(serial_cartpoles(), autoreset_mode="next_step")
    assert view.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    ref = sync_cartpoles(AutoresetMode.NEXT_STEP)
    plain = serial_cartpoles()  # the same vector, same-step, stepped with the same actions
    seeds = [env_seed(SEED, i) for i in range(NUM_ENVS)]
    obs, _ = view.reset(seed=SEED)
    np.testing.assert_array_equal(obs, ref.reset(seed=seeds)[0])
    plain.reset(SEED)
    first_end = np.full(NUM_ENVS, -1)
    pending = np.zeros(NUM_ENVS, dtype=bool)
    for t, actions in enumerate(action_stream(NUM_ENVS, 200)):
        obs, rewards, terms, truncs, _ = view.step(actions)
        ref_obs, ref_rewards, ref_terms, ref_truncs, _ = ref.step(actions)
        p_obs, p_rewards, p_terms, p_truncs, _ = plain.step(actions)
        for row in range(NUM_ENVS):
            exact = first_end[row] < 0  # before and at the first end of this row's episode
            if exact:
                np.testing.assert_array_equal(obs[row], ref_obs[row])
            if exact or first_end[row] == t - 1:
                want = (ref_rewards[row], ref_terms[row], ref_truncs[row])
                assert (rewards[row], terms[row], truncs[row]) == want
            # the documented relation to shoal's same-step output
            ended = (p_terms[row] or p_truncs[row]) and not pending[row]
            np.testing.assert_array_equal(obs[row], plain.final_observations[row] if ended else p_obs[row])
            if pending[row]:
                assert (rewards[row], terms[row], truncs[row]) == (0.0, False, False)
            else:
                assert (rewards[row], terms[row], truncs[row]) == (p_rewards[row], p_terms[row], p_truncs[row])
            if ended and first_end[row] < 0:
                first_end[row] = t
            pending[row] = ended
    assert (first_end >= 0).all()
    for env in (view, ref, plain):
        env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_record_episode_statistics_wrapper(mode):
    """Gymnasium's own RecordEpisodeStatistics sees the same episodes over the view as over SyncVectorEnv
    (SAME_STEP); in NEXT_STEP it reads the mode and counts every episode once."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    view = RecordEpisodeStatistics(GymnasiumVectorEnv(serial_cartpoles(), autoreset_mode=mode))
    ref = RecordEpisodeStatistics(sync_cartpoles(mode))
    view.reset(seed=SEED)
    ref.reset(seed=[env_seed(SEED, i) for i in range(NUM_ENVS)])
    episodes = 0
    for actions in action_stream(NUM_ENVS, 200):
        info = view.step(actions)[4]
        ref_info = ref.step(actions)[4]
        if mode is AutoresetMode.SAME_STEP:
            assert ("episode" in info) == ("episode" in ref_info)
            if "episode" in info:
                np.testing.assert_array_equal(info["_episode"], ref_info["_episode"])
                np.testing.assert_array_equal(info["episode"]["r"], ref_info["episode"]["r"])
                np.testing.assert_array_equal(info["episode"]["l"], ref_info["episode"]["l"])
        if "episode" in info:
            episodes += int(info["_episode"].sum())
            assert (info["episode"]["l"][info["_episode"]] > 0).all()
    assert episodes == view.episode_count > 10
    view.close()
    ref.close()


def test_make_vec_registration_runs_multithreading():
    view = gymnasium.make_vec(
        "shoal/CartPole-v1",
        num_envs=8,
        vectorization_mode="vector_entry_point",
        seed=SEED,
        max_num_threads=2,
        max_episode_steps=25,
    )
    direct = native_cartpoles()
    with view, direct:
        assert isinstance(view, GymnasiumVectorEnv)
        assert type(view.vecenv).__name__ == "Multithreading" and view.vecenv.max_num_threads == 2
        assert view.spec.id == "shoal/CartPole-v1" and view.num_envs == 8
        np.testing.assert_array_equal(view.reset(seed=SEED)[0], direct.reset(SEED)[0])
        for actions in action_stream(8, 60):
            obs, rewards, terms, truncs, info = view.step(actions)
            d_obs, d_rewards, d_terms, d_truncs, _ = direct.step(actions)
            np.testing.assert_array_equal(obs, d_obs)
            np.testing.assert_array_equal(terms | truncs, d_terms | d_truncs)
            for row in np.flatnonzero(d_terms | d_truncs):
                np.testing.assert_array_equal(info["final_obs"][row], direct.final_observations[row])
    with pytest.raises(APIUsageError, match="unknown parameter"):
        gymnasium.make_vec("shoal/CartPole-v1", num_envs=2, vectorization_mode="vector_entry_point", bogus=1)


def test_view_copies_at_the_boundary():
    vec = native_cartpoles(limit=5)
    view = GymnasiumVectorEnv(vec)
    obs, _ = view.reset(seed=SEED)
    kept = obs.copy()
    obs[:] = 123.0  # mutating what the view returned does not reach the vector
    assert not np.shares_memory(obs, vec.buf.observations)
    np.testing.assert_array_equal(vec.buf.observations, kept)
    first = view.step(np.zeros(8, dtype=np.int64))
    snapshot = [np.array(a) for a in first[:4]]
    finals_seen = False
    for _ in range(6):
        out = view.step(np.ones(8, dtype=np.int64))
        if "final_obs" in out[4]:
            final = out[4]["final_obs"][np.flatnonzero(out[4]["_final_obs"])[0]]
            final_copy = final.copy()
            finals_seen = True
    view.step(np.ones(8, dtype=np.int64))
    for before, after in zip(snapshot, first[:4]):  # later steps did not change earlier results
        np.testing.assert_array_equal(before, after)
    assert finals_seen
    np.testing.assert_array_equal(final, final_copy)
    # copy=False hands out the vector's own buffers
    raw = GymnasiumVectorEnv(native_cartpoles(), copy=False)
    raw.reset(seed=1)
    obs, rewards, *_ = raw.step(np.zeros(8, dtype=np.int64))
    assert np.shares_memory(obs, raw.vecenv.buf.observations)
    assert np.shares_memory(rewards, raw.vecenv.buf.rewards)
    view.close()
    raw.close()


def test_view_rejects_partial_batches_and_bad_modes():
    vec = shoal.vector.make(
        gym_cartpole, backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True, batch_size=2, seed=1
    )
    with vec:
        with pytest.raises(APIUsageError, match="batch_size"):
            GymnasiumVectorEnv(vec)
    with native_cartpoles() as vec:
        with pytest.raises(APIUsageError, match="autoreset_mode"):
            GymnasiumVectorEnv(vec, autoreset_mode=AutoresetMode.DISABLED)
        with pytest.raises(APIUsageError, match="shoal vector env"):
            GymnasiumVectorEnv(object())


def test_a_view_that_refused_its_vector_closes_quietly():
    """Gymnasium < 1.3 (RLlib pins 1.2.2) closes every VectorEnv from __del__, also one whose
    __init__ raised; the vector it refused stays the caller's, open."""
    with native_cartpoles() as vec:
        with pytest.raises(APIUsageError):
            view = GymnasiumVectorEnv.__new__(GymnasiumVectorEnv)
            view.__init__(vec, autoreset_mode="disabled")
        view.close()
        vec.reset()


# -------------------------------------------------------------------------------------------------
# TorchRL
# -------------------------------------------------------------------------------------------------


class Spy:
    """A shoal vector that logs every reset/step with copies of the arrays shoal returned."""

    def __init__(self, vec):
        self.vec = vec
        self.log: list = []

    def __getattr__(self, name):
        return getattr(self.vec, name)

    def reset(self, seed=None):
        obs, infos = self.vec.reset(seed)
        self.log.append(("reset", obs.copy()))
        return obs, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.vec.step(actions)
        self.log.append(
            (
                "step",
                np.array(actions),
                obs.copy(),
                rewards.copy(),
                terms.copy(),
                truncs.copy(),
                self.vec.final_observations.copy(),
            )
        )
        return obs, rewards, terms, truncs, infos


def test_torchrl_gym_wrapper_rollout_matches_shoal():
    """TorchRL's GymWrapper over the view: its rollout holds exactly shoal's arrays, with the final
    observation as ``next`` observation where an episode ended and the reset one as the next root."""
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs import GymWrapper

    spy = Spy(native_cartpoles(limit=12))
    view = GymnasiumVectorEnv(spy)
    env = GymWrapper(view, categorical_action_encoding=True)
    assert env.batch_size == torch.Size([8])
    mark = len(spy.log)  # GymWrapper ran a probe rollout while it was built
    steps = 40
    td = env.rollout(steps, break_when_any_done=False)
    env.close()
    assert view.closed

    log = spy.log[mark:]
    assert log[0][0] == "reset"
    root = log[0][1]
    t = done_total = 0
    for i, entry in enumerate(log[1:], start=1):
        if entry[0] == "reset":
            continue
        _, actions, obs, rewards, terms, truncs, finals = entry
        done = terms | truncs
        done_total += int(done.sum())
        np.testing.assert_array_equal(td["observation"][:, t].numpy(), root)
        np.testing.assert_array_equal(td["action"][:, t].numpy(), actions)
        np.testing.assert_array_equal(td["next", "observation"][:, t].numpy(), np.where(done[:, None], finals, obs))
        np.testing.assert_array_equal(td["next", "reward"][:, t, 0].numpy(), rewards)
        np.testing.assert_array_equal(td["next", "terminated"][:, t, 0].numpy(), terms)
        np.testing.assert_array_equal(td["next", "truncated"][:, t, 0].numpy(), truncs)
        # the next root is the autoreset observation, or a full reset's when TorchRL asked for one
        root = log[i + 1][1] if i + 1 < len(log) and log[i + 1][0] == "reset" else obs
        t += 1
    assert t == steps and done_total > 8


def test_seedless_resets_start_new_reproducible_episodes():
    first = GymnasiumVectorEnv(native_cartpoles())
    second = GymnasiumVectorEnv(native_cartpoles())
    direct = native_cartpoles()
    with first, second, direct:
        a0, a1 = first.reset()[0], first.reset()[0]
        np.testing.assert_array_equal(a0, direct.reset()[0])  # the vector's own seed first
        assert not np.array_equal(a0, a1)  # then new episodes
        np.testing.assert_array_equal(second.reset()[0], a0)  # and the same sequence every run
        np.testing.assert_array_equal(second.reset()[0], a1)
        np.testing.assert_array_equal(first.reset(seed=3)[0], direct.reset(3)[0])


def test_torchrl_refuses_next_step_view():
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper

    view = GymnasiumVectorEnv(native_cartpoles(), autoreset_mode="next_step")
    with pytest.raises(RuntimeError, match="SAME_STEP"):
        GymWrapper(view)
    view.close()


# -------------------------------------------------------------------------------------------------
# stable-baselines3
# -------------------------------------------------------------------------------------------------


def _checking_callback(reference, gamma: float):
    """An SB3 callback that steps ``reference`` (an identical shoal vector) with PPO's actions and
    checks what SB3 saw and what its rollout buffer holds at every truncation."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    class Check(BaseCallback):
        truncations_checked = 0
        terminations_checked = 0

        def _on_training_start(self) -> None:
            reference.reset(SEED)
            self.pending = []

        def _on_rollout_start(self) -> None:
            self.step_in_rollout = 0
            self.pending = []

        def _on_step(self) -> bool:
            loc = self.locals
            obs, rewards, terms, truncs, _ = reference.step(loc["clipped_actions"])
            new_obs, dones, infos = loc["new_obs"], loc["dones"], loc["infos"]
            np.testing.assert_array_equal(new_obs, obs)
            np.testing.assert_array_equal(dones, terms | truncs)
            for row in np.flatnonzero(dones):
                info = infos[row]
                np.testing.assert_array_equal(info["terminal_observation"], reference.final_observations[row])
                assert info["TimeLimit.truncated"] == bool(truncs[row] and not terms[row])
                assert info["episode"]["l"] > 0 and info["episode"]["r"] == info["episode"]["l"]
                self.pending.append(
                    (
                        self.step_in_rollout,
                        row,
                        bool(truncs[row] and not terms[row]),
                        reference.final_observations[row].copy(),
                    )
                )
            self.step_in_rollout += 1
            return True

        def _on_rollout_end(self) -> None:
            buffer = self.model.rollout_buffer
            for step, row, truncated, final_obs in self.pending:
                if step + 1 < buffer.buffer_size:  # SB3 marks the next step as an episode start
                    assert buffer.episode_starts[step + 1, row]
                if truncated:  # SB3 bootstraps the time-limit step from the final observation
                    with torch.no_grad():
                        value = self.model.policy.predict_values(self.model.policy.obs_to_tensor(final_obs)[0])
                    expected = 1.0 + gamma * float(value[0, 0])
                    assert buffer.rewards[step, row] == pytest.approx(expected, rel=1e-5, abs=1e-5)
                    type(self).truncations_checked += 1
                else:
                    assert buffer.rewards[step, row] == 1.0
                    type(self).terminations_checked += 1

    return Check()


@pytest.mark.parametrize("backend", ["Multithreading", "Serial"])
def test_sb3_ppo_learns_and_bootstraps_from_final_observations(backend, time_limit):
    pytest.importorskip("stable_baselines3")
    import torch
    from stable_baselines3 import PPO

    from shoal.adapters.sb3 import SB3VecEnv

    time_limit(240)
    torch.set_num_threads(1)

    def make():
        if backend == "Multithreading":
            return native_cartpoles(num_envs=8, limit=20)
        return shoal.vector.make(gym_cartpole, env_args=(20,), backend="Serial", num_envs=8, seed=SEED)

    env = SB3VecEnv(make())  # PPO(seed=SEED) calls env.seed(SEED): the next reset uses shoal seed SEED
    reference = make()
    callback = _checking_callback(reference, gamma=0.99)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=128, n_epochs=2, gamma=0.99, device="cpu", seed=SEED)
    model.learn(2048, callback=callback)
    assert model.num_timesteps == 2048
    assert type(callback).truncations_checked > 5 and type(callback).terminations_checked > 5
    assert len(model.ep_info_buffer) > 20  # SB3's logger sees the episode stats
    env.close()
    reference.close()


def test_sb3_vecenv_api_and_copies():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecMonitor

    from shoal.adapters.sb3 import SB3VecEnv

    vec = native_cartpoles(limit=6)
    env = SB3VecEnv(vec)
    assert env.num_envs == 8 and env.observation_space == vec.single_observation_space
    assert env.seed(3) == [env_seed(3, i) for i in range(8)]
    obs = env.reset()
    np.testing.assert_array_equal(
        obs,
        shoal.vector.make(CartPole, backend="Serial", num_envs=8, seed=3, env_kwargs={"max_episode_steps": 6}).reset()[
            0
        ],
    )
    obs[:] = 7.0
    assert not np.shares_memory(obs, vec.buf.observations)
    first_obs, first_rewards, first_dones, _ = env.step(np.zeros(8, dtype=np.int64))
    kept = first_obs.copy()
    ended = 0
    for _ in range(6):
        _, _, dones, infos = env.step(np.ones(8, dtype=np.int64))
        ended += int(dones.sum())
        assert all("terminal_observation" in infos[i] for i in np.flatnonzero(dones))
        assert not any(infos[i] for i in np.flatnonzero(~dones))
    np.testing.assert_array_equal(first_obs, kept)
    assert ended >= 8
    assert env.get_attr("max_episode_steps") == [6] * 8 and env.get_attr("render_mode", [0]) == [None]
    env.set_attr("max_episode_steps_note", "x")
    assert vec.env.max_episode_steps_note == "x"
    assert env.env_method("describe", indices=[1, 2])[0]["name"] == "cartpole"
    assert env.env_is_wrapped(gymnasium.Wrapper) == [False] * 8
    monitored = VecMonitor(env)  # VecMonitor on top still works and agrees
    monitored.reset()
    episodes = []
    for _ in range(20):
        _, _, dones, infos = monitored.step(np.ones(8, dtype=np.int64))
        episodes += [infos[i]["episode"]["l"] for i in np.flatnonzero(dones)]
    assert episodes and all(1 <= length <= 6 for length in episodes)
    monitored.close()
    assert vec.closed


def test_sb3_vecenv_reaches_gymnasium_envs_under_serial():
    pytest.importorskip("stable_baselines3")
    from shoal.adapters.sb3 import SB3VecEnv

    env = SB3VecEnv(serial_cartpoles(creator=CountingDictEnv))
    assert isinstance(env.observation_space, spaces.Dict)
    obs = env.reset()
    assert obs["pos"].shape == (NUM_ENVS, 2) and obs["phase"].shape == (NUM_ENVS,)
    assert env.get_attr("limit") == [9] * NUM_ENVS
    env.set_attr("limit", 3, indices=[0])
    assert env.get_attr("limit") == [3, 9, 9, 9]
    assert env.env_is_wrapped(gymnasium.wrappers.TimeLimit) == [False] * NUM_ENVS
    for _ in range(4):
        _, _, dones, infos = env.step(np.ones(NUM_ENVS, dtype=np.int64))
        for row in np.flatnonzero(dones):
            assert set(infos[row]["terminal_observation"]) == {"pos", "phase"}
    env.close()
    mp = shoal.vector.make(gym_cartpole, backend="Multiprocessing", num_envs=2, num_workers=2, overwork=True, seed=1)
    env = SB3VecEnv(mp)
    with pytest.raises(APIUsageError, match="other processes"):
        env.set_attr("x", 1)
    assert env.get_attr("spec")[0].id == "CartPole-v1"
    env.close()


# -------------------------------------------------------------------------------------------------
# PufferLib's trainer contract
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["serial", "multiprocessing_async", "multithreading", "pufferenv", "grid"])
def test_pufferl_trainer_contract(case, time_limit):
    time_limit(120)
    if case == "serial":
        vec = serial_cartpoles()
    elif case == "multiprocessing_async":
        vec = shoal.vector.make(
            gym_cartpole, backend="Multiprocessing", num_envs=4, num_workers=2, overwork=True, batch_size=2, seed=SEED
        )
    elif case == "multithreading":
        vec = native_cartpoles()
    elif case == "pufferenv":
        vec = shoal.vector.make(CartPole, env_kwargs={"num_envs": 64, "max_episode_steps": 20}, seed=SEED)
    else:
        vec = shoal.vector.make(Grid, backend="Multithreading", num_envs=4, max_num_threads=2, seed=SEED)
    with vec:
        result = drive_like_pufferl(vec, steps=400, seed=SEED)
    assert result["agent_steps"] > 0 and result["episodes_done"] > 0
    stats = result["stats"]
    key = "episode_return"
    assert stats.get(key), f"no episode stats in {sorted(stats)}"
    assert all(np.isfinite(v) for v in stats[key])


def test_pufferl_contract_check_can_fail():
    class Shuffled:
        """Wraps a vector and reverses env_ids: not contiguous ascending, as pufferl needs."""

        def __init__(self, vec):
            self.vec = vec

        def __getattr__(self, name):
            return getattr(self.vec, name)

        def recv(self):
            *head, env_ids, masks = self.vec.recv()
            return (*head, env_ids[::-1], masks)

    with native_cartpoles() as vec:
        with pytest.raises(ContractViolation, match="contiguous"):
            drive_like_pufferl(Shuffled(vec), steps=3)
