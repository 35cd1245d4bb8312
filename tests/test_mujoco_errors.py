"""shoal.mujoco's bad input: each gets a specific error naming what is wrong, before anything runs."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shoal.mujoco
from shoal import APIUsageError, EnvError
from shoal.mujoco import build

# MuJoCo's deprecation warning about the bundled assets (tests/test_mujoco_warnings.py checks it)
pytestmark = pytest.mark.filterwarnings("ignore::shoal.mujoco.MujocoWarning")


@pytest.fixture(autouse=True)
def build_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHOAL_MUJOCO_BUILD_CACHE", str(tmp_path_factory.getbasetemp() / "mujoco_error_builds"))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))  # MuJoCo writes MUJOCO_LOG.TXT here


def test_an_unknown_task_lists_the_available_ones():
    with pytest.raises(APIUsageError, match="no task 'Cheetah-v5'; available: .*HalfCheetah-v5.*Hopper-v5"):
        shoal.mujoco.env_class("Cheetah-v5")


def test_missing_mujoco_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mujoco" else real(name, *a))
    with pytest.raises(shoal.mujoco.MujocoMissing, match=r'pip install "mujoco>=3\.1" .*pip install "\.\[mujoco\]"'):
        shoal.mujoco.env_class("HalfCheetah-v5")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"forward_weight": 1.0}, r"HalfCheetah-v5: unknown parameter\(s\) \['forward_weight'\]"),
        ({"frame_skip": "5"}, "HalfCheetah-v5: parameter frame_skip must be a number"),
        ({"frame_skip": 2.5}, "HalfCheetah-v5: parameter frame_skip must be an integer"),
        ({"frame_skip": 0}, r"HalfCheetah-v5: parameter frame_skip=0 \(env 0\) is outside \[1, 1e\+06\]"),
        ({"exclude_current_positions_from_observation": "yes"}, "must be a bool"),
        ({"render_mode": "human"}, "do not render"),
    ],
)
def test_a_bad_keyword_names_the_keyword_and_the_task(kwargs, message):
    with pytest.raises(APIUsageError, match=message):
        shoal.mujoco.env_class("HalfCheetah-v5", **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"reset_noise_scale": float("inf")},
            r"HalfCheetah-v5: parameter reset_noise_scale=inf \(env 0\) must be finite",
        ),
        ({"reset_noise_scale": float("nan")}, r"HalfCheetah-v5: parameter reset_noise_scale=nan \(env 0\) is outside"),
        ({"forward_reward_weight": -float("inf")}, "parameter forward_reward_weight=-inf .*must be finite"),
        ({"ctrl_cost_weight": 10**400}, "parameter ctrl_cost_weight=.* must be finite"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_the_keyword(kwargs, message):
    """Issue 45: reset_noise_scale=inf (its range is [0, inf]) gave NaN observations without an error."""
    with pytest.raises(APIUsageError, match=message):
        shoal.mujoco.env_class("HalfCheetah-v5", **kwargs)


def test_the_ends_of_a_range_may_be_infinite():
    cls = shoal.mujoco.env_class("Hopper-v5", healthy_z_range=(-float("inf"), float("inf")))
    with cls(num_envs=1) as env:
        observations, _ = env.reset(seed=0)
        assert np.isfinite(observations).all()


def test_a_bad_range_names_the_keyword():
    with pytest.raises(APIUsageError, match=r"Hopper-v5: parameter healthy_z_range must be a \(low, high\) pair"):
        shoal.mujoco.env_class("Hopper-v5", healthy_z_range=(0.7,))
    with pytest.raises(APIUsageError, match="Hopper-v5: parameter healthy_z_range=.* has low > high"):
        shoal.mujoco.env_class("Hopper-v5", healthy_z_range=(2.0, 1.0))


def test_an_unloadable_xml_file_gives_mujocos_message_and_the_path(tmp_path):
    missing = tmp_path / "missing.xml"
    with pytest.raises(APIUsageError, match=f"cannot load {missing}: .*Error opening file"):
        shoal.mujoco.env_class("HalfCheetah-v5", xml_file=str(missing))
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body><geom type='sphere'/></body></worldbody>")
    with pytest.raises(APIUsageError, match=f"cannot load {broken}: .*XML"):
        shoal.mujoco.env_class("HalfCheetah-v5", xml_file=str(broken))


def test_a_user_model_sets_the_spaces(tmp_path):
    """A user's xml_file decides the layout: actuators -> action dims and per-dimension bounds."""
    source = (build.assets_dir() / "half_cheetah.xml").read_text()
    narrowed = source.replace('joint="bthigh" name="bthigh"', 'joint="bthigh" name="bthigh" ctrlrange="-0.5 2"')
    assert narrowed != source
    path = tmp_path / "cheetah.xml"
    path.write_text(narrowed)
    cls = shoal.mujoco.env_class("HalfCheetah-v5", xml_file=str(path), exclude_current_positions_from_observation=False)
    with cls(num_envs=2) as env:
        env.set_box_actions("strict")
        assert env.single_observation_space.shape == (18,)
        np.testing.assert_array_equal(env.single_action_space.low, [-0.5, -1, -1, -1, -1, -1])
        np.testing.assert_array_equal(env.single_action_space.high, [2, 1, 1, 1, 1, 1])
        env.reset()
        actions = np.zeros((2, 6), np.float32)
        actions[:, 0] = 1.5  # valid in dimension 0 only: beyond the range every dimension shares
        env.step(actions)
        actions[:, 1] = 1.5
        with pytest.raises(APIUsageError, match=r"action 1.5 at row 0, dimension 1 is outside \[-1, 1\]"):
            env.step(actions)


