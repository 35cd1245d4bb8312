"""shoal.mujoco: Gymnasium's MuJoCo tasks as native envs, step for step equal to Gymnasium's own."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import shoal.mujoco
import shoal.vector

from rollouts import assert_same, rollout

# MuJoCo's deprecation warning about the bundled assets (tests/test_mujoco_warnings.py checks it)
pytestmark = pytest.mark.filterwarnings("ignore::shoal.mujoco.MujocoWarning")

# Per task: keyword arguments that make episodes end often within the parity run (without changing
# any formula), and how many steps that run takes.
PARITY = {
    "HalfCheetah-v5": ({}, 2000),
    "Hopper-v5": ({}, 2000),
    "Walker2d-v5": ({}, 2000),
    "Ant-v5": ({}, 2000),
    "Humanoid-v5": ({}, 2000),
    "Swimmer-v5": ({}, 2000),
    "InvertedPendulum-v5": ({}, 2000),
    "InvertedDoublePendulum-v5": ({}, 2000),
    "HumanoidStandup-v5": ({}, 2000),
}
PARITY_ENVS = 2
# Tasks whose reset draws fixed-range noise and random goal/object positions (no reset_noise_scale):
# Gymnasium's env is put in the state of shoal's reset (qpos, qvel) after each of its own resets.
COPIED_RESET = {"Reacher-v5": 2000, "Pusher-v5": 2000}
ALL_TASKS = [*PARITY, *COPIED_RESET]


@pytest.fixture(scope="session", autouse=True)
def build_cache(tmp_path_factory):
    """Task builds go to a session tmp dir; MuJoCo's MUJOCO_LOG.TXT (its warnings) to another."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_MUJOCO_BUILD_CACHE", str(tmp_path_factory.mktemp("mujoco_builds")))
        patch.chdir(tmp_path_factory.mktemp("mujoco_cwd"))
        yield


_classes = {}


def task_class(task_id, **kwargs):
    key = (task_id, tuple(sorted(kwargs.items())))
    if key not in _classes:
        _classes[key] = shoal.mujoco.env_class(task_id, **kwargs)
    return _classes[key]


def gymnasium_rollout(task_id, kwargs, actions):
    """Gymnasium's own env in SyncVectorEnv's SAME_STEP mode: observations, rewards, flags, final obs."""
    envs = SyncVectorEnv(
        [lambda: gymnasium.make(task_id, reset_noise_scale=0, **kwargs)] * actions.shape[1],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    obs, _ = envs.reset(seed=0)
    out = {"obs": [obs], "rewards": [], "terminals": [], "truncations": [], "final": []}
    for step_actions in actions:
        obs, rewards, terminals, truncations, infos = envs.step(step_actions)
        out["obs"].append(obs)
        out["rewards"].append(rewards)
        out["terminals"].append(terminals)
        out["truncations"].append(truncations)
        done = terminals | truncations
        out["final"].append(np.stack(infos["final_obs"][done]) if done.any() else np.zeros((0, obs.shape[1])))
    envs.close()
    return {k: (np.stack(v) if k != "final" else v) for k, v in out.items()}


@pytest.mark.parametrize("task_id", list(PARITY))
def test_task_equals_gymnasium_step_for_step(task_id):
    kwargs, steps = PARITY[task_id]
    cls = task_class(task_id, reset_noise_scale=0, **kwargs)
    env = cls(num_envs=PARITY_ENVS, seed=0)
    actions = (
        np.random.default_rng(3)
        .uniform(
            env.single_action_space.low,
            env.single_action_space.high,
            size=(steps, PARITY_ENVS, *env.single_action_space.shape),
        )
        .astype(np.float32)
    )
    reference = gymnasium_rollout(task_id, kwargs, actions)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, reference["obs"][0], err_msg=f"{task_id}: first observations differ")
    ends = 0
    for t in range(steps):
        obs, rewards, terminals, truncations, _ = env.step(actions[t])
        label = f"{task_id} step {t + 1}"
        np.testing.assert_array_equal(terminals, reference["terminals"][t], err_msg=f"{label}: terminals")
        np.testing.assert_array_equal(truncations, reference["truncations"][t], err_msg=f"{label}: truncations")
        done = terminals | truncations
        np.testing.assert_array_equal(env.final_observations[done], reference["final"][t], err_msg=f"{label}: final")
        np.testing.assert_array_equal(obs, reference["obs"][t + 1], err_msg=f"{label}: observations")
        np.testing.assert_array_equal(rewards, reference["rewards"][t].astype(np.float32), err_msg=f"{label}: rewards")
        ends += int(done.sum())
    env.close()
    assert ends >= PARITY_ENVS, f"{task_id}: the parity run must cover episode ends"


