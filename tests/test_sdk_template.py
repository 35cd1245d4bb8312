"""The documented path for third-party native envs: build examples/custom_env with CMake against the
installed shoal, load it, and use it with every backend."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shoal
from shoal.errors import APIUsageError, EnvError
from shoal.native import load_env
from shoal.vector import make

from rollouts import assert_same, rollout

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_env"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    build = tmp_path_factory.mktemp("random_walk_build")
    subprocess.run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), f"-Dshoal_DIR={shoal.get_cmake_dir()}"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    path = build / "random_walk.so"
    assert path.is_file()
    return path


@pytest.fixture(scope="module")
def RandomWalk(library):
    return load_env(library, "random_walk", "RandomWalk")


def test_template_env_describes_itself(RandomWalk):
    info = RandomWalk.describe()
    assert info["name"] == "random_walk"
    assert [p["name"] for p in info["params"]] == ["size", "fail_after"]
    assert info["stats"] == ["reached_goal"]
    assert RandomWalk(num_envs=3).single_observation_space.shape == (2,)


@pytest.mark.parametrize(
    "backend, options",
    [
        ("Multithreading", {"max_num_threads": 2}),
        ("Multithreading", {"max_num_threads": 3, "schedule": "dynamic"}),
        ("Multiprocessing", {"num_workers": 2, "start_method": "spawn"}),
    ],
)
def test_template_env_matches_serial_on_every_backend(RandomWalk, backend, options, time_limit):
    time_limit(120)
    with make(RandomWalk, backend="Serial", num_envs=8, env_kwargs={"size": 7}) as serial:
        reference = rollout(serial, 300, seed=4)
    assert (reference["terminals"] | reference["truncations"]).sum() > 8
    with make(RandomWalk, backend=backend, num_envs=8, env_kwargs={"size": 7}, **options) as vecenv:
        assert_same(reference, rollout(vecenv, 300, seed=4), f"template env under {backend}")


def test_rand_drop_in_is_per_env_and_thread_independent(RandomWalk):
    # The template's reset() uses rand(): starts must differ across envs but not across thread counts.
    starts = []
    for threads in (0, 2, 8):
        with make(
            RandomWalk, backend="Multithreading", num_envs=64, max_num_threads=threads, env_kwargs={"size": 101}
        ) as vecenv:
            obs, _ = vecenv.reset(9)
            starts.append(obs.copy())
    np.testing.assert_array_equal(starts[0], starts[1])
    np.testing.assert_array_equal(starts[0], starts[2])
    assert len(np.unique(starts[0][:, 0])) > 20


def test_env_error_surfaces_with_env_index(RandomWalk):
    params = [{"fail_after": 0}] * 5 + [{"fail_after": 3}] + [{"fail_after": 0}] * 2
    with make([RandomWalk] * 8, env_kwargs=params, backend="Multithreading", num_envs=8, max_num_threads=2) as vecenv:
        vecenv.reset()
        actions = np.ones(8, dtype=np.int32)
        vecenv.step(actions)
        vecenv.step(actions)
        with pytest.raises(EnvError, match=r"env 5 \(random_walk\): failed on purpose after 3 steps"):
            vecenv.step(actions)


def test_init_failure_is_an_env_error_naming_the_env(RandomWalk):
    with pytest.raises(EnvError, match=r"env 0 \(random_walk\): size must be odd, got 8"):
        RandomWalk(num_envs=2, size=8)


def test_missing_library_and_symbol_are_clear(library, tmp_path):
    with pytest.raises(APIUsageError, match="does not exist"):
        load_env(tmp_path / "nope.so", "random_walk")
    with pytest.raises(APIUsageError, match="shoal_env_spec_other"):
        load_env(library, "other")


def test_example_script_runs(library):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE / "run_random_walk.py"), str(library)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    episodes = int(result.stdout.strip().rsplit(" ", 1)[1])
    assert episodes > 256


def test_config_names_the_built_library_relative_to_its_folder(library, tmp_path):
    from shoal.config import load, make_from_config

    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "random_walk.so").write_bytes(library.read_bytes())
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = build/random_walk.so\nclass_name = RandomWalk\nsize = 5\n[vec]\nnum_envs = 4\n")
    with make_from_config(load(path)) as vecenv:
        assert type(vecenv).__name__ == "Multithreading" and vecenv.num_envs == 4
        assert type(vecenv.driver_env).__name__ == "RandomWalk"
        vecenv.reset(seed=0)
    path.write_text("[env]\nname = build/random_walk.so:random_walk\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    with make_from_config(load(path)) as vecenv:
        assert type(vecenv.driver_env).__name__ == "random_walk"