def test_an_unstable_env_raises_env_error_naming_it_under_on_instability_raise():
    """Reset noise of 1e8 in env 1 alone: MuJoCo's bad-acceleration warning there is an EnvError for env 1
    (by default MuJoCo's reset lets it run on, as Gymnasium's: tests/test_mujoco_actions.py)."""
    cls = shoal.mujoco.env_class("HalfCheetah-v5", on_instability="raise")
    with cls(num_envs=3, env_params=[{}, {"reset_noise_scale": 1e8}, {}]) as env:
        env.reset()
        with pytest.raises(EnvError, match=r"^env 1 \(HalfCheetah-v5\): MuJoCo: the simulation is unstable"):
            for _ in range(5):
                env.step(np.zeros((3, 6), np.float32))
    assert not Path("MUJOCO_LOG.TXT").exists()  # MuJoCo's own warning went into the EnvError, not the cwd


MUJOCO_ERROR_SCRIPT = """
import re, sys
import numpy as np
import shoal.mujoco
from shoal import EnvError

source = shoal.mujoco.build.assets_dir() / "reacher.xml"
text = source.read_text()
head = re.search(r"<mujoco[^>]*>", text).group(0)
small = sys.argv[1] + "/reacher_small_arena.xml"
with open(small, "w") as f:  # an arena too small for mj_step: MuJoCo's mju_error (stack overflow)
    f.write(text.replace(head, head + '<size memory="1100"/>', 1))
cls = shoal.mujoco.env_class("Reacher-v5", xml_file=small)
with cls(num_envs=2) as env:
    env.reset()
    rng = np.random.default_rng(0)
    try:
        for _ in range(200):
            env.step(rng.uniform(-1, 1, (2, 2)).astype(np.float32))
    except EnvError as error:
        print("EnvError:", error)
"""


def test_a_mujoco_error_while_stepping_is_an_env_error_not_an_exit(tmp_path):
    """MuJoCo's default error handler prints and exits the process; in an env's step it is that env's EnvError."""
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", MUJOCO_ERROR_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"EnvError: env [01] \(Reacher-v5\): MuJoCo error: mj_stackAlloc: out of memory", result.stdout), (
        result.stdout + result.stderr
    )
