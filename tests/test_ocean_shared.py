"""PufferLib's MY_SHARED on shoal: state that binding.shared() builds once per vector and every env's
my_init receives (grid's mazes, tower_climb's puzzles), and the errors of a state that is wrong."""

import os
import shutil
import tarfile

import numpy as np
import pytest
from test_ocean import TEST_TREE, env_class, ocean_tree  # noqa: F401 (fixtures)

import shoal.ocean as ocean
from shoal.errors import APIUsageError, EnvError
from shoal.ocean import harness, source, unavailable
from shoal.ocean.check import check
from shoal.ocean.errors import OceanError
from shoal.vector import make

from rollouts import action_batches, assert_same, rollout


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    root = tmp_path / "tree"
    shutil.copytree(os.path.join(TEST_TREE, "sharedtable"), root / "sharedtable")
    return root


def _edit_class(tree, old, new):
    path = tree / "sharedtable" / "sharedtable.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _first_observations(cls, **kwargs):
    with make(cls, backend="Multithreading", num_envs=6, seed=1, **kwargs) as vecenv:
        observations, _ = vecenv.reset(seed=1)
        return observations.copy()


def test_shared_state_is_built_once_per_vector_and_read_by_every_env(tree):
    cls = ocean.env_class("sharedtable", tree)
    first = _first_observations(cls, max_num_threads=2)
    # observation 0 is the number of the table the env reads: one table for the six envs ...
    assert len(set(first[:, 0])) == 1, first
    # ... and one more for the next vector, not one per env
    second = _first_observations(cls, max_num_threads=3)
    assert set(second[:, 0]) == {first[0, 0] + 1}, second
    # every env reads the same values (envs start at a random place in one table)
    assert len(set(first[:, 1])) > 1


def test_shared_state_is_the_same_on_every_run_and_backend(tree):
    cls = ocean.env_class("sharedtable", tree)
    values = []
    for threads in (0, 2):
        with make(cls, backend="Multithreading", num_envs=4, seed=2, max_num_threads=threads) as vecenv:
            vecenv.reset(seed=2)
            steps = [vecenv.step(np.zeros(4, dtype=np.int32))[1].copy() for _ in range(40)]
        values.append(np.stack(steps))
    np.testing.assert_array_equal(values[0], values[1])
    assert np.any(values[0] != 0)


def test_shared_keywords_are_one_per_vector(tree):
    cls = ocean.env_class("sharedtable", tree)
    with pytest.raises(APIUsageError, match=r"shared:count must be the same for every env of a vector"):
        cls(num_envs=2, env_params=[{"count": 8}, {"count": 16}])


def test_my_shared_refusing_its_keywords_is_an_error_naming_the_env(tree):
    cls = ocean.env_class("sharedtable", tree, count=0)
    with pytest.raises(APIUsageError, match=r"sharedtable: my_shared .*ValueError: count must be at least 1"):
        cls(num_envs=2)


@pytest.mark.parametrize(
    "edit, message",
    [
        (("state=self.c_state", "state=3"), r"ValueError: state is not the dict binding.shared\(\) made"),
        (("state=self.c_state,", ""), r"TypeError: state handle must be an integer"),
    ],
    ids=["a number, not the shared state", "missing"],
)
def test_a_wrong_state_keyword_is_an_env_error(tree, edit, message):
    _edit_class(tree, *edit)
    env = ocean.env_class("sharedtable", tree)(num_envs=2)
    try:
        with pytest.raises(EnvError, match=message):
            env.reset(0)
    finally:
        env.close()


def test_a_state_keyword_of_a_type_the_binding_cannot_receive_names_the_keyword(tree):
    _edit_class(tree, "state=self.c_state", "state=[1, 2]")
    with pytest.raises(OceanError, match=r"keyword 'state' of binding.vec_init is \[1, 2\]"):
        ocean.env_class("sharedtable", tree)


@pytest.mark.parametrize("name", ["grid", "tower_climb"])
def test_check_passes_on_shared_state_envs(env_class, name):  # noqa: F811 (fixture)
    result = check(env_class(name), backend="Multithreading", num_envs=4, steps=300, max_num_threads=2)
    assert result.passed, str(result)


