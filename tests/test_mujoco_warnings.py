"""MuJoCo's own warnings stay out of shoal's output and the user's working directory: a model's load-time
warning is one Python warning (shoal.mujoco.MujocoWarning); warnings of MuJoCo users other than shoal
(Gymnasium's own envs) still go where MuJoCo puts them."""

import subprocess
import sys
import textwrap

import pytest


@pytest.fixture(autouse=True)
def build_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHOAL_MUJOCO_BUILD_CACHE", str(tmp_path_factory.getbasetemp() / "mujoco_warning_builds"))


SCRIPT = textwrap.dedent(
    """
    import shutil, sys, warnings
    import shoal.mujoco
    from shoal.mujoco import build

    warnings.simplefilter("default")
    model = shutil.copy(build.assets_dir() / "half_cheetah.xml", "cheetah.xml")  # a deprecated attribute
    cls = shoal.mujoco.env_class("HalfCheetah-v5", xml_file="./cheetah.xml")
    for _ in range(2):
        with cls(num_envs=2) as env:
            env.reset()
    sys.stdout.flush()
    print("-- gymnasium --", flush=True)
    if sys.argv[1:] == ["gymnasium"]:
        import gymnasium
        gymnasium.make("HalfCheetah-v5").close()
    """
)


def run(cwd, *args):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_a_load_time_warning_is_one_python_warning_and_leaves_the_cwd_clean(tmp_path):
    stdout, stderr = run(tmp_path)
    assert "WARNING" not in stdout, stdout  # MuJoCo printed nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cheetah.xml"]  # no MUJOCO_LOG.TXT
    lines = [line for line in stderr.splitlines() if "MujocoWarning" in line]
    assert len(lines) == 1, stderr  # one model, loaded three times (class + two vectors): warned once
    assert "MuJoCo, loading " in lines[0] and "cheetah.xml: compiler attribute 'settotalmass' is deprecated" in lines[0]


def test_other_mujoco_users_keep_mujocos_own_output(tmp_path):
    """Gymnasium's env in the same process, after shoal routed MuJoCo's warnings: MuJoCo's default output."""
    stdout, _ = run(tmp_path, "gymnasium")
    shoal_part, gymnasium_part = stdout.split("-- gymnasium --")
    assert "WARNING" not in shoal_part
    assert gymnasium_part.count("WARNING: compiler attribute 'settotalmass' is deprecated") == 1
    assert (tmp_path / "MUJOCO_LOG.TXT").is_file()


def test_the_warning_can_be_made_an_error(tmp_path, monkeypatch):
    import shutil
    import warnings

    import shoal.mujoco
    from shoal.mujoco import build

    monkeypatch.chdir(tmp_path)
    shutil.copy(build.assets_dir() / "half_cheetah.xml", tmp_path / "strict.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("error", shoal.mujoco.MujocoWarning)
        with pytest.raises(shoal.mujoco.MujocoWarning, match="strict.xml: compiler attribute 'settotalmass'"):
            shoal.mujoco.env_class("HalfCheetah-v5", xml_file="./strict.xml")
