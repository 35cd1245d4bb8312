"""A Gaussian policy's unclipped actions on Ocean envs with Box action spaces run as PufferLib runs them:
PufferLib's vector writes the actions into the env's buffer as they are, so shoal's trajectories on
every backend equal the env's own C code stepped by a plain C loop (PufferLib's vec_step, the harness
of tests/test_ocean.py) with the same actions, values far outside the bounds included.

school (Box(-1, 1, (3,)), 32 agents an env) moves its agents by the raw values; drone (Box(-1, 1, (4,)))
clamps them itself.
"""

import numpy as np
import pytest

import shoal.ocean as ocean
from shoal.errors import APIUsageError
from shoal.ocean import harness, source
from shoal.vector import make

NUM_ENVS = 4
STEPS = 300
SEED = 5
ENVS = {
    "school": {"num_agents": 32, "num_armies": 4, "size_x": 3.0, "size_z": 3.0},  # as tests/test_ocean.py
    "drone": {},
}
BACKENDS = [
    ("Serial", {}),
    ("Multiprocessing", {"num_workers": 2}),
    ("Multithreading", {"max_num_threads": 2}),
    ("Multithreading", {"max_num_threads": 0}),
    ("PufferEnv", {}),
]


@pytest.fixture(scope="module")
def ocean_tree(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path_factory.mktemp("ocean_builds")))
        yield source.ocean_dir()


_classes = {}


def env_class(name):
    if name not in _classes:
        _classes[name] = ocean.env_class(name, **ENVS[name])
    return _classes[name]


def gaussian_actions(cls, steps=STEPS, seed=0) -> np.ndarray:
    """N(0, 1) x 10, unclipped: most values are outside Box(-1, 1)."""
    probe = cls(num_envs=1)
    shape = (steps, NUM_ENVS * probe.num_agents, *probe.single_action_space.shape)
    probe.close()
    return (10 * np.random.default_rng(seed).normal(0, 1, shape)).astype(np.float32)


def run(vecenv, actions) -> dict:
    obs, _ = vecenv.reset(SEED)
    out = {"obs": [obs.copy()], "rewards": [], "terminals": []}
    for step_actions in actions:
        obs, rewards, terminals, _, _ = vecenv.step(step_actions)
        out["obs"].append(obs.copy())
        out["rewards"].append(rewards.copy())
        out["terminals"].append(terminals.copy())
    return {k: np.stack(v) for k, v in out.items()}


def make_backend(cls, backend, options, **extra):
    if backend == "PufferEnv":
        return make(cls, env_kwargs={"num_envs": NUM_ENVS}, seed=SEED, **extra)
    return make(cls, backend=backend, num_envs=NUM_ENVS, seed=SEED, **options, **extra)


def assert_same(got, direct, label):
    for key in ("obs", "rewards", "terminals"):
        np.testing.assert_array_equal(got[key], direct[key], err_msg=f"{label}: {key} differ from the C loop")


_traces = {}


@pytest.fixture
def pufferlib_trace(ocean_tree, tmp_path):
    """(actions, the C loop's trajectory with them) of an env, made once."""

    def get(name):
        if name not in _traces:
            actions = gaussian_actions(env_class(name))
            assert np.mean(np.abs(actions) > 1) > 0.9, "the stream must lie mostly outside the bounds"
            _traces[name] = actions, harness.trace(env_class(name), NUM_ENVS, SEED, actions, tmp_path)
        return _traces[name]

    return get


@pytest.mark.parametrize("name", sorted(ENVS))
@pytest.mark.parametrize("backend, options", BACKENDS, ids=[f"{b}{o}" for b, o in BACKENDS])
def test_gaussian_actions_run_as_pufferlibs(pufferlib_trace, name, backend, options):
    actions, direct = pufferlib_trace(name)
    with make_backend(env_class(name), backend, options) as vecenv:
        assert_same(run(vecenv, actions), direct, f"{name} {backend} {options}")


def run_clipped(cls, actions):
    with make(cls, backend="Multithreading", num_envs=NUM_ENVS, seed=SEED, box_actions="clip") as vecenv:
        return run(vecenv, actions)


def test_clip_mode_runs_as_pufferlib_with_clipped_actions(pufferlib_trace, tmp_path):
    actions, unclipped = pufferlib_trace("school")
    direct = harness.trace(env_class("school"), NUM_ENVS, SEED, np.clip(actions, -1, 1), tmp_path)
    clipped = run_clipped(env_class("school"), actions)
    assert_same(clipped, direct, "school, box_actions='clip'")
    assert not np.array_equal(clipped["obs"], unclipped["obs"]), "school's trajectory must depend on the raw values"


def test_strict_mode_names_the_value_and_row(pufferlib_trace):
    actions, _ = pufferlib_trace("drone")
    with make(env_class("drone"), backend="Multithreading", num_envs=NUM_ENVS, seed=SEED, box_actions="strict") as v:
        v.reset(SEED)
        row, dim = np.argwhere(np.abs(actions[0]) > 1)[0]
        with pytest.raises(APIUsageError, match=rf"action {actions[0, row, dim]!s} at row {row}, dimension {dim} "):
            v.send(actions[0])