@pytest.mark.parametrize("task_id", list(COPIED_RESET))
def test_task_equals_gymnasium_from_shoals_reset_states(task_id):
    steps = COPIED_RESET[task_id]
    env = task_class(task_id)(num_envs=PARITY_ENVS, seed=0)
    space = env.single_action_space
    actions = np.random.default_rng(3).uniform(space.low, space.high, (steps, PARITY_ENVS, *space.shape))
    actions = actions.astype(np.float32)
    references = [gymnasium.make(task_id) for _ in range(PARITY_ENVS)]

    def reset_like_shoal(i, seed=None):
        """Gymnasium's reset (its own draws), then shoal's reset state: the observation Gymnasium makes of it."""
        references[i].reset(seed=seed)
        references[i].unwrapped.set_state(*env.physics_state(i))
        return references[i].unwrapped._get_obs()

    obs, _ = env.reset()
    for i in range(PARITY_ENVS):
        np.testing.assert_array_equal(obs[i], reset_like_shoal(i, seed=i), err_msg=f"{task_id}: first observations")
    ends = 0
    for t in range(steps):
        obs, rewards, terminals, truncations, _ = env.step(actions[t])
        for i, reference in enumerate(references):
            label = f"{task_id} step {t + 1} env {i}"
            ref_obs, ref_reward, ref_terminal, ref_truncation, _ = reference.step(actions[t, i])
            assert (terminals[i], truncations[i]) == (ref_terminal, ref_truncation), label
            assert rewards[i] == np.float32(ref_reward), f"{label}: reward {rewards[i]} != {ref_reward}"
            if ref_terminal or ref_truncation:
                np.testing.assert_array_equal(env.final_observations[i], ref_obs, err_msg=f"{label}: final")
                ref_obs = reset_like_shoal(i)
                ends += 1
            np.testing.assert_array_equal(obs[i], ref_obs, err_msg=f"{label}: observations")
    for reference in references:
        reference.close()
    env.close()
    assert ends >= PARITY_ENVS, f"{task_id}: the parity run must cover episode ends"


def reset_states(task_id, num_envs=256):
    with task_class(task_id)(num_envs=num_envs, seed=1) as env:
        env.reset()
        states = [env.physics_state(i) for i in range(num_envs)]
        with pytest.raises(shoal.APIUsageError, match="env index 256 is outside"):
            env.physics_state(num_envs)
    return np.stack([q for q, _ in states]), np.stack([v for _, v in states])


def test_reacher_resets_draw_gymnasiums_ranges():
    qpos, qvel = reset_states("Reacher-v5")
    goal = qpos[:, -2:]
    assert (np.linalg.norm(goal, axis=1) < 0.2).all() and np.abs(goal).max() > 0.15
    assert 0.09 < np.abs(qpos[:, :2]).max() <= 0.1
    assert (qvel[:, -2:] == 0).all() and 0.004 < np.abs(qvel[:, :2]).max() <= 0.005
    assert len(np.unique(goal[:, 0])) == len(goal)  # every env draws its own


def test_pusher_resets_draw_gymnasiums_ranges():
    qpos, qvel = reset_states("Pusher-v5")
    arm = gymnasium.make("Pusher-v5").unwrapped.init_qpos[:-4]
    np.testing.assert_array_equal(qpos[:, :-4], np.broadcast_to(arm, qpos[:, :-4].shape))
    cylinder = qpos[:, -4:-2]
    assert (np.linalg.norm(cylinder, axis=1) > 0.17).all() and (qpos[:, -2:] == 0).all()
    assert (cylinder[:, 0] <= 0).all() and cylinder[:, 0].min() < -0.28
    assert (np.abs(cylinder[:, 1]) <= 0.2).all() and np.abs(cylinder[:, 1]).max() > 0.18
    assert (qvel[:, -4:] == 0).all() and 0.004 < np.abs(qvel[:, :-4]).max() <= 0.005