def test_gpudrive_is_unavailable_for_want_of_its_map_data(ocean_tree):  # noqa: F811 (fixture)
    # The sdist holds no map under resources/gpudrive/binaries/ (where binding.c reads them).
    with tarfile.open(source.fetch_sdist()) as tar:
        shipped = [m.name for m in tar.getmembers() if "/resources/gpudrive/" in m.name and m.name.endswith(".bin")]
    assert not any("/binaries/" in n for n in shipped), shipped
    with pytest.raises(
        OceanError,
        match=r"'gpudrive' of pufferlib 3.0.0 does not run on shoal: unavailable: gpudrive reads its maps from resources/gpudrive/binaries/map_000.bin",
    ) as raised:
        ocean.env_class("gpudrive")
    assert str(raised.value).endswith(unavailable.UNAVAILABLE["gpudrive"])


# ---- moba: shared state its steps write, a resource file -------------------------------------------

MOBA_STEPS = 3000  # its first rewards come after about 2,100 steps (the creeps meet)


def test_moba_backends_agree_bit_for_bit_on_one_thread(env_class, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # its game map is found in the tree, not the current directory
    cls = ocean.env_class("moba")
    with make([cls] * 2, backend="Serial", num_envs=2, seed=3) as vecenv:
        reference = rollout(vecenv, MOBA_STEPS, seed=3)
    assert np.any(reference["rewards"] != 0) and not np.array_equal(reference["obs"][0], reference["obs"][-1])
    for threads in (0, 1):
        for schedule in ("static", "dynamic"):
            with make(
                cls, backend="Multithreading", num_envs=2, seed=3, max_num_threads=threads, schedule=schedule
            ) as vecenv:
                assert_same(reference, rollout(vecenv, MOBA_STEPS, seed=3), f"moba T={threads} {schedule}")
    env = cls(num_envs=2, seed=3)
    try:
        assert_same(reference, rollout(env, MOBA_STEPS, seed=3), "moba PufferEnv")
    finally:
        env.close()
    result = check(cls, backend="Multithreading", num_envs=2, steps=300, max_num_threads=1)
    assert result.passed, str(result)


def test_moba_dynamics_equal_the_env_driven_directly(tmp_path):
    cls = ocean.env_class("moba")
    env = cls(num_envs=2, seed=5)
    try:
        actions = action_batches(env, MOBA_STEPS, 1)
        got = rollout(env, MOBA_STEPS, seed=5)
    finally:
        env.close()
    assert np.any(got["rewards"] != 0)
    direct = harness.trace(cls, 2, 5, actions, tmp_path)
    for key in ("obs", "rewards", "terminals"):
        np.testing.assert_array_equal(got[key], direct[key], err_msg=f"moba: {key} differ from the C loop")


@pytest.mark.parametrize("options", [{"max_num_threads": 2}, {"max_num_threads": 3, "schedule": "dynamic"}])
def test_moba_on_several_threads_is_refused_with_the_reason(options):
    cls = ocean.env_class("moba")
    with pytest.raises(OceanError, match=r"moba: moba's c_step writes the state my_shared builds .* race"):
        make(cls, backend="Multithreading", num_envs=4, **options)
    with pytest.raises(OceanError, match=r"num_buffers=2"):
        cls(num_envs=4, num_buffers=2)


def test_a_missing_resource_file_names_the_env_and_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    tree = tmp_path / "PufferLib"
    shutil.copytree(source.ocean_dir() / "moba", tree / "pufferlib" / "ocean" / "moba")
    with pytest.raises(OceanError, match=r"Ocean env 'moba' .* opens resources/moba/game_map.npy, which is not in"):
        ocean.env_class("moba", tree)
    assert not (tmp_path / "builds").exists() or not any((tmp_path / "builds").iterdir())
    # with the file in the tree's resources/ it builds, whatever the current directory
    shutil.copytree(source.ocean_dir().parent / "resources" / "moba", tree / "pufferlib" / "resources" / "moba")
    monkeypatch.chdir(tmp_path)
    env = ocean.env_class("moba", tree)(num_envs=1)
    try:
        env.reset(0)
        env.step(np.zeros((env.num_agents, 6), dtype=np.int32))
    finally:
        env.close()
