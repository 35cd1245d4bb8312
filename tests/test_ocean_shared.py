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
from shoal.ocean import source, unavailable
from shoal.ocean.check import check
from shoal.ocean.errors import OceanError
from shoal.vector import make


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


def test_a_state_keyword_that_is_a_number_not_the_shared_state_is_an_env_error(tree):
    _edit_class(tree, "state=self.c_state", "state=3")
    env = ocean.env_class("sharedtable", tree)(num_envs=2)
    try:
        with pytest.raises(EnvError, match=r"ValueError: state is not the dict binding.shared\(\) made"):
            env.reset(0)
    finally:
        env.close()


def test_a_missing_state_keyword_is_an_env_error(tree):
    _edit_class(tree, "state=self.c_state,", "")
    env = ocean.env_class("sharedtable", tree)(num_envs=2)
    try:
        with pytest.raises(EnvError, match=r"TypeError: state handle must be an integer"):
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
        match=r"'gpudrive' is unavailable: gpudrive reads its maps from resources/gpudrive/binaries/map_000.bin",
    ) as raised:
        ocean.env_class("gpudrive")
    assert str(raised.value).endswith(unavailable.UNAVAILABLE["gpudrive"])