@pytest.fixture(scope="module", params=ALL_TASKS)
def noisy_reference(request):
    """With reset noise and short episodes: Serial's rollout of 4 envs, the reference of every backend."""
    cls = task_class(request.param, max_episode_steps=60)
    with shoal.vector.make(cls, backend="Serial", num_envs=4, seed=5) as vecenv:
        return cls, rollout(vecenv, 200, seed=5)


@pytest.mark.parametrize("threads", [0, 1, 2, 3])
@pytest.mark.parametrize("schedule", ["static", "dynamic"])
def test_multithreading_equals_serial_with_noise(noisy_reference, threads, schedule):
    cls, reference = noisy_reference
    options = {"max_num_threads": threads, "schedule": schedule}
    with shoal.vector.make(cls, backend="Multithreading", num_envs=4, seed=5, **options) as vecenv:
        assert_same(reference, rollout(vecenv, 200, seed=5), f"{cls.__name__} T={threads} {schedule}")


def test_pufferenv_equals_serial_with_noise(noisy_reference):
    cls, reference = noisy_reference
    with shoal.vector.make(cls, backend="PufferEnv", env_kwargs={"num_envs": 4}, seed=5) as env:
        assert_same(reference, rollout(env, 200, seed=5), f"{cls.__name__} PufferEnv")


def test_reset_noise_differs_between_envs_and_seeds(noisy_reference):
    cls, _ = noisy_reference
    with cls(num_envs=2, seed=5) as env:
        first, _ = env.reset()
        first = first.copy()
        assert not np.array_equal(first[0], first[1])
        again, _ = env.reset(6)
        assert not np.array_equal(first, again)


def test_multiprocessing_equals_serial_with_noise(noisy_reference, time_limit):
    time_limit(120)
    cls, reference = noisy_reference
    with shoal.vector.make(cls, backend="Multiprocessing", num_envs=4, num_workers=2, seed=5) as vecenv:
        assert_same(reference, rollout(vecenv, 200, seed=5), f"{cls.__name__} Multiprocessing")


def test_shoal_check_passes(noisy_reference):
    from shoal.ocean.check import check

    cls, _ = noisy_reference
    result = check(cls, backend="Multithreading", num_envs=4, steps=300, seed=2, max_num_threads=2)
    assert result.passed, str(result)


def test_config_names_a_task_with_its_keywords(tmp_path):
    from shoal.config import load, resolve_env

    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = mujoco:HalfCheetah-v5\nctrl_cost_weight = 0.25\n[vec]\nbackend = Serial\n")
    cls = resolve_env(load(str(path), {}))
    assert issubclass(cls, shoal.mujoco.MujocoEnv) and cls.bound == {"ctrl_cost_weight": 0.25}
    params = {p["name"]: p["default"] for p in cls.spec.describe()["params"]}
    assert params["ctrl_cost_weight"] == 0.1  # Gymnasium's default, overridden by the config


def test_gymnasium_make_vec_runs_a_task():
    import shoal.adapters  # noqa: F401  registers shoal/<task ids>

    envs = gymnasium.make_vec("shoal/HalfCheetah-v5", num_envs=3, vectorization_mode="vector_entry_point")
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (3, 17) and obs.dtype == np.float64
    obs, rewards, terminations, truncations, _ = envs.step(np.zeros((3, 6), np.float32))
    assert rewards.shape == (3,) and np.isfinite(obs).all()
    envs.close()


def test_shoal_envs_lists_the_tasks(capsys):
    from shoal.cli import main

    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert len(shoal.mujoco.available()) >= 7 and all(task in out for task in shoal.mujoco.available())


def test_episode_stats_carry_the_reward_terms():
    cls = task_class("HalfCheetah-v5", max_episode_steps=10)
    with cls(num_envs=2, seed=1) as env:
        env.reset()
        infos = []
        for _ in range(10):
            *_, step_infos = env.step(np.full((2, 6), 0.5, np.float32))
            infos += step_infos
    (log,) = infos
    assert log["episode_length"] == 10 and log["episodes"] == 2
    # the terms add up to the return (float32 sums of float32 rewards: to rounding)
    assert log["reward_forward"] + log["reward_ctrl"] == pytest.approx(log["episode_return"], rel=1e-4)
    assert log["reward_ctrl"] == pytest.approx(-0.1 * 6 * 0.25 * 10, rel=1e-5)
