"""shoal.mujoco under a Gaussian policy's unclipped actions, and through unstable physics, as Gymnasium runs them.

Gymnasium hands a MuJoCo task its action as given: MuJoCo clamps the controls it applies to the
ctrlrange itself, and the control cost reads the raw action. shoal's tasks, on every backend (and through
``gymnasium.make_vec("shoal/...")``), give Gymnasium's observations, rewards and flags bit for bit with
such actions (reset noise 0). When the simulation becomes unstable, MuJoCo resets it and Gymnasium's env
runs on; so does shoal's, counting the resets in ``instability_resets``.
"""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import shoal.adapters  # registers shoal/<task ids> for gymnasium.make_vec
import shoal.mujoco
import shoal.vector
from shoal.errors import EnvError

pytestmark = pytest.mark.filterwarnings("ignore::shoal.mujoco.MujocoWarning")

TASKS = {"HalfCheetah-v5": 300, "Hopper-v5": 300, "Humanoid-v5": 300}
NUM_ENVS = 4
BACKENDS = [
    ("Serial", {}),
    ("Multiprocessing", {"num_workers": 2}),
    ("Multithreading", {"max_num_threads": 2}),
    ("Multithreading pipelined", {"max_num_threads": 2, "batch_size": NUM_ENVS // 2}),
    ("PufferEnv", {}),
    ("Ray", {"num_workers": 2}),
    ("gymnasium.make_vec", {}),
]


@pytest.fixture(scope="module", autouse=True)
def build_cache(tmp_path_factory):
    """Task builds go to a module tmp dir; MuJoCo's MUJOCO_LOG.TXT (Gymnasium's warnings) to another."""
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


def gaussian_actions(task_id, steps, seed=0):
    """A Gaussian policy's actions, unclipped and scaled x10: far outside the ctrlrange."""
    space = gymnasium.make(task_id).action_space
    return (10 * np.random.default_rng(seed).normal(0, 1, (steps, NUM_ENVS, *space.shape))).astype(np.float32)


_references = {}


def gymnasium_reference(task_id):
    """Gymnasium's own envs (SAME_STEP autoreset) on the Gaussian stream: actions, obs, rewards, flags."""
    if task_id in _references:
        return _references[task_id]
    actions = gaussian_actions(task_id, TASKS[task_id])
    envs = SyncVectorEnv(
        [lambda: gymnasium.make(task_id, reset_noise_scale=0)] * NUM_ENVS, autoreset_mode=AutoresetMode.SAME_STEP
    )
    obs, _ = envs.reset(seed=0)
    out = {"obs": [obs], "rewards": [], "terminals": [], "truncations": []}
    for step_actions in actions:
        obs, rewards, terminals, truncations, _ = envs.step(step_actions)
        out["obs"].append(obs)
        out["rewards"].append(rewards.astype(np.float32))
        out["terminals"].append(terminals)
        out["truncations"].append(truncations)
    envs.close()
    _references[task_id] = actions, {k: np.stack(v) for k, v in out.items()}
    return _references[task_id]


def sync_rollout(vecenv, actions):
    obs, _ = vecenv.reset(seed=0)
    out = {"obs": [np.array(obs)], "rewards": [], "terminals": [], "truncations": []}
    for step_actions in actions:
        obs, rewards, terminals, truncations, _ = vecenv.step(step_actions)
        for key, value in zip(("obs", "rewards", "terminals", "truncations"), (obs, rewards, terminals, truncations)):
            out[key].append(np.array(value))
    return {k: np.stack(v) for k, v in out.items()}


def pipelined_rollout(vecenv, actions):
    """send/recv over the vector's buffers in turn, each row stepped with its own column of ``actions``."""
    rows, steps = vecenv.agents_per_batch, len(actions)
    out = {
        "obs": np.zeros((steps + 1, NUM_ENVS, vecenv.single_observation_space.shape[0])),
        "rewards": np.zeros((steps, NUM_ENVS), np.float32),
        "terminals": np.zeros((steps, NUM_ENVS), bool),
        "truncations": np.zeros((steps, NUM_ENVS), bool),
    }
    taken = {}  # buffer start row -> steps recorded
    vecenv.async_reset(0)
    while True:
        obs, rewards, terminals, truncations, _, ids, _ = vecenv.recv()
        first = int(ids[0])
        block = slice(first, first + rows)
        t = taken.get(first, 0)
        if t <= steps:  # a buffer past its last step is stepped on (zeros) until the others are done
            out["obs"][t, block] = obs
            if t > 0:
                out["rewards"][t - 1, block] = rewards
                out["terminals"][t - 1, block] = terminals
                out["truncations"][t - 1, block] = truncations
            taken[first] = t + 1
        if all(taken.get(start, 0) > steps for start in range(0, NUM_ENVS, rows)):
            return out
        vecenv.send(actions[t, block] if t < steps else np.zeros_like(actions[0, block]))


def make_backend(task_id, backend, options):
    cls = task_class(task_id, reset_noise_scale=0)
    if backend == "gymnasium.make_vec":
        return gymnasium.make_vec(
            f"shoal/{task_id}", num_envs=NUM_ENVS, vectorization_mode="vector_entry_point", reset_noise_scale=0
        )
    if backend == "PufferEnv":
        return shoal.vector.make(cls, env_kwargs={"num_envs": NUM_ENVS})
    if backend == "Ray":
        pytest.importorskip("ray", reason="Ray is in the [full] extra")
    name = backend.split()[0]
    return shoal.vector.make(cls, backend=name, num_envs=NUM_ENVS, **options)


@pytest.mark.parametrize("task_id", list(TASKS))
@pytest.mark.parametrize("backend, options", BACKENDS, ids=[b for b, _ in BACKENDS])
def test_gaussian_actions_give_gymnasiums_trajectories(task_id, backend, options):
    actions, reference = gymnasium_reference(task_id)
    assert np.mean(np.abs(actions) > gymnasium.make(task_id).action_space.high) > 0.5, "mostly out of bounds"
    vecenv = make_backend(task_id, backend, options)
    try:
        pipelined = "batch_size" in options
        got = pipelined_rollout(vecenv, actions) if pipelined else sync_rollout(vecenv, actions)
    finally:
        vecenv.close()
    label = f"{task_id} {backend}"
    for key in ("terminals", "truncations", "obs", "rewards"):
        np.testing.assert_array_equal(got[key], reference[key], err_msg=f"{label}: {key} differ from Gymnasium's")
    if task_id != "HalfCheetah-v5":
        assert reference["terminals"].any(), f"{task_id}: the run must cover episode ends"


def test_clip_mode_equals_gymnasium_with_clipped_actions():
    """box_actions="clip": Gymnasium's env with np.clip'ed actions (the control cost then reads the clipped ones)."""
    task_id = "Humanoid-v5"
    actions = gaussian_actions(task_id, 100)
    space = gymnasium.make(task_id).action_space
    references = [gymnasium.make(task_id, reset_noise_scale=0) for _ in range(NUM_ENVS)]
    with shoal.vector.make(
        task_class(task_id, reset_noise_scale=0), backend="Multithreading", num_envs=NUM_ENVS, box_actions="clip"
    ) as vecenv:
        vecenv.reset(0)
        for i, reference in enumerate(references):
            reference.reset(seed=i)
        for t, step_actions in enumerate(actions):
            obs, rewards, terminals, truncations, _ = vecenv.step(step_actions)
            for i, reference in enumerate(references):
                ref_obs, ref_reward, ref_terminal, _, _ = reference.step(
                    np.clip(step_actions[i], space.low, space.high)
                )
                assert rewards[i] == np.float32(ref_reward), f"step {t} env {i}"
                if ref_terminal:
                    assert terminals[i]
                    ref_obs, _ = reference.reset()
                np.testing.assert_array_equal(obs[i], ref_obs, err_msg=f"step {t} env {i}")


# --- unstable physics ---------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_an_unstable_simulation_runs_50_steps_like_gymnasium_and_reports_the_resets(task_id):
    """reset_noise_scale=1e6: MuJoCo's bad-acceleration reset on the first step. Gymnasium's env, put in
    the state of shoal's reset, runs 50 steps with it; shoal's gives the same observations, rewards and
    flags, and the episode infos count the resets."""
    steps = 50
    cls = task_class(task_id, reset_noise_scale=1e6, max_episode_steps=steps)
    env = cls(num_envs=2, seed=0)
    references = [gymnasium.make(task_id, reset_noise_scale=1e6, max_episode_steps=steps) for _ in range(2)]
    actions = gaussian_actions(task_id, steps)[:, :2] / 10
    try:
        obs, _ = env.reset()
        for i, reference in enumerate(references):
            reference.reset(seed=i)
            reference.unwrapped.set_state(*env.physics_state(i))
            np.testing.assert_array_equal(obs[i], reference.unwrapped._get_obs())
        infos = []
        for t in range(steps):
            obs, rewards, terminals, truncations, step_infos = env.step(actions[t])
            infos += step_infos
            for i, reference in enumerate(references):
                ref_obs, ref_reward, ref_terminal, ref_truncation, _ = reference.step(actions[t, i])
                label = f"{task_id} step {t + 1} env {i}"
                assert (terminals[i], truncations[i]) == (ref_terminal, ref_truncation), label
                assert rewards[i] == np.float32(ref_reward), f"{label}: {rewards[i]} != {ref_reward}"
                if ref_terminal or ref_truncation:
                    np.testing.assert_array_equal(env.final_observations[i], ref_obs, err_msg=label)
                    reference.reset()
                    reference.unwrapped.set_state(*env.physics_state(i))
                    ref_obs = reference.unwrapped._get_obs()
                np.testing.assert_array_equal(obs[i], ref_obs, err_msg=label)
            assert np.isfinite(obs).all()
    finally:
        env.close()
        for reference in references:
            reference.close()
    assert infos, f"{task_id}: episodes ended within the 50 steps (time limit or termination), so infos report"
    assert all("instability_resets" in log for log in infos)
    assert sum(log["instability_resets"] * log["episodes"] for log in infos) >= 2, infos


def test_on_instability_raise_is_an_env_error_naming_the_env():
    cls = task_class("HalfCheetah-v5", on_instability="raise")
    with cls(num_envs=3, env_params=[{}, {"reset_noise_scale": 1e6}, {}]) as env:
        env.reset()
        with pytest.raises(EnvError, match=r"^env 1 \(HalfCheetah-v5\): MuJoCo: the simulation is unstable"):
            env.step(np.zeros((3, 6), np.float32))


def test_stable_runs_count_no_resets():
    cls = task_class("HalfCheetah-v5", max_episode_steps=5)
    with cls(num_envs=2, seed=1) as env:
        env.reset()
        infos = []
        for _ in range(5):
            infos += env.step(np.full((2, 6), 3.0, np.float32))[-1]
    (log,) = infos
    assert log["instability_resets"] == 0 and log["episodes"] == 2


@pytest.mark.filterwarnings("ignore:.*The reward is a NaN value")
def test_nan_actions_run_on_as_in_gymnasium():
    """A NaN control: MuJoCo warns and applies zero controls; Gymnasium's env runs on with a NaN reward."""
    task_id = "HalfCheetah-v5"
    env = task_class(task_id, reset_noise_scale=0)(num_envs=1)
    reference = gymnasium.make(task_id, reset_noise_scale=0)
    try:
        env.reset()
        reference.reset(seed=0)
        actions = np.zeros((1, 6), np.float32)
        actions[0, 2] = np.nan
        obs, rewards, *_ = env.step(actions)
        ref_obs, ref_reward, *_ = reference.step(actions[0])
        np.testing.assert_array_equal(obs[0], ref_obs)
        assert np.isnan(rewards[0]) and np.isnan(ref_reward)
        obs, rewards, *_ = env.step(np.ones((1, 6), np.float32))
        ref_obs, ref_reward, *_ = reference.step(np.ones(6, np.float32))
        np.testing.assert_array_equal(obs[0], ref_obs)
        assert rewards[0] == np.float32(ref_reward)
    finally:
        env.close()
        reference.close()


def test_frame_skip_true_is_one_as_in_gymnasium():
    actions = gaussian_actions("HalfCheetah-v5", 5)[:, :1]
    env = task_class("HalfCheetah-v5", reset_noise_scale=0, frame_skip=True)(num_envs=1)
    reference = gymnasium.make("HalfCheetah-v5", reset_noise_scale=0, frame_skip=True)
    try:
        env.reset()
        reference.reset(seed=0)
        for step_actions in actions:
            obs, rewards, *_ = env.step(step_actions)
            ref_obs, ref_reward, *_ = reference.step(step_actions[0])
            np.testing.assert_array_equal(obs[0], ref_obs)
            assert rewards[0] == np.float32(ref_reward)
    finally:
        env.close()
        reference.close()


def test_max_episode_steps_0_is_refused_with_gymnasiums_reason():
    with pytest.raises(ValueError, match="positive"):
        gymnasium.make("HalfCheetah-v5", max_episode_steps=0)
    with pytest.raises(shoal.APIUsageError, match=r"max_episode_steps must be positive, got 0 \(Gymnasium's TimeLimit"):
        shoal.mujoco.env_class("HalfCheetah-v5", max_episode_steps=0)
