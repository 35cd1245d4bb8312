"""The documented path for a user's own MuJoCo task: examples/custom_mujoco, built outside the repository."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shoal.mujoco

# MuJoCo's deprecation warning about the bundled assets (tests/test_mujoco_warnings.py checks it)
pytestmark = pytest.mark.filterwarnings("ignore::shoal.mujoco.MujocoWarning")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_mujoco"


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """The example copied to a folder outside the repository, with its own build cache."""
    folder = tmp_path / "my_task"
    shutil.copytree(EXAMPLE, folder)
    monkeypatch.setenv("SHOAL_MUJOCO_BUILD_CACHE", str(tmp_path / "builds"))
    monkeypatch.chdir(tmp_path)
    return folder


def test_the_example_script_runs_outside_the_repository(outside):
    result = subprocess.run(
        [sys.executable, str(outside / "run_slider_reach.py")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    episodes = int(result.stdout.strip().rsplit(" ", 1)[1])
    assert "observation shape (64, 3)" in result.stdout and episodes > 0


def test_the_template_task_follows_its_definition(outside):
    cls = shoal.mujoco.source_class(outside / "slider_reach.c", "slider_reach", "SliderReach-v0", reset_noise_scale=0)
    with cls(num_envs=2, env_params=[{"target": 0.5}, {"target": 0.0, "tolerance": 1.0}]) as env:
        obs, _ = env.reset()
        np.testing.assert_array_equal(obs, [[0.0, 0.0, 0.5], [0.0, 0.0, 0.0]])  # qpos, qvel, target - x
        obs, rewards, terminals, truncations, infos = env.step(np.ones((2, 1), np.float32))
        assert obs[0, 0] > 0 and obs[0, 2] == 0.5 - obs[0, 0]  # pushed towards the target
        assert rewards[0] == np.float32(-abs(0.5 - obs[0, 0]) - np.float32(0.01))
        np.testing.assert_array_equal(terminals, [False, True])  # env 1 is within its tolerance
        assert env.describe()["max_episode_steps"] == 200


def test_a_missing_task_source_is_named(tmp_path):
    with pytest.raises(shoal.APIUsageError, match="nothing.c does not exist"):
        shoal.mujoco.source_class(tmp_path / "nothing.c", "nothing")
